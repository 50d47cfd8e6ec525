"""``hetbench reproduce --data cifar10=FOLDER``: a claim that declares the paper's data set runs on a copy of
it in Hugging Face's layout (written here, tiny: nothing downloads), records which data it ran on, and a
missing folder, a folder of another layout, an unknown key or a key no chosen claim takes is one line, exit
code 2, and nothing written."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from hetbench.reproduce.claims import claim_ids, load_claim

CIFAR10 = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def _write_parquet(folder, split: str, images: list, labels: list[int], names: list[str], column: str) -> None:
    import datasets
    from PIL import Image

    cells = []
    for array in images:
        buf = io.BytesIO()
        Image.fromarray(array).save(buf, format="PNG")
        cells.append({"bytes": buf.getvalue(), "path": None})
    features = datasets.Features({column: datasets.Image(), "label": datasets.ClassLabel(names=names)})
    folder.mkdir(parents=True, exist_ok=True)
    datasets.disable_progress_bars()  # the command's stderr is what the tests read
    try:
        datasets.Dataset.from_dict({column: cells, "label": labels}, features=features).to_parquet(
            str(folder / f"{split}-00000-of-00001.parquet"))
    finally:
        datasets.enable_progress_bars()


@pytest.fixture(scope="module")
def cifar_copy(tmp_path_factory):
    """CIFAR-10's layout on the hub (``plain_text/{train,test}-*.parquet``, columns ``img`` and ``label``),
    with 8 training and 3 test images per class: 32 x 32 RGB, each class its own colour plus noise."""
    root = tmp_path_factory.mktemp("data") / "cifar10"
    rng = np.random.default_rng(0)
    for split, per_class in (("train", 8), ("test", 3)):
        labels = [c for c in range(10) for _ in range(per_class)]
        images = [np.clip(rng.normal(25 * c + 10, 20, (32, 32, 3)), 0, 255).astype(np.uint8) for c in labels]
        _write_parquet(root / "plain_text", split, images, labels, CIFAR10, "img")
    return root


def test_a_claim_runs_on_the_papers_data_set_when_given_and_says_so(run_cli, tmp_path, cifar_copy):
    code, _, err = run_cli("reproduce", "--smoke", "--claims", "hsu-label-skew", "--data", f"cifar10={cifar_copy}",
                           "--out", tmp_path / "o", "-q")
    assert code == 0, err
    claim = json.loads((tmp_path / "o" / "claims.json").read_text())["claims"][0]
    assert claim["data"] == {"cifar10": str(cifar_copy)} and claim["settings"]["source"] == str(cifar_copy)
    assert claim["facts"]["test_examples"] == 30  # CIFAR-10's own test split, not a hold-out of its training rows
    # without --data the same claim runs on its built-in source and records no data
    code, _, err = run_cli("reproduce", "--smoke", "--claims", "hsu-label-skew", "--out", tmp_path / "p", "-q")
    claim = json.loads((tmp_path / "p" / "claims.json").read_text())["claims"][0]
    assert code == 0 and "data" not in claim and claim["settings"]["source"] == "builtin:digits"


def test_the_claims_that_take_cifar10_are_hsus():
    assert [c for c in claim_ids() if load_claim(c).paper_data == "cifar10"] == ["hsu-fedavgm", "hsu-fedavgm-sensitivity", "hsu-label-skew"]


def _mnist_like(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "mnist"
    for split in ("train", "test"):
        labels = [c for c in range(10) for _ in range(2)]
        _write_parquet(folder, split, [rng.integers(0, 255, (28, 28), dtype=np.uint8) for _ in labels], labels,
                       [str(c) for c in range(10)], "image")
    return folder


@pytest.mark.parametrize("data, message", [
    (lambda tmp: f"cifar10={tmp / 'nowhere'}", "no such folder or file (and not a hub id)"),
    (lambda tmp: f"cifar10={_mnist_like(tmp)}", "is not CIFAR-10's layout: its images are L 28 x 28, not RGB 32 x 32"),
    (lambda tmp: "cifar100=/data/cifar100", "--data: unknown data set 'cifar100'; the data sets a claim can take: cifar10"),
    (lambda tmp: "cifar10", "--data 'cifar10' must be KEY=FOLDER_OR_HUB_ID"),
])
def test_bad_data_is_one_line_exit_2_and_nothing_written(run_cli, tmp_path, data, message):
    code, _, err = run_cli("reproduce", "--smoke", "--claims", "hsu-label-skew", "--data", data(tmp_path),
                           "--out", tmp_path / "o")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_data_no_chosen_claim_takes_is_refused(run_cli, tmp_path, cifar_copy):
    code, _, err = run_cli("reproduce", "--smoke", "--claims", "dapperfl-footprint", "--data", f"cifar10={cifar_copy}",
                           "--out", tmp_path / "o")
    assert code == 2 and "--data cifar10: none of the claims to run takes it (the claims that do: hsu-fedavgm, hsu-fedavgm-sensitivity, " \
                          "hsu-label-skew)" in err
    assert not (tmp_path / "o").exists()
