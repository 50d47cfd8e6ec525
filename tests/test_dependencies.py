"""Installing an extra never downgrades the base install, and ``requires-python`` admits what the extras need.

Read offline: hetbench's own ranges from ``pyproject.toml``, the extras' requirements from the metadata of
the distributions ``make test`` installed (every extra is installed there), followed down the whole tree.
A requirement anywhere under an extra whose upper bound on a base dependency lies below the base's upper
bound would make ``pip install 'hetbench[extra]'`` move that dependency back (flwr-datasets' ``datasets<5``
once did so under ``hetbench[flower]``). The one extra allowed to narrow, ``flower-datasets``, must say so
in pyproject.toml and the README."""

from __future__ import annotations

import importlib.metadata as md
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NARROWING_EXTRA = "flower-datasets"  # documented: flwr-datasets 0.6 needs datasets < 5


def _name(text: str) -> str:
    return text.lower().replace("_", "-").replace(".", "-")


BASE = {_name(Requirement(r).name): Requirement(r).specifier for r in PROJECT["dependencies"]}


def _upper(spec: SpecifierSet) -> Version | None:
    bounds = [Version(s.version) for s in spec if s.operator in ("<", "<=")]
    bounds += [Version(s.version.rstrip(".*")) for s in spec if s.operator == "==" and "*" not in s.version]
    return min(bounds) if bounds else None


def _tree(root: str) -> list[tuple[str, str, SpecifierSet]]:
    """(who asks, what, the range) for every requirement on a base dependency under ``root``."""
    out, seen, todo = [], {_name(root)}, [root]
    while todo:
        who = todo.pop()
        try:
            reqs = md.requires(who) or []
        except md.PackageNotFoundError:
            continue
        for text in reqs:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            name = _name(req.name)
            if name in BASE and str(req.specifier):
                out.append((who, name, req.specifier))
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return out


def _extra_roots(extra: str) -> list[str]:
    roots = []
    for text in PROJECT["optional-dependencies"][extra]:
        req = Requirement(text)
        if _name(req.name) == "hetbench":
            roots += [r for e in req.extras for r in _extra_roots(e)]
        else:
            roots.append(req.name)
    return roots


def narrowed(extra: str) -> list[str]:
    """What the extra's tree bounds below the base's upper bound, as 'who: what range'."""
    found = []
    for root in _extra_roots(extra):
        pytest.importorskip(_name(root).replace("-", "_").split("[")[0].replace("flwr-datasets", "flwr_datasets"))
        for who, name, spec in _tree(root):
            theirs, ours = _upper(spec), _upper(BASE[name])
            if theirs is not None and (ours is None or theirs < ours):
                found.append(f"{who}: {name}{spec} (hetbench: {name}{BASE[name]})")
    return sorted(set(found))


@pytest.mark.parametrize("extra", sorted(set(PROJECT["optional-dependencies"]) - {"dev", "bench", "maps", "onnx",
                                                                                  "torch", NARROWING_EXTRA}))
def test_an_engine_extra_downgrades_no_base_dependency(extra):
    assert narrowed(extra) == []


def test_the_one_narrowing_extra_is_the_documented_one():
    found = narrowed(NARROWING_EXTRA)
    assert any(f.startswith("flwr-datasets: datasets") for f in found), found
    pyproject = (ROOT / "pyproject.toml").read_text()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "flwr-datasets 0.6 needs datasets < 5" in pyproject and "datasets < 5" in readme


def test_requires_python_admits_no_python_an_extra_cannot_run_on():
    ours = SpecifierSet(PROJECT["requires-python"].split("#")[0])
    lowest = min(Version(f"3.{m}") for m in range(8, 20) if Version(f"3.{m}") in ours)
    for extra in PROJECT["optional-dependencies"]:
        for root in _extra_roots(extra):
            try:
                needs = md.metadata(Requirement(root).name).get("Requires-Python")
            except md.PackageNotFoundError:
                continue
            assert not needs or lowest in SpecifierSet(needs), f"{extra}: {root} needs Python {needs}, hetbench says {ours}"
