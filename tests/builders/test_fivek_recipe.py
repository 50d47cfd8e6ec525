"""``build iso-isp --recipe fivek-subject|fivek-light`` on a folder in MIT-Adobe FiveK's released layout
(issue 17): DNGs written with hetbench's own DNG writer, ``categories.txt`` in the format FiveK's
loaders parse. Nothing is downloaded."""

from __future__ import annotations

import json

import numpy as np
import pytest

CM = np.array([[0.6461, -0.1164, -0.0857], [-0.3825, 1.1597, 0.2534], [-0.0416, 0.1540, 0.6039]])
SUBJECTS = ("nature", "people", "man_made")
LIGHTS = ("sun_sky", "artificial")


CAMERAS = (("Canon", "Canon EOS 5D"), ("NIKON CORPORATION", "NIKON D70"), ("Leica", "M8"))


def _camera(i: int) -> tuple[str, str]:
    """Photos 1-6 Canon, 7-10 Nikon, 11-12 Leica."""
    return CAMERAS[0] if i <= 6 else CAMERAS[1] if i <= 10 else CAMERAS[2]


def _fivek(root, n=12, corrupt=False):
    """``n`` photographs in two HQa folders from three cameras; photo n has no subject (None)."""
    from hetbench.isp.capture import RawCapture
    from hetbench.isp.dng import write_dng

    rng = np.random.default_rng(0)
    base = root / "fivek_dataset"
    lines = []
    for i in range(1, n + 1):
        folder = "HQa1to700" if i <= n // 2 else "HQa701to1400"
        name = f"a{i:04d}-kme_{100 + i}"
        photos = base / "raw_photos" / folder / "photos"
        photos.mkdir(parents=True, exist_ok=True)
        level = 400 + 250 * (i % 5)
        mosaic = np.clip(level + rng.normal(0, 150, (64, 96)), 0, 4095).astype(np.uint16)
        make, model = _camera(i)
        write_dng(RawCapture(mosaic, "RGGB", (256,) * 4, 4095, CM, (0.45, 1.0, 0.7), make=make, model=model,
                             capture_id=name), photos / f"{name}.dng")
        subject = "None" if i == n else SUBJECTS[i % 3]
        lines.append(f"{name},outdoor,day,{LIGHTS[i % 2]},{subject}")
    (base / "categories.txt").write_text("\n".join(lines) + "\n")
    (base / "raw_photos" / "fivek.lrcat").write_bytes(b"a Lightroom catalogue: not a RAW file")
    if corrupt:
        (base / "raw_photos" / "HQa1to700" / "photos" / "a0001-kme_101.dng").write_bytes(b"II*\x00truncated")
    return root


@pytest.fixture(scope="module")
def fivek_dir(tmp_path_factory):
    return _fivek(tmp_path_factory.mktemp("fivek"))


def _build(run_cli, raw_dir, out, recipe="fivek-subject", *extra):
    return run_cli("build", "iso-isp", "--stages", "wb", "--recipe", recipe, "--raw-dir", raw_dir, "--size", "32",
                   "--test-fraction", "0.34", "--out", out, "-q", *extra)


def test_fivek_subject_labels_devices_card_and_verify(fivek_dir, tmp_path, run_cli):
    out = tmp_path / "subject"
    code, _, err = _build(run_cli, fivek_dir, out)
    assert code == 0, err
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["class_names"] == ["man_made", "nature", "people"]
    assert manifest["recipe"]["build"]["params"]["recipe"] == "fivek-subject"
    report = json.loads((out / "report.json").read_text())
    corpus = report["corpus"]
    assert corpus["labelled"] == 11 and corpus["listed"] == 12 and corpus["classes"] == 3
    assert corpus["unlabelled"] == [{"file": "raw_photos/HQa701to1400/photos/a0012-kme_112.dng",
                                     "reason": "no subject in categories.txt"}]
    assert corpus["published"]["photos"] == 5000 and corpus["published"]["classes"] == 5
    assert "baseline" in report["devices"] and all(d["clients"] == 1 for d in report["devices"].values())
    card = (out / "README.md").read_text()
    assert "license_name: mit-adobe-fivek" in card and "LicenseAdobeMIT.txt" in card
    assert "bychkovsky2011learning" in card and "kim2024heteroswitch" in card
    code, stdout, _ = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), stdout


