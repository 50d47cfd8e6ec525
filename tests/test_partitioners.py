"""Property and unit tests for every partitioner.

The partitioners are exercised both through their pure numpy hearts (``hsu_client_counts``,
``class_dirichlet_counts``, ``shard_assignment`` ...) and through the ``Partitioner`` classes on a
small in-memory :class:`~hetbench.table.SampleTable`.
"""

from __future__ import annotations

import math
import time

import datasets
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.metrics import emd
from hetbench.partition import DropReason, Partition
from hetbench.partitioners import (
    ClassesPerClientPartitioner,
    DirichletPartitioner,
    IIDPartitioner,
    NaturalIdPartitioner,
    ShardsPartitioner,
    get_partitioner,
    make_rng,
)
from hetbench.partitioners._alloc import assign_from_counts, repair_min_size
from hetbench.partitioners.dirichlet import (
    class_dirichlet_counts,
    hsu_client_counts,
    one_class_counts,
    shares_to_counts,
)
from hetbench.partitioners.iid import iid_assignment
from hetbench.partitioners.natural_id import encode_keys, natural_id_assignment
from hetbench.partitioners.shards import classes_per_client_counts, shard_assignment
from tables import make_table

PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- helpers ---------------------------------------------------------------------------------


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


# ---- IID ---------------------------------------------------------------------------------------
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


# ---- Dirichlet, scheme = client (Hsu et al.) --------------------------------------------------------
alphas_positive = st.sampled_from([1e-3, 0.05, 0.1, 0.5, 1.0, 10.0, 1e3, math.inf])


@PROPS
@given(data=labelled(), k=st.integers(1, 12), alpha=alphas_positive, seed=st.integers(0, 2**31 - 1))
def test_dirichlet_client_scheme_equal_sizes(data, k, alpha, seed):
    labels, C = data
    n = labels.size
    assume(k <= n)
    make = lambda: DirichletPartitioner(num_clients=k, alpha=alpha, scheme="client")  # noqa: E731
    part = check_seeds(make, lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, k)
    assert part.num_kept == n
    assert np.array_equal(part.client_sizes(), equal_sizes(n, k))
    # the count matrix of the pure function is exactly what the assignment realises
    counts = make().client_counts(labels, C, make_rng(seed))
    assert np.array_equal(part.label_matrix(labels, C), counts)


@PROPS
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=8), alpha=alphas_positive,
       seed=st.integers(0, 2**31 - 1), C=st.integers(1, 6))
def test_dirichlet_client_scheme_given_sizes_met_exactly(sizes, alpha, seed, C):
    n = sum(sizes)
    assume(n >= len(sizes))
    labels = np.random.default_rng(seed).integers(0, C, n)
    make = lambda: DirichletPartitioner(num_clients=len(sizes), alpha=alpha, sizes=sizes)  # noqa: E731
    part = check_seeds(make, lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, len(sizes))
    assert np.array_equal(part.client_sizes(), sizes)


@PROPS
@given(class_counts=st.lists(st.integers(0, 60), min_size=1, max_size=8), k=st.integers(1, 10),
       alpha=alphas_positive, seed=st.integers(0, 2**31 - 1))
def test_hsu_client_counts_pure(class_counts, k, alpha, seed):
    cc = np.asarray(class_counts, dtype=np.int64)
    n = int(cc.sum())
    assume(n >= 1)
    sizes = np.random.default_rng(seed).multinomial(n, np.full(k, 1.0 / k))
    counts = hsu_client_counts(cc, sizes, alpha, np.random.default_rng(seed))
    assert counts.shape == (k, cc.size)
    assert np.all(counts >= 0)
    assert np.array_equal(counts.sum(axis=1), sizes)  # every client gets its full size
    assert np.array_equal(counts.sum(axis=0), cc)  # no sample used twice, none left over
    assert np.all(counts[:, cc == 0] == 0)  # absent classes are never drawn
    again = hsu_client_counts(cc, sizes, alpha, np.random.default_rng(seed))
    assert np.array_equal(counts, again)


class _FixedDirichletRng:
    """A Generator stand-in: ``dirichlet`` returns the given q (and records its concentration);
    ``multinomial`` is a real generator's."""

    def __init__(self, q, seed=0):
        self.q = np.asarray(q, dtype=np.float64)
        self.rng = np.random.default_rng(seed)
        self.concentration = None

    def dirichlet(self, alpha, size=None):
        self.concentration = np.asarray(alpha, dtype=np.float64)
        assert size == self.q.shape[0]
        return self.q[:, : self.concentration.size].copy()

    def multinomial(self, n, pvals):
        return self.rng.multinomial(n, pvals)


