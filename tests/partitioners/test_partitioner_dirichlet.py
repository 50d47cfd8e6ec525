"""DirichletPartitioner, both schemes: Hsu et al.'s ``client`` scheme (q_k ~ Dir(alpha p), Eq. 5
renormalisation) and the per-class ``class`` scheme, through the class and the pure functions."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.metrics import emd
from hetbench.partitioners import DirichletPartitioner, get_partitioner, make_rng
from hetbench.partitioners import dirichlet_counts as dirichlet_module
from hetbench.partitioners._alloc import deal_counts
from hetbench.partitioners.dirichlet_counts import (
    class_dirichlet_counts,
    hsu_client_counts,
    one_class_counts,
    shares_to_counts,
)
from partition_checks import FEW, PROPS, check_invariants, check_seeds, distinct_assignments, equal_sizes, labelled
from tables import make_table

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


def log0(q):
    """log with log(0) = -inf and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(q, dtype=np.float64))


def sequential(sizes):
    """A dealing order that fills client 0 first, then client 1, ... (the old, biased order)."""
    return np.repeat(np.arange(len(sizes)), sizes)


def test_hsu_concentration_is_alpha_times_population(monkeypatch):
    """q_k ~ Dir(alpha * p), p the population's class distribution (Appendix B.1)."""
    seen = {}

    def fake(concentration, size, rng):
        seen["concentration"] = concentration
        return np.log(np.tile([0.1, 0.3, 0.6], (size, 1)))

    monkeypatch.setattr(dirichlet_module, "log_dirichlet", fake)
    cc = np.array([10, 30, 60])
    hsu_client_counts(cc, np.array([25, 25, 25, 25]), 2.5, np.random.default_rng(0))
    np.testing.assert_allclose(seen["concentration"], 2.5 * cc / cc.sum())
    assert seen["concentration"].sum() == pytest.approx(2.5)


def test_hsu_renormalisation_eq5():
    """Eq. 5: once a class runs out, later draws come from q_k restricted to the remaining classes,
    renormalised; every client still gets its full size and never an exhausted class."""
    cc = np.array([10, 5000, 5000])
    q = np.array(
        [
            [1.0, 0.0, 0.0],  # takes the whole of class 0 (dealt first) ...
            [0.9, 0.08, 0.02],  # ... so this client draws from (0.08, 0.02) / 0.1 = (0.8, 0.2)
            [0.5, 0.25, 0.25],  # (0.5, 0.5) on the classes left
            [0.2, 0.4, 0.4],  # the last client takes what is left
        ]
    )
    sizes = np.array([10, 1000, 1000, 8000])
    counts = deal_counts(log0(q), cc, sequential(sizes), np.random.default_rng(3))
    assert np.array_equal(counts.sum(axis=1), sizes)
    assert np.array_equal(counts.sum(axis=0), cc)
    assert counts[0].tolist() == [10, 0, 0]
    assert np.all(counts[1:, 0] == 0)  # exhausted class never handed out again
    # client 1: renormalised q = (0, 0.8, 0.2); sd of the class-1 count ~ sqrt(1000 * .8 * .2) = 12.6
    assert abs(counts[1, 1] - 800) < 60
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
        counts = deal_counts(log0(q), cc, sequential(sizes), np.random.default_rng(s))
        assert np.array_equal(counts.sum(axis=1), sizes)
        assert counts[1, 0] == 0
        share.append(counts[1, 1] / 50)
    assert abs(np.mean(share) - 0.9) < 0.02


def test_hsu_client_with_no_mass_left_still_filled():
    """q_k puts all mass on an exhausted class: the client is still filled from what remains."""
    cc = np.array([5, 20, 30])
    q = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    sizes = np.array([5, 25, 25])
    for order in (sequential(sizes), np.random.default_rng(1).permutation(sequential(sizes))):
        counts = deal_counts(log0(q), cc, order, np.random.default_rng(0))
        assert np.array_equal(counts.sum(axis=1), sizes)
        assert np.array_equal(counts.sum(axis=0), cc)


def test_hsu_minor_classes_keep_their_order_below_float_underflow():
    """Tiny alpha: q_k's minor weights underflow float64 (exp(-1e4) == 0.0), but a client whose main
    class runs out still moves to its *own* next class (log-space renormalisation), not to a mix."""
    cc = np.array([100] + [200] * 9)
    lq = np.full((10, 10), -2e4)  # every other class: far less likely still
    lq[:, 0] = 0.0  # everyone wants class 0 most ...
    lq[np.arange(1, 10), np.arange(1, 10)] = -1e4  # ... client k > 0 then class k
    sizes = np.full(10, 100)
    for seed in range(5):
        order = np.random.default_rng(seed).permutation(sequential(sizes))
        counts = deal_counts(lq, cc, order, np.random.default_rng(seed))
        assert np.array_equal(counts.sum(axis=1), sizes)
        k = np.arange(1, 10)
        assert np.array_equal(counts[k, 0] + counts[k, k], np.full(9, 100)), counts


