"""IIDPartitioner and its pure heart :func:`~hetbench.partitioners.iid.iid_assignment`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.metrics import emd
from hetbench.partitioners import IIDPartitioner, make_rng
from hetbench.partitioners.iid import iid_assignment
from partition_checks import PROPS, check_invariants, check_seeds, distinct_assignments, equal_sizes, labelled
from tables import make_table

@PROPS
@given(data=labelled(), k=st.integers(1, 12), seed=st.integers(0, 2**31 - 1))
def test_iid_equal_sizes(data, k, seed):
    labels, C = data
    n = labels.size
    assume(k <= n)
    part = check_seeds(lambda: IIDPartitioner(num_clients=k), lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, k)
    assert part.num_kept == n  # IID drops nothing
    assert np.array_equal(part.client_sizes(), equal_sizes(n, k))


@PROPS
@given(sizes=st.lists(st.integers(0, 30), min_size=1, max_size=10), seed=st.integers(0, 2**31 - 1), C=st.integers(1, 5))
def test_iid_given_sizes_met_exactly(sizes, seed, C):
    n = sum(sizes)
    assume(n > 0)
    labels = np.random.default_rng(seed).integers(0, C, n)
    part = check_seeds(lambda: IIDPartitioner(num_clients=len(sizes), sizes=sizes), lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, len(sizes))
    assert np.array_equal(part.client_sizes(), sizes)
    # the pure function agrees
    a = iid_assignment(n, np.asarray(sizes), make_rng(seed))
    assert np.array_equal(np.bincount(a, minlength=len(sizes)), sizes)


def test_iid_bad_sizes_raise():
    t = make_table(np.arange(10) % 3)
    with pytest.raises(HetbenchError):
        IIDPartitioner(num_clients=11).partition(t)
    with pytest.raises(HetbenchError):
        IIDPartitioner(num_clients=0).partition(t)
    with pytest.raises(HetbenchError):
        IIDPartitioner(num_clients=2, sizes=[5, 6]).partition(t)
    with pytest.raises(HetbenchError):
        IIDPartitioner(num_clients=3, sizes=[5, 5]).partition(t)
    with pytest.raises(HetbenchError):
        IIDPartitioner(num_clients=2, sizes=[11, -1]).partition(t)


def test_iid_different_seeds_differ_and_emd_small():
    labels = np.arange(4000) % 8
    t = make_table(labels, 8)
    parts = [IIDPartitioner(num_clients=8).partition(t, s) for s in range(5)]
    assert distinct_assignments(parts)
    for p in parts:
        assert emd(p.label_matrix(labels, 8)) < 0.2
