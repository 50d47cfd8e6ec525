"""Recipes for canonical benchmarks (``manifests/recipes/<name>.yaml``).

A recipe names its builder, the public input files it expects, the column names and parameters of
the published construction, and the published statistics that the report sets beside ours. Most
have two modes: ``import`` (read the published split files as they are) and ``rebuild`` (run the
construction on the raw public metadata).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from hetbench.errors import HetbenchError


def recipe_names() -> list[str]:
    folder = resources.files("hetbench.manifests").joinpath("recipes")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=32)
def load_recipe(name: str) -> dict[str, Any]:
    names = recipe_names()
    if name not in names:
        raise HetbenchError(f"unknown recipe '{name}'; recipes: {', '.join(names)}")
    text = resources.files("hetbench.manifests").joinpath("recipes").joinpath(f"{name}.yaml").read_text()
    return yaml.safe_load(text)


def recipe_mode(name: str, builder: str, mode: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the recipe, the settings of ``mode``; default: import where the recipe has it, else rebuild)."""
    recipe = load_recipe(name)
    if recipe["builder"] != builder:
        raise HetbenchError(f"recipe '{name}' is for 'hetbench build {recipe['builder']}', not '{builder}'")
    mode = mode or ("import" if "import" in recipe else "rebuild")
    if mode not in recipe:
        raise HetbenchError(f"recipe '{name}' has no '{mode}' mode (it has: {', '.join(m for m in ('import', 'rebuild') if m in recipe)})")
    return recipe, recipe[mode]
