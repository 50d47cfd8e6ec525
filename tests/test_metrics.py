"""Heterogeneity metrics against hand computations (Hsu, Qi & Brown 2020, section 6.1) and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from hetbench.metrics import (
    classes_per_client,
    client_distributions,
    emd,
    emd_per_client,
    gini,
    hellinger_per_client,
    jensen_shannon_per_client,
    label_matrix,
    size_stats,
)

PROPS = settings(max_examples=60, deadline=None)


@st.composite
def count_matrices(draw, max_clients=8, max_classes=6, allow_empty_rows=True):
    k = draw(st.integers(1, max_clients))
    c = draw(st.integers(1, max_classes))
    rows = draw(st.lists(st.lists(st.integers(0, 50), min_size=c, max_size=c), min_size=k, max_size=k))
    m = np.asarray(rows, dtype=np.int64)
    if not allow_empty_rows:
        m[:, 0] += m.sum(axis=1) == 0
    return m


# ---- EMD -----------------------------------------------------------------------------------------
def test_emd_disjoint_one_hot_clients():
    counts = np.array([[30, 0], [0, 30]])  # population 50/50
    np.testing.assert_allclose(emd_per_client(counts), [1.0, 1.0])
    assert emd(counts) == pytest.approx(1.0)


def test_emd_identical_clients_is_zero():
    counts = np.array([[5, 10, 15], [5, 10, 15], [1, 2, 3]])
    np.testing.assert_allclose(emd_per_client(counts), 0.0, atol=1e-12)
    assert emd(counts) == pytest.approx(0.0, abs=1e-12)


def test_emd_one_hot_client_is_two_minus_two_p():
    counts = np.array([[0, 10, 0, 0], [20, 30, 25, 15]])
    p = counts.sum(axis=0) / counts.sum()
    per = emd_per_client(counts)
    assert per[0] == pytest.approx(2 - 2 * p[1])
    # a hand computation of the weighted mean
    q1 = counts[1] / counts[1].sum()
    by_hand = (10 * (2 - 2 * p[1]) + 90 * np.abs(q1 - p).sum()) / 100
    assert emd(counts) == pytest.approx(by_hand)


def test_emd_population_is_size_weighted():
    """p = sum_i (n_i/n) q_i: a big client dominates the population."""
    counts = np.array([[90, 0], [0, 10]])
    q, p, n_i = client_distributions(counts)
    np.testing.assert_allclose(p, [0.9, 0.1])
    np.testing.assert_allclose(n_i, [90, 10])
    np.testing.assert_allclose(emd_per_client(counts), [0.2, 1.8])
    assert emd(counts) == pytest.approx(0.9 * 0.2 + 0.1 * 1.8)


def test_emd_empty_clients_and_matrix():
    counts = np.array([[0, 0], [4, 0], [0, 4]])
    np.testing.assert_allclose(emd_per_client(counts), [0.0, 1.0, 1.0])
    assert emd(counts) == pytest.approx(1.0)
    assert emd(np.zeros((3, 2))) == 0.0


@PROPS
@given(counts=count_matrices())
def test_emd_bounds(counts):
    per = emd_per_client(counts)
    assert np.all(per >= -1e-12) and np.all(per <= 2 + 1e-12)
    e = emd(counts)
    assert -1e-12 <= e <= 2 + 1e-12
    # the mean lies between the smallest and largest per-client value (of non-empty clients)
    nonempty = counts.sum(axis=1) > 0
    if nonempty.any():
        assert per[nonempty].min() - 1e-12 <= e <= per[nonempty].max() + 1e-12
    # scaling every count leaves the distributions, hence the EMD, unchanged
    assert emd(counts * 3) == pytest.approx(e, abs=1e-12)


# ---- Jensen-Shannon and Hellinger ------------------------------------------------------------------------
@PROPS
@given(counts=count_matrices(allow_empty_rows=False))
def test_jensen_shannon_matches_scipy(counts):
    js = jensen_shannon_per_client(counts)
    q, p, _ = client_distributions(counts)
    assert np.all(js >= 0) and np.all(js <= 1 + 1e-12)
    for i in range(counts.shape[0]):
        expected = jensenshannon(q[i], p, base=2)
        assert js[i] == pytest.approx(expected, abs=1e-7)


def test_jensen_shannon_extremes():
    np.testing.assert_allclose(jensen_shannon_per_client(np.array([[3, 3], [2, 2]])), 0.0, atol=1e-12)
    # one-hot client vs the 50/50 population, m = (0.75, 0.25):
    # JSD = 0.5 * log2(1 / 0.75) + 0.5 * (0.5 * log2(0.5 / 0.75) + 0.5 * log2(0.5 / 0.25))
    counts = np.array([[10, 0], [0, 10]])
    jsd = 0.5 * np.log2(1 / 0.75) + 0.5 * (0.5 * np.log2(0.5 / 0.75) + 0.5 * np.log2(2.0))
    expected = np.sqrt(jsd)
    assert expected == pytest.approx(jensenshannon([1, 0], [0.5, 0.5], base=2))
    np.testing.assert_allclose(jensen_shannon_per_client(counts), [expected, expected])
    # empty client -> 0
    assert jensen_shannon_per_client(np.array([[0, 0], [1, 2]]))[0] == 0.0


@PROPS
@given(counts=count_matrices())
def test_hellinger_matches_formula(counts):
    h = hellinger_per_client(counts)
    q, p, sizes = client_distributions(counts)
    direct = np.sqrt(0.5 * ((np.sqrt(q) - np.sqrt(p)[None, :]) ** 2).sum(axis=1))
    direct = np.where(sizes > 0, direct, 0.0)
    np.testing.assert_allclose(h, direct, atol=1e-7)
    assert np.all(h >= 0) and np.all(h <= 1 + 1e-12)


def test_hellinger_extremes():
    np.testing.assert_allclose(hellinger_per_client(np.array([[1, 2], [2, 4]])), 0.0, atol=1e-7)
    # one-hot vs 50/50: sqrt(1 - sqrt(0.5))
    np.testing.assert_allclose(hellinger_per_client(np.array([[7, 0], [0, 7]])), np.sqrt(1 - np.sqrt(0.5)))


# ---- size statistics ------------------------------------------------------------------------------
def test_gini_hand_values():
    assert gini(np.full(7, 13)) == pytest.approx(0.0, abs=1e-12)
    assert gini(np.array([])) == 0.0
    assert gini(np.zeros(4)) == 0.0
    for n in (1, 2, 5, 100):
        x = np.zeros(n)
        x[-1] = 42
        assert gini(x) == pytest.approx((n - 1) / n)
    # [1, 2, 3]: mean absolute difference formula sum|xi-xj| / (2 n^2 mean) = 8 / (2*9*2) = 2/9
    assert gini(np.array([3, 1, 2])) == pytest.approx(2 / 9)


@PROPS
@given(x=st.lists(st.integers(0, 1000), min_size=1, max_size=30))
def test_gini_matches_mean_absolute_difference(x):
    a = np.asarray(x, dtype=float)
    g = gini(a)
    if a.sum() == 0:
        assert g == 0.0
        return
    expected = np.abs(a[:, None] - a[None, :]).sum() / (2 * a.size**2 * a.mean())
    assert g == pytest.approx(expected, abs=1e-9)
    assert -1e-12 <= g < 1
    assert gini(a[::-1]) == pytest.approx(g)


def test_size_stats():
    s = size_stats(np.array([1, 2, 3, 10]))
    assert set(s) == {"min", "median", "max", "mean", "std", "gini", "cv"}
    assert s["min"] == 1.0 and s["max"] == 10.0
    assert s["median"] == 2.5
    assert s["mean"] == 4.0
    assert s["std"] == pytest.approx(np.std([1, 2, 3, 10]))
    assert s["cv"] == pytest.approx(s["std"] / 4.0)
    assert s["gini"] == pytest.approx(gini(np.array([1, 2, 3, 10])))
    assert all(isinstance(v, float) for v in s.values())
    empty = size_stats(np.array([]))
    assert set(empty) == set(s) and all(v == 0.0 for v in empty.values())
    equal = size_stats(np.full(5, 8))
    assert equal["std"] == 0.0 and equal["gini"] == pytest.approx(0.0) and equal["cv"] == 0.0


def test_classes_per_client_and_label_matrix():
    counts = np.array([[0, 3, 1], [0, 0, 0], [2, 2, 2]])
    assert classes_per_client(counts).tolist() == [2, 0, 3]
    client_ids = np.array([0, 0, -1, 2, 1, 0])
    labels = np.array([1, 1, 0, 2, 0, 2])
    lm = label_matrix(client_ids, labels, 3, 3)
    assert lm.tolist() == [[0, 2, 1], [1, 0, 0], [0, 0, 1]]


# ---- sparse label counts (millions of clients) -----------------------------------------------------
@PROPS
@given(count_matrices(max_clients=12, max_classes=8))
def test_sparse_label_counts_match_the_dense_metrics(counts):
    from hetbench.metrics import LabelCounts

    lc = LabelCounts.from_dense(counts)
    assert lc.to_dense().tolist() == counts.tolist()
    assert lc.sizes().tolist() == counts.sum(axis=1).tolist()
    assert lc.classes_per_client().tolist() == classes_per_client(counts).tolist()
    _, p, _ = client_distributions(counts)
    np.testing.assert_allclose(lc.population(), p, atol=1e-12)
    assert lc.class_totals().tolist() == counts.sum(axis=0).tolist()
    np.testing.assert_allclose(lc.emd_per_client(), emd_per_client(counts), atol=1e-9)
    np.testing.assert_allclose(lc.jensen_shannon_per_client(), jensen_shannon_per_client(counts), atol=1e-6)
    np.testing.assert_allclose(lc.hellinger_per_client(), hellinger_per_client(counts), atol=1e-6)


@PROPS
@given(st.integers(1, 30), st.integers(1, 6), st.integers(0, 200), st.integers(0, 2**31))
def test_sparse_label_counts_from_rows_equal_the_label_matrix(k, c, n, seed):
    from hetbench.metrics import LabelCounts

    rng = np.random.default_rng(seed)
    cids, labels = rng.integers(-1, k, n), rng.integers(0, c, n)
    lc = LabelCounts.from_labels(cids, labels, k, c)
    assert lc.to_dense().tolist() == label_matrix(cids, labels, k, c).tolist()
    pick = rng.integers(0, k, 5)
    assert lc.to_dense(pick).tolist() == label_matrix(cids, labels, k, c)[pick].tolist()
    assert np.all(np.diff(lc.indptr) >= 0) and lc.indptr[-1] == lc.counts.size and np.all(lc.counts > 0)


def test_sparse_label_counts_never_hold_clients_times_classes():
    from hetbench.metrics import LabelCounts

    k, c = 1_000_000, 100_000  # dense: 10^11 cells
    cids = np.arange(k)
    lc = LabelCounts.from_labels(cids, cids % c, k, c)
    assert lc.counts.size == k and lc.sizes().sum() == k
    emd = lc.emd_per_client()
    np.testing.assert_allclose(emd, 2 - 2 / c)  # each client holds one class with population share 1/c


def test_quantile_stats():
    from hetbench.metrics import quantile_stats

    s = quantile_stats(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    assert s["min"] == 1.0 and s["max"] == 100.0 and s["median"] == 3.0
    assert s["p25"] == 2.0 and s["p75"] == 4.0 and s["mean"] == 22.0
    assert s["p01"] <= s["p10"] <= s["p25"] <= s["median"] <= s["p75"] <= s["p90"] <= s["p99"] <= s["max"]
    assert all(v == 0.0 for v in quantile_stats(np.array([])).values())
