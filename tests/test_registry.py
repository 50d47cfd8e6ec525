"""hetbench.registry.Registry: the one registry style (explicit mapping, one validating dispatcher)."""

from __future__ import annotations

import pytest

from hetbench.errors import HetbenchError
from hetbench.registry import Registry, UnknownNameError, filter_kwargs


def test_unknown_name_lists_the_valid_ones_and_names_the_option():
    r = Registry("widget", {"a": 1, "b": 2}, option="--widget")
    with pytest.raises(UnknownNameError) as info:
        r["c"]
    assert str(info.value) == "unknown widget 'c' for --widget; choose one of: a, b"
    assert isinstance(info.value, HetbenchError) and isinstance(info.value, KeyError)
    assert "c" not in r and r.get("c") is None  # the Mapping protocol still works


def test_mapping_is_ordered_and_read_only():
    r = Registry("widget", {"b": 2, "a": 1})
    assert r.names() == ("b", "a") and list(r) == ["b", "a"] and len(r) == 2
    with pytest.raises(TypeError):
        r["c"] = 3  # type: ignore[index]


def test_call_passes_only_the_keywords_an_implementation_takes():
    r = Registry("shape", {"square": lambda side: side * side, "any": lambda **kw: sorted(kw)})
    assert r.call("square", side=3, colour="red") == 9
    assert r.call("any", side=3, colour="red") == ["colour", "side"]
    assert filter_kwargs(lambda a, b=1: None, {"a": 1, "c": 2}) == {"a": 1}


@pytest.mark.parametrize("where, names", [
    ("hetbench.partitioners:REGISTRY", {"iid", "dirichlet", "device"}),
    ("hetbench.splits:TEST_POLICY_REGISTRY", {"global", "client", "natural", "heldout"}),
])
def test_the_project_registries_are_registries(where, names):
    import importlib

    module, attr = where.split(":")
    registry = getattr(importlib.import_module(module), attr)
    assert isinstance(registry, Registry) and names <= set(registry)
