"""Progress of the embedding partitioner's long steps: the task embedder (decoding, training with its loss,
embedding) and K-means (Lloyd iterations, mini-batch steps) show bars on stderr inside
``show_progress`` (what ``make_split`` opens unless quiet) and nothing outside; the bars change no number."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cv2")

from hetbench.clustering import kmeans  # noqa: E402
from hetbench.embed import embed_table  # noqa: E402
from hetbench.progress import show_progress  # noqa: E402
from hetbench.sources import load_table  # noqa: E402


@pytest.fixture(scope="module")
def small_digits():
    t = load_table("builtin:digits")
    t.splits["train"] = t.splits["train"].select(range(96))
    t.labels["train"] = t.labels["train"][:96]
    return t


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_task_embedder_bars_and_same_embedding(small_digits, one_thread, capsys):
    quiet = embed_table(small_digits, "train", "task:1", quiet=None)  # outside show_progress: silent
    assert capsys.readouterr() == ("", "")
    with show_progress():
        shown = embed_table(small_digits, "train", "task:1", quiet=None)
    out, err = capsys.readouterr()
    assert out == ""
    assert np.array_equal(quiet, shown)
    assert "task embedder: decoding 96 images" in err and "96/96" in err
    assert "task embedder: training" in err and "batch 2/2" in err  # 1 epoch of 2 batches of 64
    assert "epoch 1/1  loss " in err
    assert "task embedder: embedding 96 images" in err


@pytest.mark.parametrize("method, unit", [("lloyd", "iteration"), ("minibatch", "step")])
def test_kmeans_bar_counts_its_steps_and_changes_nothing(method, unit, capsys):
    x = np.random.default_rng(0).normal(size=(1000, 8)).astype(np.float32)
    x[:500] += 3.0
    quiet = kmeans(x, 6, seed=3, method=method)
    assert capsys.readouterr() == ("", "")
    with show_progress():
        shown = kmeans(x, 6, seed=3, method=method)
    out, err = capsys.readouterr()
    assert out == ""  # scikit-learn's verbose lines are read, not printed
    assert np.array_equal(quiet[0], shown[0]) and np.array_equal(quiet[1], shown[1]) and quiet[2] == shown[2]
    assert f"k-means: 6 clusters ({method})" in err
    done = [line for line in err.splitlines() if f" {unit} " in line]
    assert len(done) == 1 and "inertia" in done[0]
    n, total = map(int, done[0].split(f" {unit} ")[1].split()[0].split("/"))
    assert n == total >= 1  # a fit that converged early ends the bar full