def test_hsu_concentration_is_alpha_times_population():
    """q_k ~ Dir(alpha * p), p the population's class distribution (Appendix B.1)."""
    cc = np.array([10, 30, 60])
    fake = _FixedDirichletRng(np.tile([0.1, 0.3, 0.6], (4, 1)))
    hsu_client_counts(cc, np.array([25, 25, 25, 25]), 2.5, fake)
    np.testing.assert_allclose(fake.concentration, 2.5 * cc / cc.sum())
    assert fake.concentration.sum() == pytest.approx(2.5)


def test_hsu_renormalisation_eq5():
    """Eq. 5: once a class runs out, later draws come from q_k restricted to the remaining classes,
    renormalised; every client still gets its full size and never an exhausted class."""
    cc = np.array([10, 5000, 5000])
    q = np.array(
        [
            [1.0, 0.0, 0.0],  # takes the whole of class 0 ...
            [0.9, 0.08, 0.02],  # ... so this client draws from (0.08, 0.02) / 0.1 = (0.8, 0.2)
            [0.5, 0.25, 0.25],  # (0.5, 0.5) on the classes left
            [0.2, 0.4, 0.4],  # the last client takes what is left
        ]
    )
    sizes = np.array([10, 1000, 1000, 8000])
    counts = hsu_client_counts(cc, sizes, 1.0, _FixedDirichletRng(q, seed=3))
    assert np.array_equal(counts.sum(axis=1), sizes)
    assert counts.sum() == cc.sum()
    assert np.array_equal(counts.sum(axis=0), cc)
    assert counts[0].tolist() == [10, 0, 0]
    assert np.all(counts[1:, 0] == 0)  # exhausted class never handed out again
    # client 1: renormalised q = (0, 0.8, 0.2); sd of the class-1 count ~ sqrt(1000 * .8 * .2) = 12.6
    assert abs(counts[1, 1] - 800) < 60
    assert counts[1, 1] + counts[1, 2] == 1000
    # client 2: (0, 0.5, 0.5)
    assert abs(counts[2, 1] - 500) < 80


def test_hsu_exhaustion_statistics_over_seeds():
    """Renormalisation is q_k(y) / (1 - q_k(S)), not a draw in proportion to the remaining pool:
    averaged over seeds, the post-exhaustion split follows q_k's ratio 9:1 although the pool is 1:9."""
    cc = np.array([5, 100, 900])
    q = np.array([[1.0, 0.0, 0.0], [0.5, 0.45, 0.05], [0.0, 0.0, 1.0]])
    sizes = np.array([5, 50, 950])
    share = []
    for s in range(200):
        counts = hsu_client_counts(cc, sizes, 1.0, _FixedDirichletRng(q, seed=s))
        assert np.array_equal(counts.sum(axis=1), sizes)
        assert counts[1, 0] == 0
        share.append(counts[1, 1] / 50)
    assert abs(np.mean(share) - 0.9) < 0.02


def test_hsu_client_with_no_mass_left_still_filled():
    """q_k puts all mass on an exhausted class: the client is still filled from what remains."""
    cc = np.array([5, 20, 30])
    q = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    sizes = np.array([5, 25, 25])
    counts = hsu_client_counts(cc, sizes, 0.01, _FixedDirichletRng(q))
    assert np.array_equal(counts.sum(axis=1), sizes)
    assert np.array_equal(counts.sum(axis=0), cc)
    assert counts[1, 0] == 0 and counts[2, 0] == 0


def test_hsu_real_exhaustion_sizes_met():
    """A rare class with a real rng: it runs out early; all sizes are still met."""
    cc = np.array([3, 497, 500])
    sizes = np.full(10, 100)
    for s in range(20):
        counts = hsu_client_counts(cc, sizes, 0.1, np.random.default_rng(s))
        assert np.array_equal(counts.sum(axis=1), sizes)
        assert np.array_equal(counts.sum(axis=0), cc)
        exhausted_at = np.flatnonzero(np.cumsum(counts[:, 0]) == cc[0])[0]
        assert np.all(counts[exhausted_at + 1 :, 0] == 0)


