"""The shared count-matrix helpers of :mod:`hetbench.partitioners._alloc`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition
from hetbench.partitioners._alloc import assign_from_counts, repair_min_size
from partition_checks import PROPS, check_invariants, labelled

def test_repair_min_size_pure():
    counts = np.array([[50, 50], [0, 0], [1, 0], [0, 99]])
    out = repair_min_size(counts, 25, preference=np.array([[0.5, 0.5], [0.9, 0.1], [0.1, 0.9], [0.0, 1.0]]))
    assert np.array_equal(out.sum(axis=0), counts.sum(axis=0))
    assert out.sum(axis=1).min() >= 25
    assert np.all(out >= 0)
    # the short client takes the class it prefers from the donor
    assert out[1, 0] >= out[1, 1]
    # no repair needed: unchanged
    assert np.array_equal(repair_min_size(counts, 0), counts)
    with pytest.raises(HetbenchError):
        repair_min_size(counts, 51)


@PROPS
@given(data=labelled(max_n=100), k=st.integers(1, 6), seed=st.integers(0, 2**31 - 1))
def test_assign_from_counts_realises_counts(data, k, seed):
    labels, C = data
    cc = np.bincount(labels, minlength=C)
    rng = np.random.default_rng(seed)
    # random counts that fit under the class counts
    counts = np.zeros((k, C), dtype=np.int64)
    for c in range(C):
        used = rng.integers(0, cc[c] + 1)
        counts[:, c] = rng.multinomial(used, np.full(k, 1.0 / k))
    a, r = assign_from_counts(labels, counts, np.random.default_rng(seed), DropReason.CLASS_UNASSIGNED)
    part = Partition(a, k, [f"c{i}" for i in range(k)], {}, r)
    check_invariants(part, labels, C, k)
    assert np.array_equal(part.label_matrix(labels, C), counts)
    assert np.all(r[a < 0] == DropReason.CLASS_UNASSIGNED)
    with pytest.raises(ValueError):
        bad = counts.copy()
        bad[0, 0] = cc[0] + 1
        assign_from_counts(labels, bad, np.random.default_rng(seed))
