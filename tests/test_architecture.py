"""The structure the docs promise (docs/architecture.md): layers that point one way, no import cycles.

Imports are read from the source (module level and inside functions alike), so a lazy import
counts as much as an eager one.
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
ALIASES = {"hetbench.train.moved"}


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Project modules ``name`` imports, resolved to the longest existing module name."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
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


#: the longest a module may be (docs/architecture.md: small modules with one job)
MAX_MODULE_LINES = 450


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_longer_than_the_limit(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{MODULES[name].relative_to(ROOT)} has {lines} lines (at most {MAX_MODULE_LINES}): split it by job"