def test_fivek_light_labels_by_light(fivek_dir, tmp_path, run_cli):
    out = tmp_path / "light"
    code, _, err = _build(run_cli, fivek_dir, out, "fivek-light")
    assert code == 0, err
    assert json.loads((out / "hetbench.json").read_text())["class_names"] == ["artificial", "sun_sky"]
    assert json.loads((out / "report.json").read_text())["corpus"]["unlabelled"] == []


def test_a_corrupt_dng_is_skipped_and_listed(tmp_path, run_cli):
    raw = _fivek(tmp_path / "fk", corrupt=True)
    out = tmp_path / "out"
    code, _, err = _build(run_cli, raw, out)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["num_skipped"] == 1 and report["skipped"][0]["file"].endswith("a0001-kme_101.dng")


@pytest.mark.parametrize("case, expect", [
    ("no-categories", "categories.txt is missing"),
    ("stray-folder", "extras: not an HQa<first>to<last> folder"),
    ("unlisted", "a0099-new.dng: not listed in"),
    ("bad-line", "line 2: expected 'basename,location,time,light,subject'"),
    ("bad-value", "line 1: subject 'dogs' is not one of"),
    ("labels", "takes its labels from the corpus"),
])
def test_a_fivek_folder_off_layout_is_one_line_naming_it(tmp_path, run_cli, case, expect):
    raw = _fivek(tmp_path / "fk", n=4)
    base = raw / "fivek_dataset"
    extra: list[str] = []
    if case == "no-categories":
        (base / "categories.txt").unlink()
    elif case == "stray-folder":
        (base / "raw_photos" / "extras").mkdir()
    elif case == "unlisted":
        src = base / "raw_photos" / "HQa1to700" / "photos" / "a0001-kme_101.dng"
        (src.parent / "a0099-new.dng").write_bytes(src.read_bytes())
    elif case == "bad-line":
        (base / "categories.txt").write_text("a0001-kme_101,outdoor,day,sun_sky,nature\nbroken line\n")
    elif case == "bad-value":
        (base / "categories.txt").write_text("a0001-kme_101,outdoor,day,sun_sky,dogs\n")
    else:
        labels = tmp_path / "labels.csv"
        labels.write_text("file,label\n")
        extra = ["--labels", str(labels)]
    out = tmp_path / "out"
    code, _, err = _build(run_cli, raw, out, "fivek-subject", *extra)
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not out.exists()


def test_a_fivek_recipe_without_raw_dir_says_what_it_needs(tmp_path, run_cli):
    code, _, err = run_cli("build", "iso-isp", "--recipe", "fivek-light", "--out", tmp_path / "o")
    assert code == 2 and "--recipe fivek-light needs --raw-dir" in err


def test_fivek_cameras_one_device_per_camera_model(fivek_dir, tmp_path, run_cli):
    """build real-devices --recipe fivek-cameras: each RAW rendered once by the baseline ISP, its device
    the camera its Make/Model tags name, clients by the cameras' numbers of photographs."""
    out = tmp_path / "cameras"
    code, _, err = run_cli("build", "real-devices", "--recipe", "fivek-cameras", "--data-dir", fivek_dir, "--size", "32",
                           "--clients", "5", "--test-fraction", "0.25", "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    # 11 labelled photographs: Canon 6, NIKON D70 4, Leica M8 1 (photo 12 has no subject: left out and listed)
    assert {name: d["weight"] for name, d in report["devices"].items()} == {"Canon EOS 5D": 6.0, "NIKON D70": 4.0, "Leica M8": 1.0}
    assert sum(d["clients"] for d in report["devices"].values()) == 5
    assert all(d["train_images"] >= d["clients"] for d in report["devices"].values())  # a single-photo camera trains
    assert {s["reason"] for s in report["skipped"]} == {"no subject in categories.txt"}
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["class_names"] == ["man_made", "nature", "people"]
    assert "license_name: mit-adobe-fivek" in (out / "README.md").read_text()
    code, stdout, _ = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), stdout
