"""Tests for hetbench.clustering (zeta, k-means) and the embedding-Dirichlet partitioner."""

from __future__ import annotations

import itertools

import datasets
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.clustering import kmeans, pca, standardise, zeta
from hetbench.errors import HetbenchError
from hetbench.metrics import emd
from hetbench.partitioners.embedding import EmbeddingPartitioner
from hetbench.table import SampleTable


# ---- helpers ----------------------------------------------------------------------------------
def brute_zeta(a, b) -> float:
    """Eq. 4 of Borazjani et al. literally: ordered pairs d != d', divided by 2 * C(n, 2)."""
    n = len(a)
    if n < 2:
        return 1.0
    agree = sum(
        (a[i] == a[j]) == (b[i] == b[j]) for i, j in itertools.permutations(range(n), 2)
    )
    return agree / (n * (n - 1))


def blobs(n_per: int, k: int, d: int, seed: int = 0, spread: float = 20.0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d)) * spread
    truth = np.repeat(np.arange(k), n_per)
    x = centers[truth] + rng.normal(size=(truth.size, d))
    perm = rng.permutation(truth.size)
    return x[perm].astype(np.float32), truth[perm]


def blob_table(n_per=100, k=10, d=8, seed=0):
    x, truth = blobs(n_per, k, d, seed)
    labels = np.zeros(truth.size, dtype=np.int64)  # one class: the split must come from the embeddings
    ds = datasets.Dataset.from_dict({"label": labels.tolist(), "emb": x.tolist()})
    table = SampleTable(
        splits={"train": ds}, label_column="label", class_names=["c0"], labels={"train": labels},
        source={"dataset": "mem"},
    )
    return table, truth


# ---- zeta -------------------------------------------------------------------------------------
labelings = st.integers(0, 14).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n), st.lists(st.integers(0, 4), min_size=n, max_size=n)
    )
)


@settings(max_examples=150, deadline=None)
@given(labelings)
def test_zeta_matches_brute_force_pair_count(ab):
    a, b = ab
    assert zeta(a, b) == pytest.approx(brute_zeta(a, b), abs=1e-12)
    assert zeta(a, b) == pytest.approx(zeta(b, a), abs=1e-15)  # symmetric


@settings(max_examples=50, deadline=None)
@given(labelings, st.permutations(range(4)))
def test_zeta_identity_and_relabelling(ab, perm):
    a, b = ab
    assert zeta(a, a) == 1.0
    renamed = [f"cluster-{perm[v]}" for v in a]  # new names (strings) for the same clustering
    assert zeta(renamed, a) == 1.0
    assert zeta(renamed, b) == pytest.approx(zeta(a, b), abs=1e-15)


def test_zeta_edge_cases_and_large_n():
    assert zeta([], []) == 1.0 and zeta([3], [7]) == 1.0
    assert zeta([0, 0], [0, 1]) == 0.0
    with pytest.raises(ValueError):
        zeta([0, 1], [0])
    rng = np.random.default_rng(0)
    n = 1_000_000
    a, b = rng.integers(0, 10, n), rng.integers(0, 10, n)
    # independent uniform clusterings into 10: agree with probability 0.1*0.1 + 0.9*0.9 = 0.82
    assert zeta(a, b) == pytest.approx(0.82, abs=1e-3)
    assert zeta(a, a) == 1.0