@st.composite
def one_class_case(draw):
    """Any class counts (absent classes included) and any number of clients up to n."""
    cc = np.asarray(draw(st.lists(st.integers(0, 40), min_size=1, max_size=6)), dtype=np.int64)
    n = int(cc.sum())
    assume(n >= 1)
    k = draw(st.integers(1, min(n, 60)))
    return cc, k


@PROPS
@given(case=one_class_case(), seed=st.integers(0, 2**31 - 1))
def test_dirichlet_client_alpha0_one_class_per_client(case, seed):
    cc, k = case
    labels = np.repeat(np.arange(cc.size), cc)
    C = cc.size
    P = int(np.count_nonzero(cc))
    make = lambda: DirichletPartitioner(num_clients=k, alpha=0.0, scheme="client")  # noqa: E731
    part = check_seeds(make, lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, k)
    lm = part.label_matrix(labels, C)
    assert np.all((lm > 0).sum(axis=1) == 1)  # exactly one class per client (so no empty client)
    assert np.array_equal(lm, make().client_counts(labels, C, make_rng(seed)))
    held = np.flatnonzero(lm.sum(axis=0) > 0)
    if k >= P:
        assert part.num_kept == labels.size  # every class has a holder
    else:
        assert held.size == k  # k distinct classes, the others dropped
        assert set(part.dropped_counts()) == {"class-unassigned"}
        assert part.dropped_counts()["class-unassigned"] == int(cc.sum() - cc[held].sum())
    # a class's holders share it evenly
    for c in held:
        vals = lm[lm[:, c] > 0, c]
        assert vals.max() - vals.min() <= 1
        assert vals.sum() == cc[c]


@pytest.mark.parametrize("cc, k", [([1, 9], 10), ([1, 10, 10], 10), ([1, 1, 1, 50], 40)])
def test_dirichlet_client_alpha0_never_leaves_a_client_empty(cc, k):
    """Regression: one_class_counts used to give a class more holders than samples (largest
    remainder of class_counts * extra / n), leaving clients empty; e.g. [1, 9] with 10 clients gave
    class 0 two holders, one of them with no sample."""
    cc = np.asarray(cc)
    for seed in range(5):
        counts = one_class_counts(cc, k, np.random.default_rng(seed))
        assert np.all((counts > 0).sum(axis=1) == 1), counts
        assert np.array_equal(counts.sum(axis=0), cc)
    labels = np.repeat(np.arange(cc.size), cc)
    part = DirichletPartitioner(num_clients=k, alpha=0.0).partition(make_table(labels, cc.size), 0)
    assert np.all(part.client_sizes() >= 1)


def test_dirichlet_client_large_alpha_is_near_iid():
    """20 clients x 500 samples: alpha = 1e6 or inf gives EMD near 0 (only sampling noise, ~0.12),
    small alpha gives a far larger EMD."""
    labels = np.repeat(np.arange(10), 1000)
    t = make_table(labels, 10)
    for alpha in (1e6, math.inf):
        for seed in range(3):
            part = DirichletPartitioner(num_clients=20, alpha=alpha).partition(t, seed)
            assert np.array_equal(part.client_sizes(), np.full(20, 500))
            e = emd(part.label_matrix(labels, 10))
            assert 0.0 <= e < 0.2
    e_small = emd(DirichletPartitioner(num_clients=20, alpha=0.1).partition(t, 0).label_matrix(labels, 10))
    e_zero = emd(DirichletPartitioner(num_clients=20, alpha=0.0).partition(t, 0).label_matrix(labels, 10))
    assert e_small > 1.0
    assert e_zero == pytest.approx(1.8)  # one class per client, p = 1/10 -> 2 - 2/10


def test_dirichlet_different_seeds_differ():
    labels = np.arange(600) % 6
    t = make_table(labels, 6)
    for scheme in ("client", "class"):
        parts = [DirichletPartitioner(num_clients=6, alpha=0.5, scheme=scheme).partition(t, s) for s in range(5)]
        assert distinct_assignments(parts)


