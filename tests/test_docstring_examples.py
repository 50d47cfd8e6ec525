"""Every Examples section in the library's docstrings runs and prints what it shows (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest



def _modules() -> list[str]:
    """Every module of the installed package; the layers mapped from other folders
    (``hetbench.isp``, ``hetbench.builders``, ``hetbench.cli``) are walked from their own paths."""
    names = {"hetbench"}
    for pkg in ("hetbench", "hetbench.isp", "hetbench.builders", "hetbench.cli"):
        module = importlib.import_module(pkg)
        names.add(pkg)
        for info in pkgutil.walk_packages(module.__path__, pkg + "."):
            names.add(info.name)
    return sorted(n for n in names if not n.endswith("__main__"))


MODULES = _modules()


def test_the_walk_finds_every_layer():
    for layer in ("hetbench.isp.pipeline", "hetbench.builders.iso_isp", "hetbench.cli.main", "hetbench.partitioners.dirichlet"):
        assert layer in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (run: python -m doctest -v)"