# ---- preprocessing and k-means -----------------------------------------------------------------
def test_standardise_and_pca():
    rng = np.random.default_rng(1)
    x = np.column_stack([rng.normal(5, 3, 500), np.full(500, 7.0), rng.normal(-2, 0.1, 500)])
    s = standardise(x)
    assert s.dtype == np.float32
    np.testing.assert_allclose(s.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(s.std(axis=0), [1, 0, 1], atol=1e-4)
    assert np.all(s[:, 1] == 0)
    p = pca(rng.normal(size=(300, 20)), 5, seed=0)
    assert p.shape == (300, 5) and p.dtype == np.float32
    assert pca(x, 10).shape == x.shape
    with pytest.raises(HetbenchError):
        pca(x, 0)


@pytest.mark.parametrize("method", ["lloyd", "minibatch"])
def test_kmeans_recovers_separated_blobs(method):
    x, truth = blobs(400, 5, 16, seed=3)
    labels, centers, inertia = kmeans(x, 5, seed=11, method=method)
    assert labels.dtype == np.int64 and centers.shape == (5, 16) and centers.dtype == np.float32
    assert zeta(labels, truth) > 0.99
    # labels and inertia are exact for the returned centres
    d2 = ((x[:, None, :].astype(np.float64) - centers[None].astype(np.float64)) ** 2).sum(-1)
    np.testing.assert_array_equal(labels, d2.argmin(1))
    assert inertia == pytest.approx(d2.min(1).sum(), rel=1e-6)
    # numbered by size (descending)
    sizes = np.bincount(labels, minlength=5)
    assert np.all(np.diff(sizes) <= 0)
    again = kmeans(x, 5, seed=11, method=method)
    np.testing.assert_array_equal(labels, again[0])
    np.testing.assert_array_equal(centers, again[1])
    assert inertia == again[2]


def test_kmeans_bad_input():
    x = np.zeros((4, 2), dtype=np.float32)
    with pytest.raises(HetbenchError):
        kmeans(x, 5, seed=0)
    with pytest.raises(HetbenchError):
        kmeans(x, 0, seed=0)
    with pytest.raises(HetbenchError):
        kmeans(x, 2, seed=0, method="elkan")
    labels, _, inertia = kmeans(x, 2, seed=0)  # fewer distinct points than clusters: still works
    assert labels.shape == (4,) and inertia == 0.0


# ---- the partitioner ------------------------------------------------------------------------
def clusters_matrix(part, clusters, k):
    return part.label_matrix(clusters, k)


@pytest.mark.parametrize("scheme", ["client", "class"])
def test_embedding_split_heterogeneity_follows_alpha(scheme):
    table, truth = blob_table(n_per=200, k=10, d=8)
    n = truth.size
    skewed = EmbeddingPartitioner(num_clients=20, alpha=0.01, clusters=10, scheme=scheme, embedder="column:emb")
    p = skewed.partition(table, seed=4)
    clusters = skewed.last_clusters["train"]
    assert clusters.shape == (n,) and clusters.dtype == np.int64
    assert zeta(clusters, truth) > 0.99  # K-means found the blobs
    assert np.all(p.assignment >= 0) and p.num_kept == n  # every sample assigned exactly once
    m = clusters_matrix(p, clusters, 10)
    assert m.sum() == n
    nonempty = m.sum(1) > 0
    # few clusters per client: most of a client's rows come from its top two clusters (the last rows
    # dealt, once the wanted clusters have run out, are spread over every client)
    top2 = np.sort(m[nonempty], axis=1)[:, -2:].sum(axis=1) / m[nonempty].sum(axis=1)
    assert np.median(top2) >= 0.9
    assert p.recipe["params"]["clusters"] == 10 and p.recipe["params"]["embedder"] == "column:emb"

    iid = EmbeddingPartitioner(num_clients=20, alpha=1000, clusters=10, scheme=scheme, embedder="column:emb")
    q = iid.partition(table, seed=4)
    assert q.num_kept == n
    mq = clusters_matrix(q, iid.last_clusters["train"], 10)
    assert np.all((mq > 0).sum(axis=1) >= 8)
    assert emd(mq) < 0.45 < 1.2 < emd(m)


def test_embedding_split_deterministic_and_seeded():
    table, _ = blob_table(n_per=60, k=10, d=6, seed=2)
    make = lambda: EmbeddingPartitioner(num_clients=12, alpha=0.3, clusters=10, embedder="column:emb")
    a, b = make().partition(table, seed=9), make().partition(table, seed=9)
    np.testing.assert_array_equal(a.assignment, b.assignment)
    assert a.fingerprint == b.fingerprint
    c = make().partition(table, seed=10)
    assert not np.array_equal(a.assignment, c.assignment)
    part = make()
    part.partition(table, seed=9)
    np.testing.assert_array_equal(part.last_clusters["train"], part.cluster_labels(table, "train", 
        int(np.random.default_rng(np.random.SeedSequence(9)).integers(0, 2**31 - 1))))


def test_embedding_split_with_pca_and_min_size():
    table, truth = blob_table(n_per=50, k=4, d=12, seed=5)
    part = EmbeddingPartitioner(
        num_clients=8, alpha=0.05, clusters=4, scheme="class", embedder="column:emb", pca_dim=3, min_size=10
    )
    p = part.partition(table, seed=1)
    assert p.client_sizes().min() >= 10 and p.num_kept == truth.size
    assert zeta(part.last_clusters["train"], truth) > 0.99
    assert part.params()["pca_dim"] == 3


def test_embedding_bad_parameters():
    table, _ = blob_table(n_per=3, k=2, d=4)
    with pytest.raises(HetbenchError):
        EmbeddingPartitioner(num_clients=2, clusters=7, embedder="column:emb").partition(table, seed=0)
    with pytest.raises(HetbenchError):
        EmbeddingPartitioner(clusters=0)
    with pytest.raises(HetbenchError):
        EmbeddingPartitioner(kmeans="elkan")
    with pytest.raises(HetbenchError):
        EmbeddingPartitioner(alpha=-1)
    with pytest.raises(HetbenchError):
        EmbeddingPartitioner(scheme="cluster")
    with pytest.raises(HetbenchError):
        EmbeddingPartitioner(num_clients=2, clusters=2, embedder="column:nope").partition(table, seed=0)