def test_dirichlet_bad_parameters_raise():
    t = make_table(np.arange(10) % 2)
    for kwargs in (
        dict(alpha=-1.0),
        dict(alpha=float("nan")),
        dict(scheme="bogus"),
        dict(num_clients=0),
        dict(scheme="class", min_size=-1),
        dict(scheme="class", sizes=[5, 5]),
        dict(scheme="client", min_size=2),
        dict(num_clients=2, alpha=0.0, sizes=[5, 5]),
    ):
        with pytest.raises(HetbenchError):
            DirichletPartitioner(**kwargs)
    with pytest.raises(HetbenchError):
        DirichletPartitioner(num_clients=11).partition(t)
    with pytest.raises(HetbenchError):
        DirichletPartitioner(num_clients=11, scheme="class").partition(t)
    with pytest.raises(HetbenchError):
        get_partitioner("dirichlet", {"bogus": 1})
    with pytest.raises(HetbenchError):
        get_partitioner("no-such-method")


# ---- Dirichlet, scheme = class (hetero-dir) --------------------------------------------------------
@PROPS
@given(data=labelled(), k=st.integers(1, 12), alpha=st.sampled_from([0.0, 0.05, 0.5, 5.0, math.inf]),
       seed=st.integers(0, 2**31 - 1))
def test_dirichlet_class_scheme(data, k, alpha, seed):
    labels, C = data
    assume(k <= labels.size)
    make = lambda: DirichletPartitioner(num_clients=k, alpha=alpha, scheme="class")  # noqa: E731
    part = check_seeds(make, lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, k)
    assert part.num_kept == labels.size  # every sample of every class is handed out
    lm = part.label_matrix(labels, C)
    assert np.array_equal(lm, make().client_counts(labels, C, make_rng(seed)))
    if alpha == 0:
        assert np.all((lm > 0).sum(axis=0) <= 1)  # each class goes whole to one client
    if math.isinf(alpha):
        assert np.all(lm.max(axis=0) - lm.min(axis=0) <= 1)  # shares 1/N, cut by floor


