"""The Fed-ISIC2019 recipe (issue 30, item 5) on a copy the test writes in the Hub mirror's layout
(``data/train-00000-of-00001.parquet`` and ``data/test-...`` with ``image``, ``label`` and an integer
``center``): one device per centre named in FLamby's order, FLamby's split kept, the licence and the
four papers on the card, the published counts beside the build's, verify passes; bad input is one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

CENTRES = ["BCN", "HAM_vidir_molemax", "HAM_vidir_modern", "HAM_rosendahl", "MSK", "HAM_vienna_dias"]
CLASSES = ["melanoma", "melanocytic nevus", "basal cell carcinoma", "actinic keratoses and intraepithelial carcinoma",
           "benign keratosis-like lesions", "dermatofibroma", "vascular lesions", "squamous cell carcinoma"]
#: training / test images per centre of the small copy (FLamby's order, decreasing like the real one)
SIZES = {0: (12, 4), 1: (8, 3), 2: (7, 3), 3: (6, 2), 4: (5, 2), 5: (4, 2)}


def _write_copy(root: Path) -> None:
    import datasets
    from PIL import Image

    rng = np.random.default_rng(0)
    features = datasets.Features({"image": datasets.Image(), "center": datasets.Value("int64"),
                                  "label": datasets.ClassLabel(names=CLASSES)})
    (root / "data").mkdir(parents=True)
    for split, which in (("train", 0), ("test", 1)):
        rows = {"image": [], "center": [], "label": []}
        for centre, sizes in SIZES.items():
            for k in range(sizes[which]):
                buf = io.BytesIO()  # a dermoscopy-like JPEG: short side 224 as in the mirror, tinted per centre
                img = np.clip(rng.normal(120 + 15 * centre, 30, (224, 256, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(img).save(buf, "JPEG", quality=85)
                rows["image"].append({"bytes": buf.getvalue(), "path": None})
                rows["center"].append(centre)
                rows["label"].append(int(k % 8))
        datasets.Dataset.from_dict(rows, features=features).to_parquet(str(root / "data" / f"{split}-00000-of-00001.parquet"))


@pytest.fixture(scope="module")
def isic_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub") / "fed-isic2019"
    _write_copy(root)
    return root


@pytest.fixture(scope="module")
def isic_build(isic_copy, tmp_path_factory):
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("builds") / "isic"
    try:
        main(["build", "real-devices", "--recipe", "fed-isic2019", "--dataset", str(isic_copy), "--out", str(out), "-q"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    return out


def test_one_device_per_centre_with_flambys_split_and_published_counts_beside(isic_build):
    import datasets

    report = json.loads((isic_build / "report.json").read_text())
    assert sorted(report["devices"]) == sorted(CENTRES)  # report.json sorts its keys; the clients keep FLamby's order
    assert [report["devices"][c]["train_images"] for c in CENTRES] == [SIZES[k][0] for k in range(6)]
    assert [report["devices"][c]["test_images"] for c in CENTRES] == [SIZES[k][1] for k in range(6)]
    corpus = report["corpus"]
    assert corpus["recipe"] == "fed-isic2019" and corpus["published"]["images"] == 23247 and corpus["devices"] == 6
    assert corpus["published"]["BCN train"] == 9930 and corpus["counts"]["BCN train"] == 12
    train = datasets.load_dataset(str(isic_build), split="train")
    test = datasets.load_dataset(str(isic_build), split="test")
    assert train.num_rows == sum(s[0] for s in SIZES.values()) and test.num_rows == sum(s[1] for s in SIZES.values())
    names = json.loads((isic_build / "hetbench.json").read_text())["client_names"]
    assert [n.split("/")[0] for n in names] == CENTRES  # one client per centre by default
    assert sorted(set(test["device"])) == sorted(CENTRES) and set(test["client_id"]) == {-1}  # shared, per centre
    assert train.features["label"].names == CLASSES
    assert "feature_shift" in report and report["feature_shift"]["groups"]["names"] == CENTRES


def test_the_card_carries_the_licence_the_papers_and_the_published_counts_and_verify_passes(isic_build, run_cli):
    card = (isic_build / "README.md").read_text()
    assert "license: cc-by-nc-4.0" in card
    for paper in ("terrail2022flamby", "tschandl2018ham10000", "combalia2019bcn20000", "codella2018skin"):
        assert paper in card
    assert "| BCN train | 9,930 | 12 |" in card and "| images | 23,247 | 58 |" in card
    assert str(isic_build.parent.parent) not in card  # the copy by its name, never its path
    manifest = json.loads((isic_build / "hetbench.json").read_text())
    assert manifest["recipe"]["build"]["params"]["dataset"].startswith("local:")  # no local path is published
    code, stdout, err = run_cli("verify", isic_build)
    assert code == 0 and stdout.startswith("OK"), stdout + err


def test_clients_are_allocated_by_training_images_and_can_be_mixed(isic_copy, tmp_path, run_cli):
    out = tmp_path / "n12"
    code, _, err = run_cli("build", "real-devices", "--recipe", "fed-isic2019", "--dataset", isic_copy, "--clients", "12",
                           "--purity", "0.5", "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    clients = [report["devices"][c]["clients"] for c in CENTRES]
    assert sum(clients) == 12 and clients[0] == max(clients) and min(clients) >= 1
    assert json.loads((out / "hetbench.json").read_text())["recipe"]["build"]["params"]["purity"] == 0.5


@pytest.mark.parametrize("extra, message", [
    ((), "give --dataset"),
    (("--data-dir", "."), "not --data-dir"),
    (("--size", "64"), "no --size"),
    (("--purity", "0.1"), "--purity must be in [1/G, 1]"),
])
def test_bad_options_are_one_line_and_exit_2(isic_copy, tmp_path, run_cli, extra, message):
    args = ["build", "real-devices", "--recipe", "fed-isic2019", "--out", tmp_path / "o", "-q", *extra]
    if "--data-dir" not in extra and extra != ():
        args += ["--dataset", isic_copy]
    code, _, err = run_cli(*args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists(), err


def test_a_copy_without_the_centre_column_names_it(tmp_path, run_cli):
    import datasets

    root = tmp_path / "bad" / "data"
    root.mkdir(parents=True)
    features = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=CLASSES)})
    for split in ("train", "test"):
        datasets.Dataset.from_dict({"image": [None], "label": [0]}, features=features).to_parquet(
            str(root / f"{split}-00000-of-00001.parquet"))
    code, _, err = run_cli("build", "real-devices", "--recipe", "fed-isic2019", "--dataset", root.parent,
                           "--out", tmp_path / "o", "-q")
    assert code == 2 and "has no 'center' column" in err, err
