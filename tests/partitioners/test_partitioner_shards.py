"""ShardsPartitioner (McMahan et al. 2017) and ClassesPerClientPartitioner (k classes per client)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason
from hetbench.partitioners import ClassesPerClientPartitioner, ShardsPartitioner, make_rng
from hetbench.partitioners.shards import classes_per_client_counts, shard_assignment
from partition_checks import PROPS, check_invariants, check_seeds, distinct_assignments, labelled
from tables import make_table

# ---- shards ------------------------------------------------------------------------------------
@PROPS
@given(data=labelled(max_n=200), seed=st.integers(0, 2**31 - 1), sizes=st.data())
def test_shards_equal_sizes(data, seed, sizes):
    labels, C = data
    n = labels.size
    # k clients x spc shards that the n samples can fill (k <= 10, spc <= 4), drawn within that bound rather than
    # filtered: assume(k * spc <= n) threw away most draws of small tables (Hypothesis's filter_too_much check)
    k = sizes.draw(st.integers(1, min(10, n)), label="k")
    spc = sizes.draw(st.integers(1, max(1, min(4, n // k))), label="spc")
    make = lambda: ShardsPartitioner(num_clients=k, shards_per_client=spc)  # noqa: E731
    part = check_seeds(make, lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, k)
    shard = n // (k * spc)
    assert np.all(part.client_sizes() == spc * shard)  # equal client sizes
    assert n - part.num_kept == n % (k * spc)
    assert np.all(part.drop_reason[part.assignment < 0] == DropReason.REMAINDER)
    a, r = shard_assignment(labels, k, spc, make_rng(seed))
    assert np.array_equal(a, part.assignment)


def test_shards_are_label_sorted():
    """100 samples of each of 10 classes, 10 clients x 2 shards of 50: every shard is one class."""
    labels = np.repeat(np.arange(10), 100)
    t = make_table(labels, 10)
    parts = [ShardsPartitioner(num_clients=10, shards_per_client=2).partition(t, s) for s in range(5)]
    assert distinct_assignments(parts)
    for p in parts:
        lm = p.label_matrix(labels, 10)
        assert np.all((lm > 0).sum(axis=1) <= 2)
        assert set(np.unique(lm).tolist()) <= {0, 50, 100}


def test_shards_bad_parameters_raise():
    t = make_table(np.arange(10) % 2)
    with pytest.raises(HetbenchError):
        ShardsPartitioner(num_clients=6, shards_per_client=2).partition(t)
    with pytest.raises(HetbenchError):
        ShardsPartitioner(num_clients=0)
    with pytest.raises(HetbenchError):
        ShardsPartitioner(num_clients=2, shards_per_client=0)


# ---- classes per client ----------------------------------------------------------------------------
@st.composite
def cpc_case(draw):
    """Every class has at least as many samples as there are clients, so each holder gets >= 1."""
    k_clients = draw(st.integers(1, 10))
    C = draw(st.integers(1, 6))
    cc = np.asarray(draw(st.lists(st.integers(k_clients, k_clients + 20), min_size=C, max_size=C)))
    kpc = draw(st.integers(1, C))
    return cc, k_clients, kpc


@PROPS
@given(case=cpc_case(), seed=st.integers(0, 2**31 - 1))
def test_classes_per_client_exactly_k(case, seed):
    cc, k, kpc = case
    C = cc.size
    labels = np.random.default_rng(seed).permutation(np.repeat(np.arange(C), cc))
    make = lambda: ClassesPerClientPartitioner(num_clients=k, classes_per_client=kpc)  # noqa: E731
    part = check_seeds(make, lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, k)
    lm = part.label_matrix(labels, C)
    assert np.all((lm > 0).sum(axis=1) == kpc)  # exactly k classes per client
    holders = (lm > 0).sum(axis=0)
    if k >= C:
        assert np.all(holders >= 1)  # every class has a holder
        assert part.num_kept == labels.size
    for c in range(C):
        if holders[c]:
            vals = lm[lm[:, c] > 0, c]
            assert vals.sum() == cc[c]  # a held class is shared in full ...
            assert vals.max() - vals.min() <= 1  # ... and evenly
        else:
            assert np.all(part.drop_reason[labels == c] == DropReason.CLASS_UNASSIGNED)
    counts = classes_per_client_counts(np.bincount(labels, minlength=C), k, kpc, make_rng(seed))
    assert np.array_equal(counts, lm)


def test_classes_per_client_different_seeds_differ():
    labels = np.arange(500) % 5
    t = make_table(labels, 5)
    parts = [ClassesPerClientPartitioner(num_clients=10, classes_per_client=2).partition(t, s) for s in range(5)]
    assert distinct_assignments(parts)


def test_classes_per_client_exactly_k_with_a_tiny_class():
    # classes of 1, 100 and 100 samples, 2 clients x 2 classes: {0, 1} + {1, 2} (or {0, 2} + {1, 2})
    # gives both clients exactly two classes; class 0 must not be given to both.
    cc = np.array([1, 100, 100])
    for seed in range(20):
        counts = classes_per_client_counts(cc, 2, 2, np.random.default_rng(seed))
        assert np.all((counts > 0).sum(axis=1) == 2), (seed, counts)


def test_classes_per_client_impossible_request_fails_clearly():
    # classes of 1, 1 and 30 samples cannot give 3 clients two distinct classes each
    with pytest.raises(HetbenchError, match="cannot give every client 2 classes"):
        classes_per_client_counts(np.array([1, 1, 30]), 3, 2, np.random.default_rng(0))


def test_classes_per_client_bad_parameters_raise():
    t = make_table(np.arange(10) % 3)
    with pytest.raises(HetbenchError):
        ClassesPerClientPartitioner(num_clients=2, classes_per_client=4).partition(t)
    with pytest.raises(HetbenchError):
        ClassesPerClientPartitioner(num_clients=2, classes_per_client=0).partition(t)
    with pytest.raises(HetbenchError):
        ClassesPerClientPartitioner(num_clients=11, classes_per_client=1).partition(t)
    with pytest.raises(HetbenchError):
        ClassesPerClientPartitioner(num_clients=0)
