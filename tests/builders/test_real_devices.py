"""``hetbench build real-devices`` on layout-faithful folders (issue 17): ImageNet-ES as the authors'
loaders read it, the HeteroSwitch phones in the layout its recipe documents. Images are written by
the tests; nothing is downloaded."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

WNIDS = ("n01443537", "n01629819", "n01641577")


def _jpeg(path, rng, size=(18, 22)):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (*size, 3), dtype=np.uint8)).save(path, format="JPEG", quality=90)


@pytest.fixture(scope="module")
def es_dir(tmp_path_factory):
    """es-test/param_control/{l1,l5}/param_{1,2,27}/<wnid>/ILSVRC2012_val_*.JPEG: 4 images per class,
    the same file names under every light and setting (the displayed images)."""
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("es") / "ImageNet-ES"
    for light in ("l1", "l5"):
        for k in (1, 2, 27):
            for c, wnid in enumerate(WNIDS):
                for i in range(4):
                    _jpeg(root / "es-test" / "param_control" / light / f"param_{k}" / wnid
                          / f"ILSVRC2012_val_{100 * c + i:08d}.JPEG", rng)
    return root


@pytest.fixture(scope="module")
def es_build(es_dir, tmp_path_factory):
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("es-out") / "split"
    with pytest.raises(SystemExit) as exc:
        main(["build", "real-devices", "--recipe", "imagenet-es", "--data-dir", str(es_dir), "--clients-per-device", "2",
              "--out", str(out), "-q"])
    assert exc.value.code == 0
    return out


def test_imagenet_es_devices_are_light_and_setting_with_the_published_numbers_beside(es_build):
    report = json.loads((es_build / "report.json").read_text())
    assert sorted(report["devices"]) == [f"{light}/param_{k}" for light in ("l1", "l5") for k in (1, 2, 27)]
    assert report["devices"]["l5/param_27"]["setting"] == {"light": "light off", "iso": 16000, "shutter": "1/1000",
                                                             "aperture": "f/16"}
    assert all(d["clients"] == 2 for d in report["devices"].values())
    assert report["corpus"]["published"] == {"images": 54000, "classes": 200, "devices": 54, "settings": 27, "lights": 2}
    assert report["corpus"]["images"] == 72 and report["corpus"]["classes"] == 3
    assert report["num_clients"] == 12


def test_a_displayed_image_is_never_in_train_and_test(es_build):
    train = pq.read_table(sorted((es_build / "data").glob("train-*.parquet"))).to_pydict()
    test = pq.read_table(sorted((es_build / "data").glob("test-*.parquet"))).to_pydict()
    assert set(train["capture_id"]).isdisjoint(test["capture_id"])
    assert set(test["client_id"]) == {-1}
    # every device photographed every test capture: per-device test sets are the same scenes
    by_device = {}
    for dev, cap in zip(test["device"], test["capture_id"]):
        by_device.setdefault(dev, set()).add(cap)
    assert len({frozenset(v) for v in by_device.values()}) == 1 and len(by_device) == 6


def test_the_card_carries_the_licence_and_both_papers_and_verify_passes(es_build, run_cli):
    card = (es_build / "README.md").read_text()
    assert "license: cc-by-4.0" in card
    assert "baek2024unexplored" in card and "kim2024heteroswitch" in card
    assert "ImageNet terms" in card
    code, out, _ = run_cli("verify", es_build)
    assert code == 0 and out.startswith("OK"), out


def test_published_images_are_the_files_bytes_unless_resized(es_dir, es_build, tmp_path, run_cli):
    import io

    from PIL import Image

    train = pq.read_table(sorted((es_build / "data").glob("train-*.parquet")), columns=["image", "sample_id"]).to_pylist()
    for row in train[:5]:
        assert row["image"]["bytes"] == (es_dir / row["sample_id"]).read_bytes()
    out = tmp_path / "small"
    code, _, err = run_cli("build", "real-devices", "--recipe", "imagenet-es", "--data-dir", es_dir, "--size", "16",
                           "--num-proc", "2", "--out", out, "-q")
    assert code == 0, err
    img = pq.read_table(sorted((out / "data").glob("train-*.parquet")), columns=["image"]).column("image")[0].as_py()
    assert Image.open(io.BytesIO(img["bytes"])).size == (16, 16)


def _phones(root, rng, layout="flat"):
    """Three phones x two classes x six displayed images; ``nested``: Kaggle-like download folders."""
    for phone in ("GalaxyS6", "Nexus5X", "Pixel2"):
        base = root if layout == "flat" else root / ("heteroswitch-nexus5x-galaxys6" if phone != "Pixel2" else "heteroswitch-pixel2")
        for cls in ("Timber_Wolf", "n02085620"):  # a class by name (underscores) and one by wnid (Chihuahua)
            for i in range(6):
                _jpeg(base / phone.lower() / cls / f"img{i}.jpg", rng)
    return root


@pytest.mark.parametrize("layout", ["flat", "nested"])
def test_heteroswitch_phones_by_market_share_with_captures_across_phones(tmp_path, run_cli, layout):
    rng = np.random.default_rng(1)
    root = _phones(tmp_path / "hs", rng, layout)
    (root / "notes.txt").write_text("a file beside the phone folders is not a folder: ignored")
    out = tmp_path / "out"
    code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", "--data-dir", root,
                           "--clients", "10", "--test-fraction", "0.34", "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    clients = {d: v["clients"] for d, v in report["devices"].items()}
    # market shares 38 / 4 / 3 %: 1 each, then the 7 left by largest remainder of 7 x (38, 4, 3) / 45 = 5.91, 0.62, 0.47
    assert clients == {"GalaxyS6": 7, "Nexus5X": 2, "Pixel2": 1}
    assert report["corpus"]["published"] == {"phones": 9, "classes": 12}
    test = pq.read_table(sorted((out / "data").glob("test-*.parquet")), columns=["capture_id", "device"]).to_pydict()
    caps = {}
    for cap, dev in zip(test["capture_id"], test["device"]):
        caps.setdefault(cap, set()).add(dev)
    assert caps and all(devs == {"GalaxyS6", "Nexus5X", "Pixel2"} for devs in caps.values())
    card = (out / "README.md").read_text()
    assert "license: other" in card and "license_name: heteroswitch-dataset" in card and "kim2024heteroswitch" in card
    labels = json.loads((out / "hetbench.json").read_text())["class_names"]
    assert labels == ["Chihuahua", "Timber Wolf"]
    assert run_cli("verify", out)[0] == 0


def test_an_unreadable_image_is_skipped_and_listed(tmp_path, run_cli):
    root = _phones(tmp_path / "hs", np.random.default_rng(2))
    bad = root / "pixel2" / "Timber_Wolf" / "img1.jpg"
    bad.write_bytes(b"not a jpeg")
    out = tmp_path / "out"
    code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", "--data-dir", root, "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["num_skipped"] == 1 and report["skipped"][0]["file"] == "pixel2/Timber_Wolf/img1.jpg"
    assert report["skipped"][0]["reason"].startswith("unreadable image")


@pytest.mark.parametrize("case, expect", [
    ("no-part", "does not hold es-test/param_control"),
    ("light", "l3: expected the light folders l1 and l5"),
    ("param", "param_28: expected folders param_1 .. param_27"),
    ("class", "dogs: expected class folders named by wnid"),
])
def test_an_imagenet_es_folder_off_layout_names_the_path(tmp_path, run_cli, case, expect):
    rng = np.random.default_rng(3)
    root = tmp_path / "es"
    base = root / "es-test" / "param_control"
    if case == "no-part":
        _jpeg(root / "es-val" / "param_control" / "l1" / "param_1" / WNIDS[0] / "a.JPEG", rng)
    else:
        _jpeg(base / "l1" / "param_1" / WNIDS[0] / "a.JPEG", rng)
        extra = {"light": base / "l3" / "param_1" / WNIDS[0], "param": base / "l1" / "param_28" / WNIDS[0],
                 "class": base / "l1" / "param_1" / "dogs"}[case]
        _jpeg(extra / "b.JPEG", rng)
    out = tmp_path / "out"
    code, stdout, err = run_cli("build", "real-devices", "--recipe", "imagenet-es", "--data-dir", root, "--out", out)
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("args, expect", [
    (["--data-dir", "{missing}"], "is not a folder"),
    (["--clients", "6", "--clients-per-device", "2"], "not both"),
    (["--clients", "2"], "fewer than the 3 devices"),
])
def test_bad_options_are_one_line(tmp_path, run_cli, args, expect):
    root = _phones(tmp_path / "hs", np.random.default_rng(4))
    args = [a.format(missing=tmp_path / "nowhere") for a in args]
    if "--data-dir" not in args:
        args = ["--data-dir", str(root), *args]
    code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", *args, "--out", tmp_path / "o")
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1


def test_a_heteroswitch_folder_with_a_stray_class_names_it(tmp_path, run_cli):
    root = _phones(tmp_path / "hs", np.random.default_rng(5))
    _jpeg(root / "galaxys6" / "Zebra" / "x.jpg", np.random.default_rng(6))
    code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", "--data-dir", root,
                           "--out", tmp_path / "o")
    assert code == 2 and "galaxys6/Zebra: not one of the 12 class folders" in err


def test_the_card_names_the_corpus_folder_never_its_path(es_dir, es_build):
    """The card is published: it names the local copy by its folder's name, not the builder's absolute path."""
    card = (es_build / "README.md").read_text()
    assert f"local copy '{es_dir.name}'" in card and str(es_dir.parent) not in card
