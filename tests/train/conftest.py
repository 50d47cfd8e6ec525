"""Fixtures of the trainer's tests: tiny federated data sets (images in memory-mapped files, as
``load_federated`` gives them), and short runs on them."""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hetbench.train.algorithms import TrainConfig, make_algorithm
from hetbench.train.data import FederatedData
from hetbench.train.simulation import run_training


@pytest.fixture(scope="module")
def digits_split(tmp_path_factory):
    """A six-client Dirichlet split of the built-in digits, built by the CLI (one per test module)."""
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("split") / "digits"
    try:
        main(["partition", "dirichlet", "--clients", "6", "--alpha", "0.5", "--out", str(out), "-q"])
    except SystemExit as exc:
        assert not exc.code
    return out


@pytest.fixture
def one_thread():
    """One intra-op torch thread: the tiny problems here run as fast and do not spin against a busy machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


_FOLDER: list[Path] = []


def as_memmap(x: np.ndarray) -> np.ndarray:
    """``x`` as a read-only ``np.memmap`` of an ``.npy`` file in a temporary folder removed at exit."""
    if not _FOLDER:
        _FOLDER.append(Path(tempfile.mkdtemp(prefix="hetbench-tiny-data-")))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    path = _FOLDER[0] / f"{hashlib.sha256(x.tobytes() + str(x.shape).encode()).hexdigest()[:16]}.npy"
    if not path.exists():
        np.save(path, np.ascontiguousarray(x, dtype=np.uint8))
    return np.load(path, mmap_mode="r")


def make_tiny_data(sizes=(8, 8, 8, 8), classes=3, side=8, seed=0, skew=False) -> FederatedData:
    """Clients with ``sizes`` rows of random 8x8 grayscale images whose label shifts the mean (learnable);
    ``x_train`` / ``x_test`` are read-only memory maps, as :func:`load_federated` makes them."""
    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    if skew:  # client k holds mostly class k % classes
        y = np.concatenate([np.full(s, k % classes) for k, s in enumerate(sizes)])
        flip = rng.random(n) < 0.2
        y[flip] = rng.integers(0, classes, size=int(flip.sum()))
    else:
        y = rng.integers(0, classes, size=n)
    x = np.clip(rng.normal(80 + 50 * y[:, None, None, None], 30, size=(n, 1, side, side)), 0, 255).astype(np.uint8)
    cid = np.repeat(np.arange(len(sizes)), sizes)
    rows = [np.flatnonzero(cid == k) for k in range(len(sizes))]
    ny = 30
    yt = rng.integers(0, classes, size=ny)
    xt = np.clip(rng.normal(80 + 50 * yt[:, None, None, None], 30, size=(ny, 1, side, side)), 0, 255).astype(np.uint8)
    return FederatedData(
        name="tiny", path="tiny", fingerprint="0" * 64,
        x_train=as_memmap(x), y_train=torch.from_numpy(y.astype(np.int64)),
        x_test=as_memmap(xt), y_test=torch.from_numpy(yt.astype(np.int64)),
        client_ids=np.arange(len(sizes)), client_rows=rows, label_names=[str(c) for c in range(classes)],
        group_by="all", group_names=["all"], test_group=np.zeros(ny, dtype=np.int64),
        test_client=np.full(ny, -1), client_group=np.zeros(len(sizes), dtype=np.int64),
        mean=np.array([x.mean() / 255.0]), std=np.array([x.std() / 255.0]),
    )


def run_short(data, algo, rounds=1, **cfg):
    """``rounds`` rounds of ``algo`` (a name or an algorithm) on ``data``: (results document, final RunState)."""
    config = TrainConfig(rounds=rounds, eval_every=rounds, **{"batch_size": 4, "lr": 0.1, **cfg})
    doc, run = run_training(data, make_algorithm(algo) if isinstance(algo, str) else algo, config, return_state=True)
    return doc, run


@pytest.fixture
def tiny_data():
    """:func:`make_tiny_data`: ``tiny_data(sizes=(...), classes=3, side=8, seed=0, skew=False)``."""
    return make_tiny_data


@pytest.fixture
def train():
    """:func:`run_short`: ``train(data, algo, rounds=1, **config) -> (doc, run)``."""
    return run_short