@st.composite
def min_size_case(draw):
    labels, C = draw(labelled(min_n=2, max_n=150))
    n = labels.size
    k = draw(st.integers(1, min(12, n)))
    min_size = draw(st.integers(1, n // k))  # feasible: k * min_size <= n
    return labels, C, k, min_size


@PROPS
@given(case=min_size_case(), alpha=st.sampled_from([0.0, 0.01, 0.1, 1.0, math.inf]), seed=st.integers(0, 2**31 - 1))
def test_dirichlet_class_scheme_min_size_met_when_feasible(case, alpha, seed):
    labels, C, k, min_size = case
    make = lambda: DirichletPartitioner(num_clients=k, alpha=alpha, scheme="class", min_size=min_size)  # noqa: E731
    part = check_seeds(make, lambda: make_table(labels, C), seed)
    check_invariants(part, labels, C, k)
    assert part.num_kept == labels.size
    assert part.client_sizes().min() >= min_size


@PROPS
@given(class_counts=st.lists(st.integers(0, 50), min_size=1, max_size=6), k=st.integers(1, 12),
       alpha=st.sampled_from([0.0, 0.01, 0.3, 3.0, math.inf]), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_class_dirichlet_counts_pure(class_counts, k, alpha, seed, data):
    cc = np.asarray(class_counts, dtype=np.int64)
    n = int(cc.sum())
    min_size = data.draw(st.integers(0, n // k if k else 0))
    counts = class_dirichlet_counts(cc, k, alpha, np.random.default_rng(seed), min_size)
    assert counts.shape == (k, cc.size)
    assert np.all(counts >= 0)
    assert np.array_equal(counts.sum(axis=0), cc)
    assert counts.sum(axis=1).min() >= min_size


@FEW
@given(data=labelled(min_n=1, max_n=100), k=st.integers(1, 12), extra=st.integers(1, 10**6),
       alpha=st.sampled_from([0.0, 0.1, math.inf]))
def test_dirichlet_class_scheme_impossible_min_size_raises_at_once(data, k, extra, alpha):
    labels, C = data
    assume(k <= labels.size)
    min_size = labels.size // k + extra  # k * min_size > n
    t = make_table(labels, C)
    start = time.perf_counter()
    with pytest.raises(HetbenchError, match="min-size"):
        DirichletPartitioner(num_clients=k, alpha=alpha, scheme="class", min_size=min_size).partition(t, 0)
    assert time.perf_counter() - start < 2.0


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
@given(class_counts=st.lists(st.integers(0, 40), min_size=1, max_size=6), k=st.integers(1, 8), seed=st.integers(0, 2**31 - 1))
def test_shares_to_counts_cuts_every_class_exactly(class_counts, k, seed):
    cc = np.asarray(class_counts, dtype=np.int64)
    shares = np.random.default_rng(seed).dirichlet(np.ones(k), size=cc.size)
    counts = shares_to_counts(shares, cc)
    assert counts.shape == (k, cc.size)
    assert np.all(counts >= 0)
    assert np.array_equal(counts.sum(axis=0), cc)
    assert np.all(np.abs(counts - shares.T * cc[None, :]) < 2)


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


# ---- shards ------------------------------------------------------------------------------------
@PROPS
@given(data=labelled(max_n=200), k=st.integers(1, 10), spc=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_shards_equal_sizes(data, k, spc, seed):
    labels, C = data
    n = labels.size
    assume(k * spc <= n)
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


# ---- natural id ------------------------------------------------------------------------------------
user_values = st.one_of(
    st.lists(st.one_of(st.none(), st.integers(-50, 1000)), min_size=1, max_size=80),
    st.lists(st.one_of(st.none(), st.text(alphabet="abcXYZ019_", min_size=0, max_size=3)), min_size=1, max_size=80),
)


@PROPS
@given(users=user_values, min_samples=st.integers(0, 4), seed=st.integers(0, 2**31 - 1))
def test_natural_id(users, min_samples, seed):
    n = len(users)
    labels = np.random.default_rng(seed).integers(0, 3, n)
    present = [u for u in users if u is not None]
    counts = {u: present.count(u) for u in set(present)}
    kept_values = sorted(u for u, c in counts.items() if c >= max(min_samples, 1))
    make = lambda: NaturalIdPartitioner(column="user", min_samples=min_samples)  # noqa: E731
    if not kept_values:
        with pytest.raises(HetbenchError):
            make().partition(make_table(labels, 3, users=users), seed)
        return
    part = check_seeds(make, lambda: make_table(labels, 3, users=users), seed)
    check_invariants(part, labels, 3, len(kept_values))
    # one client per distinct (kept) value, names sorted (numbers numerically, strings lexically)
    assert part.client_names == tuple(str(v) for v in kept_values)
    assert np.all(part.client_sizes() >= max(min_samples, 1))
    for i, u in enumerate(users):
        a = part.assignment[i]
        if u is None:
            assert a == -1 and part.drop_reason[i] == DropReason.MISSING_VALUE
        elif counts[u] < max(min_samples, 1):
            assert a == -1 and part.drop_reason[i] == DropReason.CLIENT_TOO_SMALL
        else:
            assert part.client_names[a] == str(u)
    # the assignment does not depend on the seed
    other = make().partition(make_table(labels, 3, users=users), seed + 1)
    assert np.array_equal(other.assignment, part.assignment)


def test_natural_id_numeric_sort_and_nan():
    users = [10.0, 2.0, float("nan"), 2.0, 10.0, 9.5]
    labels = np.zeros(len(users), dtype=np.int64)
    part = NaturalIdPartitioner(column="user").partition(make_table(labels, 1, users=users), 0)
    assert part.client_names == ("2.0", "9.5", "10.0")
    assert part.assignment.tolist() == [2, 0, -1, 0, 2, 1]
    assert part.dropped_counts() == {"missing-value": 1}


def test_natural_id_pure_functions():
    import pyarrow as pa

    codes, values = encode_keys([pa.array([3, 1, None, 3]), pa.array([1, 7])])
    assert values == [1, 3, 7]
    assert codes[0].tolist() == [1, 0, -1, 1]
    assert codes[1].tolist() == [0, 2]
    a, r, cov = natural_id_assignment(codes[0], len(values), min_samples=2)
    assert a.tolist() == [0, -1, -1, 0]
    assert r.tolist() == [0, DropReason.CLIENT_TOO_SMALL, DropReason.MISSING_VALUE, 0]
    assert cov.tolist() == [-1, 0, -1]


def test_natural_id_errors():
    t = make_table([0, 1, 0], 2, users=["a", "a", "b"])
    with pytest.raises(HetbenchError):
        NaturalIdPartitioner(column="user", min_samples=-1)
    with pytest.raises(HetbenchError):
        NaturalIdPartitioner(column="nope").partition(t)
    with pytest.raises(HetbenchError):
        NaturalIdPartitioner(column="user", min_samples=5).partition(t)
