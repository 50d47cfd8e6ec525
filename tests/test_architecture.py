"""The structure the docs promise (docs/architecture.md): layers that point one way, floors inside the core
that point one way, no import cycles.

Imports are read from the source (module level and inside functions alike), so a lazy import
counts as much as an eager one; only an import under ``if TYPE_CHECKING:`` (annotations, never run) does not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> the package it is installed as (pyproject's package-dir)
FOLDERS = {"hetbench": "hetbench", "isp": "hetbench.isp", "builders": "hetbench.builders", "cli": "hetbench.cli"}
#: what the ISP pipeline may use of hetbench besides itself: infrastructure with no dependencies
ISP_ALLOWED = {"hetbench.cores", "hetbench.errors", "hetbench.progress", "hetbench.registry", "hetbench.seeding",
               "hetbench.order_stats",  # infrastructure: exact percentiles, pure numpy
               "hetbench.png",  # infrastructure: the PNG encoders, numpy and the image libraries only
               "hetbench.process_pool"}  # infrastructure: the pools' start method
CONSUMERS = ("hetbench.train", "hetbench.leaderboard", "hetbench.flower", "hetbench.sweep", "hetbench.reproduce")
#: deprecated aliases of moved modules (CHANGELOG.md): like the facade, a name kept for old imports, outside the layers
ALIASES = {"hetbench.train.moved", "hetbench.report.moved"}


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): imports for annotations only, never run."""
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _run_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (its ``else`` branch runs)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: Path) -> set[str]:
    """Project modules ``name`` imports when it runs (module level and inside functions; not under
    ``if TYPE_CHECKING:``), resolved to the longest existing module name."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in _run_nodes(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            # ``from X import y``: the module X.y where y is one, else X itself
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> str:
    if name in ALIASES:
        return "facade"
    for prefix in ("hetbench.cli", "hetbench.builders", "hetbench.isp", *CONSUMERS):
        if name == prefix or name.startswith(prefix + "."):
            return prefix
    return "facade" if name == "hetbench" else "core"


def test_every_package_is_shipped():
    """A package missing from pyproject's list works in the editable checkout and is absent from a wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert packages - listed == set(), "pyproject.toml's [tool.setuptools] packages lacks these"


def test_the_graph_sees_every_layer():
    assert {_layer(n) for n in GRAPH} == {"hetbench.cli", "hetbench.builders", "hetbench.isp", *CONSUMERS, "core",
                                          "facade"}
    assert "hetbench.splits" in GRAPH["hetbench.pipeline"]


def test_no_import_cycles():
    """Tarjan's strongly connected components over the module graph: every one has one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if _layer(n) == "hetbench.isp"))
def test_isp_depends_only_on_itself_and_infrastructure(name):
    outside = {m for m in GRAPH[name] if _layer(m) != "hetbench.isp" and m not in ISP_ALLOWED}
    assert not outside, f"{name} imports {sorted(outside)}"


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if _layer(n) == "core"))
def test_core_never_imports_the_layers_above_it(name):
    above = {m for m in GRAPH[name] if _layer(m) in ("hetbench.cli", "hetbench.builders", "hetbench.isp", *CONSUMERS)}
    assert not above, f"{name} imports {sorted(above)}"


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if _layer(n) in ("hetbench.builders", *CONSUMERS)))
def test_builders_and_consumers_never_import_the_cli(name):
    cli = {m for m in GRAPH[name] if _layer(m) == "hetbench.cli"}
    assert not cli, f"{name} imports {sorted(cli)}"


#: the layers from the bottom up (docs/architecture.md). A layer imports only layers below it: the trainer
#: knows no engine but its own, the Flower engine builds on the trainer, and the sweep, which runs either
#: engine, sits above both. Layers of one rank (the trainer and the builders; the leaderboard and Flower)
#: never import each other. The facade (``hetbench/__init__``) is left out: it is the public face that
#: loads the layers on demand.
LAYER_RANK = {"core": 0, "hetbench.isp": 1, "hetbench.builders": 2, "hetbench.train": 2, "hetbench.leaderboard": 3,
              "hetbench.flower": 3, "hetbench.sweep": 4, "hetbench.reproduce": 5, "hetbench.cli": 6}


def test_every_layer_has_a_rank():
    assert set(LAYER_RANK) == {_layer(n) for n in GRAPH} - {"facade"}


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if _layer(n) != "facade"))
def test_no_import_runs_to_a_layer_at_or_above_its_own(name):
    """Folder-level back-edges (not only cycles): ``hetbench.train`` importing ``hetbench.flower`` fails."""
    own = _layer(name)
    wrong = sorted(m for m in GRAPH[name] if _layer(m) not in ("facade", own) and LAYER_RANK[_layer(m)] >= LAYER_RANK[own])
    assert not wrong, f"{name} ({own}) imports {wrong}, which are not below it"


#: the floors inside the core from the bottom up (docs/architecture.md): a module imports only modules on its
#: own floor or below. A top-level module not named here is infrastructure (errors, hashing, seeding,
#: progress, ...: no knowledge of the folder format).
CORE_FLOORS = ("infrastructure", "contract", "out folders", "data", "splits", "report", "publish", "pipeline", "tools")
#: module or package -> its floor (a package's modules share it)
FLOOR_OF = {
    "hetbench.contract": "contract",  # the read side of the published-folder format
    "hetbench.outputs": "out folders", "hetbench.atomic": "out folders",  # --out: whose folder it is, atomic writes
    "hetbench.table": "data", "hetbench.partition": "data", "hetbench.holdout": "data",
    "hetbench.split_columns": "data", "hetbench.clients": "data", "hetbench.catalog": "data",
    "hetbench.export": "data", "hetbench.partitioners": "data", "hetbench.embed": "data", "hetbench.sources": "data",
    "hetbench.splits": "splits",
    "hetbench.report": "report",
    "hetbench.publish": "publish",
    "hetbench.pipeline": "pipeline",
    "hetbench.tools": "tools",  # the commands that use a built folder: verify, report refresh, clusterings
}


def _floor(name: str) -> str:
    for prefix, floor in FLOOR_OF.items():
        if name == prefix or name.startswith(prefix + "."):
            return floor
    return "infrastructure"


def test_every_named_floor_exists():
    assert set(FLOOR_OF.values()) | {"infrastructure"} == set(CORE_FLOORS)
    assert all(any(n == p or n.startswith(p + ".") for n in GRAPH) for p in FLOOR_OF), "a floor names a module that is gone"


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if _layer(n) == "core"))
def test_no_import_runs_up_a_floor_of_the_core(name):
    """``hetbench.report`` importing ``hetbench.publish``, or the contract importing a partitioner, fails."""
    own = CORE_FLOORS.index(_floor(name))
    up = sorted(f"{m} ({_floor(m)})" for m in GRAPH[name] if _layer(m) == "core" and CORE_FLOORS.index(_floor(m)) > own)
    assert not up, f"{name} ({_floor(name)}) imports {up}, which are on a floor above it"


#: the longest a module may be (docs/architecture.md: small modules with one job)
MAX_MODULE_LINES = 400


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_longer_than_the_limit(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{MODULES[name].relative_to(ROOT)} has {lines} lines (at most {MAX_MODULE_LINES}): split it by job"
