"""Every registered partitioner can be rebuilt from its recipe: what `hetbench verify` relies on."""

from __future__ import annotations

import pytest

from hetbench.partitioners import REGISTRY, get_partitioner


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_params_rebuild_the_partitioner(name):
    original = REGISTRY[name]()
    rebuilt = get_partitioner(name, original.params())
    assert type(rebuilt) is type(original)
    assert rebuilt.params() == original.params()