def naive_deal(log_q, cc, order, rng):
    """Hsu's process one draw at a time: the reference that deal_counts must match in law."""
    remaining = np.array(cc, dtype=np.int64)
    q = np.exp(log_q)
    counts = np.zeros(log_q.shape, dtype=np.int64)
    for k in order:
        w = np.where(remaining > 0, q[k], 0.0)
        c = rng.choice(w.size, p=w / w.sum())
        counts[k, c] += 1
        remaining[c] -= 1
    return counts


def test_deal_counts_matches_the_one_draw_at_a_time_process():
    """Mean counts over many seeds agree with the naive sequential process (same order, same q),
    through many exhaustions and block boundaries (600 draws, 256 per first block)."""
    cc = np.array([40, 60, 100, 150, 250])
    lq = np.log(np.random.default_rng(7).dirichlet(np.full(5, 0.3), size=6))
    order = np.random.default_rng(8).permutation(np.repeat(np.arange(6), 100))
    fast = np.mean([deal_counts(lq, cc, order, np.random.default_rng(s)) for s in range(300)], axis=0)
    slow = np.mean([naive_deal(lq, cc, order, np.random.default_rng(10_000 + s)) for s in range(300)], axis=0)
    # each mean's standard error is at most sqrt(100 * 1/4 / 300) ~ 0.29 per cell: allow ~6 of them
    assert np.abs(fast - slow).max() < 2.5, np.round(fast - slow, 2)


@PROPS
@given(class_counts=st.lists(st.integers(0, 400), min_size=1, max_size=12), k=st.integers(1, 30),
       seed=st.integers(0, 2**31 - 1), alpha=alphas_positive)
def test_deal_counts_sizes_met_and_deterministic(class_counts, k, seed, alpha):
    cc = np.asarray(class_counts, dtype=np.int64)
    n = int(cc.sum())
    assume(n >= 1)
    sizes = np.random.default_rng(seed).multinomial(n, np.full(k, 1.0 / k))
    order = np.random.default_rng(seed).permutation(np.repeat(np.arange(k), sizes))
    lq = np.log(np.random.default_rng(seed).dirichlet(np.full(cc.size, 0.5), size=k))
    counts = deal_counts(lq, cc, order, np.random.default_rng(seed))
    assert np.array_equal(counts.sum(axis=1), sizes)
    assert np.array_equal(counts.sum(axis=0), cc)
    assert np.array_equal(counts, deal_counts(lq, cc, order, np.random.default_rng(seed)))


def test_hsu_real_exhaustion_sizes_met():
    """A rare class with a real rng: it runs out early; all sizes are still met."""
    cc = np.array([3, 497, 500])
    sizes = np.full(10, 100)
    for s in range(20):
        counts = hsu_client_counts(cc, sizes, 0.1, np.random.default_rng(s))
        assert np.array_equal(counts.sum(axis=1), sizes)
        assert np.array_equal(counts.sum(axis=0), cc)


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
    with pytest.raises(HetbenchError, match="min_size"):
        DirichletPartitioner(num_clients=k, alpha=alpha, scheme="class", min_size=min_size).partition(t, 0)
    assert time.perf_counter() - start < 2.0


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


def test_class_scheme_equal_shares_cut_exactly_for_inf_and_alphas_that_split_as_inf():
    """alpha >= ALPHA_IID splits as inf does, including the integer cut of equal shares: 7 clients of one
    7-sample class get one sample each (the float cumulative sum once gave [1, 1, 1, 1, 0, 1, 2])."""
    from hetbench.partitioners.dirichlet_counts import ALPHA_IID, class_dirichlet_counts

    for alpha in (math.inf, ALPHA_IID, 1e40):
        counts = class_dirichlet_counts(np.array([7, 30]), 7, alpha, np.random.default_rng(0))
        assert counts[:, 0].tolist() == [1] * 7
        assert counts[:, 1].tolist() == [4, 4, 4, 5, 4, 4, 5]  # floor(30 k / 7) - floor(30 (k - 1) / 7)


def test_partition_by_the_label_column_is_the_plain_split_and_another_column_is_skewed_instead():
    from hetbench.sources import load_table

    digits = load_table("builtin:digits")
    plain = DirichletPartitioner(5, alpha=0.5).partition(digits, seed=3)
    by_label = DirichletPartitioner(5, alpha=0.5, partition_by="label").partition(digits, seed=3)
    assert np.array_equal(plain.assignment, by_label.assignment)
    assert "partition_by" not in plain.recipe["params"] and by_label.recipe["params"]["partition_by"] == "label"
    domains = load_table("builtin:digits-domains", label_col="domain")
    part = DirichletPartitioner(8, alpha=0.05, partition_by="label").partition(domains, seed=0)
    digit = np.asarray(domains.column("train", "label"))
    keep = part.assignment >= 0
    digit_counts = np.zeros((8, 10), np.int64)
    np.add.at(digit_counts, (part.assignment[keep], digit[keep]), 1)
    domain_counts = part.label_matrix(domains.labels["train"], domains.num_classes)
    assert emd(digit_counts) > 1.0 > 0.5 > emd(domain_counts)  # skewed over the digits, not over the domains
    with pytest.raises(HetbenchError, match="partition_by must be a column name"):
        DirichletPartitioner(5, partition_by="")
