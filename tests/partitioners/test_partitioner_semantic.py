"""Tests for the semantic (label-wise GMM + KL matching) partitioner."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from hetbench.errors import HetbenchError
from hetbench.partitioners.semantic import SemanticPartitioner, kl_diag, semantic_assign
from hetbench.sources import load_table

LABELS, MODES, PER_MODE, DIM = 3, 4, 75, 8


def submode_data(seed: int = 0):
    """3 labels x 300 samples in 8-D; each label has 4 well-separated sub-modes. Sub-mode j of every
    label sits near a shared centre G_j (plus a small per-label offset), so the KL matching should
    give each client one sub-mode index across all labels."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=(MODES, DIM)) * 20.0
    offsets = rng.normal(size=(LABELS, DIM)) * 2.0
    label = np.repeat(np.arange(LABELS), MODES * PER_MODE)
    mode = np.tile(np.repeat(np.arange(MODES), PER_MODE), LABELS)
    x = shared[mode] + offsets[label] + rng.normal(size=(label.size, DIM))
    perm = rng.permutation(label.size)
    return label[perm], mode[perm], x[perm].astype(np.float32)


def make_table(label, x):
    ds = datasets.Dataset.from_dict({"label": [int(v) for v in label], "emb": x.tolist()})
    return load_table(ds)


@pytest.fixture(scope="module")
def data():
    label, mode, x = submode_data()
    return make_table(label, x), label, mode


def test_every_sample_assigned_once(data):
    table, label, _ = data
    p = SemanticPartitioner(num_clients=4, embedder="column:emb").partition(table, seed=3)
    assert p.num_clients == 4 and p.num_kept == label.size
    assert p.client_names == ("client_0", "client_1", "client_2", "client_3")
    assert np.all((p.assignment >= 0) & (p.assignment < 4))
    assert sorted(np.concatenate(p.client_indices()).tolist()) == list(range(label.size))
    # every label's samples are all kept
    lm = p.label_matrix(table.labels["train"], table.num_classes)
    assert lm.sum(axis=0).tolist() == [MODES * PER_MODE] * LABELS


def test_semantic_coherence_and_matching(data):
    table, label, mode = data
    labels = table.labels["train"]
    p = SemanticPartitioner(num_clients=4, embedder="column:emb").partition(table, seed=0)
    a = p.assignment
    dominant = {}
    for c in range(LABELS):
        for k in range(4):
            sel = (labels == c) & (a == k)
            assert sel.any()
            share = np.bincount(mode[sel], minlength=MODES) / sel.sum()
            assert share.max() > 0.8
            dominant[c, k] = int(share.argmax())
    # cross-label matching: a client gets the same (shared) sub-mode for every label
    for k in range(4):
        assert len({dominant[c, k] for c in range(LABELS)}) == 1


def test_deterministic(data):
    table, _, _ = data
    part = SemanticPartitioner(num_clients=4, embedder="column:emb", pca_dim=4)
    a = part.partition(table, seed=7)
    b = SemanticPartitioner(num_clients=4, embedder="column:emb", pca_dim=4).partition(table, seed=7)
    assert np.array_equal(a.assignment, b.assignment)
    assert a.fingerprint == b.fingerprint
    assert a.recipe["method"] == "semantic"
    assert a.recipe["params"]["pca_dim"] == 4 and a.recipe["params"]["num_clients"] == 4
    assert part.last_components["train"].shape == a.assignment.shape


def test_small_label_leaves_clients_without_it():
    rng = np.random.default_rng(1)
    label = np.array([0] * 60 + [1] * 2)
    x = rng.normal(size=(label.size, 3))
    assignment, comps = semantic_assign(x, label, 5, np.random.default_rng(0))
    assert np.all(assignment >= 0)
    assert np.unique(assignment[label == 1]).size <= 2
    assert np.all(comps >= 0)


def test_single_client_and_kl():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(20, 2))
    assignment, _ = semantic_assign(x, np.arange(20) % 2, 1, np.random.default_rng(0))
    assert np.all(assignment == 0)
    m, v = np.array([[0.0, 1.0]]), np.array([[1.0, 2.0]])
    assert np.allclose(kl_diag(m, v, m, v), 0.0)
    # 1-D check: KL(N(0,1) || N(1,2)) = 0.5 * (log 2 + (1 + 1) / 2 - 1)
    assert np.isclose(kl_diag([[0.0]], [[1.0]], [[1.0]], [[2.0]])[0, 0], 0.5 * np.log(2.0))


@pytest.mark.parametrize("kwargs", [{"num_clients": 0}, {"pca_dim": 0}, {"max_iter": 0}, {"embedder": ""}])
def test_errors(kwargs):
    with pytest.raises(HetbenchError):
        SemanticPartitioner(**kwargs)
