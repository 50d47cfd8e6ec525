"""Shared checks of the partitioner tests (tests/partitioners/test_partitioner_*.py).

What every :class:`~hetbench.partition.Partition` must satisfy whatever the method
(:func:`check_invariants`), the seed / recipe contract (:func:`check_seeds`), hypothesis strategies
and settings.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from hetbench.partition import DropReason, Partition
from hetbench.partitioners import get_partitioner

PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def labelled(draw, min_n=1, max_n=150, max_classes=6):
    """(labels int64 array, num_classes); some classes may be absent."""
    num_classes = draw(st.integers(1, max_classes))
    labels = draw(st.lists(st.integers(0, num_classes - 1), min_size=min_n, max_size=max_n))
    return np.asarray(labels, dtype=np.int64), num_classes


def check_invariants(part: Partition, labels: np.ndarray, num_classes: int, num_clients: int | None = None) -> None:
    """What every Partition must satisfy, whatever the method."""
    n = labels.size
    a = part.assignment
    assert a.shape == (n,)
    assert a.dtype == np.int32
    if num_clients is not None:
        assert part.num_clients == num_clients
    assert len(part.client_names) == part.num_clients
    assert len(set(part.client_names)) == part.num_clients
    assert np.all((a >= -1) & (a < part.num_clients))
    # drop_reason non-zero exactly where the assignment is -1, and always a known reason
    assert part.drop_reason.shape == a.shape
    assert np.array_equal(part.drop_reason != 0, a == -1)
    assert set(np.unique(part.drop_reason).tolist()) <= {int(r) for r in DropReason}
    # kept + dropped == n
    dropped = part.dropped_counts()
    assert part.num_kept + sum(dropped.values()) == n
    assert part.num_kept == int(np.count_nonzero(a >= 0))
    # the per-client index lists partition the kept samples: no sample in two clients
    idx = part.client_indices()
    assert len(idx) == part.num_clients
    flat = np.concatenate(idx) if idx else np.zeros(0, dtype=np.int64)
    assert flat.size == np.unique(flat).size
    assert np.array_equal(np.sort(flat), np.flatnonzero(a >= 0))
    for c, ix in enumerate(idx):
        assert np.all(a[ix] == c)
        assert np.all(np.diff(ix) > 0)
    sizes = part.client_sizes()
    assert np.array_equal(sizes, [ix.size for ix in idx])
    assert sizes.sum() == part.num_kept
    # the label matrix is consistent with the assignment
    lm = part.label_matrix(labels, num_classes)
    assert lm.shape == (part.num_clients, num_classes)
    assert np.array_equal(lm.sum(axis=1), sizes)
    assert np.array_equal(lm.sum(axis=0), np.bincount(labels[a >= 0], minlength=num_classes))


def check_seeds(make_partitioner, table_factory, seed: int) -> Partition:
    """Same seed -> identical assignment, names and fingerprint (fresh objects); another seed -> another
    fingerprint (the seed is part of the recipe)."""
    p1 = make_partitioner().partition(table_factory(), seed)
    p2 = make_partitioner().partition(table_factory(), seed)
    assert np.array_equal(p1.assignment, p2.assignment)
    assert np.array_equal(p1.drop_reason, p2.drop_reason)
    assert p1.client_names == p2.client_names
    assert p1.fingerprint == p2.fingerprint
    assert p1.recipe == p2.recipe
    p3 = make_partitioner().partition(table_factory(), seed + 1)
    assert p3.fingerprint != p1.fingerprint
    # the recipe rebuilds the partitioner and reproduces the partition
    rebuilt = get_partitioner(p1.recipe["method"], p1.recipe["params"]).partition(table_factory(), p1.recipe["seed"])
    assert rebuilt.fingerprint == p1.fingerprint
    return p1


def equal_sizes(n: int, k: int) -> np.ndarray:
    s = np.full(k, n // k, dtype=np.int64)
    s[: n % k] += 1
    return s


def distinct_assignments(parts) -> bool:
    arrays = [p.assignment.tobytes() for p in parts]
    return len(set(arrays)) == len(arrays)
