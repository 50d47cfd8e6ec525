"""The task embedder: a small CNN trained on the split's labels, penultimate layer as the embedding."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cv2")

from hetbench.errors import HetbenchError  # noqa: E402
from hetbench.sources import load_table  # noqa: E402
from hetbench.embed.task import SmallCNN, task_embeddings  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    return load_table("builtin:digits")


@pytest.fixture(scope="module")
def one_thread():
    # other test workers share the CPU; one intra-op thread is the fastest and keeps this file < 30 s
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def emb(digits, one_thread):
    return task_embeddings(digits, "train", epochs=3, seed=0)


def test_shape_dtype_finite(emb):
    assert emb.shape == (1797, 128)
    assert emb.dtype == np.float32
    assert np.isfinite(emb).all()
    assert emb.flags["C_CONTIGUOUS"]


def test_deterministic_whatever_the_callers_thread_count(digits, emb):
    """A second call with the same seed gives the same embeddings bit for bit, also on a machine with other
    cores (the caller's torch thread count: 1 for ``emb``, 3 here). One training serves both claims: the
    embedder fixes its own thread count, so a second call under the caller's 1 thread ran the same
    computation as this one (it was a test of its own, 5-90 s of training depending on the load)."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        again = task_embeddings(digits, "train", epochs=3, seed=0)
        assert torch.get_num_threads() == 3  # the caller's setting is restored
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(emb, again)


def test_embedding_carries_the_task(digits, emb):
    y = digits.labels["train"]
    means = np.stack([emb[y == c].mean(0) for c in range(digits.num_classes)])
    pred = ((emb[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
    assert (pred == y).mean() > 0.85


def test_global_torch_state_restored(digits, one_thread):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    det_before = torch.are_deterministic_algorithms_enabled()
    import dataclasses

    small = dataclasses.replace(
        digits,
        splits={"train": digits.splits["train"].select(range(200))},
        labels={"train": digits.labels["train"][:200]},
        _cache={},
    )
    out = task_embeddings(small, "train", epochs=1, seed=5)
    assert out.shape == (200, 128)
    assert torch.are_deterministic_algorithms_enabled() == det_before
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("epochs", [0, -1])
def test_bad_epochs(digits, epochs):
    with pytest.raises(HetbenchError, match="epoch"):
        task_embeddings(digits, "train", epochs=epochs)


def test_unknown_split(digits):
    with pytest.raises(HetbenchError, match="split"):
        task_embeddings(digits, "nope")


def test_one_class_rejected(digits):
    import dataclasses

    one = dataclasses.replace(digits, class_names=digits.class_names[:1])
    with pytest.raises(HetbenchError, match="two classes"):
        task_embeddings(one, "train")


def test_no_image_column(digits):
    import dataclasses

    ds = digits.splits["train"]
    img = next(c for c, f in ds.features.items() if type(f).__name__ == "Image")
    noimg = dataclasses.replace(digits, splits={"train": ds.remove_columns(img)}, _cache={})
    with pytest.raises(HetbenchError, match="image column"):
        task_embeddings(noimg, "train", epochs=1)


def test_small_cnn_features():
    model = SmallCNN(num_classes=5).eval()
    x = torch.rand(4, 3, 32, 32)
    with torch.no_grad():
        assert model.features(x).shape == (4, 128)
        assert model(x).shape == (4, 5)
