"""Declared roots hold (issue 25): a file under ``--raw-dir`` or ``--data-dir`` that is a symbolic link leading
out of that folder is never read: skipped, counted and listed in the report with its reason, and the build
goes on; a link that stays inside the folder is followed. (``--image-root``: test_builder_geo_images.py;
a build folder's shards: test_publish_verify.py and the train test below.)"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_fivek_recipe import _fivek
from test_real_devices import _jpeg, _phones

REASON = "a link leading outside {flag} (not read)"


def _dng(path, level: int, seed: int) -> None:
    from hetbench.isp.capture import RawCapture
    from hetbench.isp.dng import write_dng

    from test_fivek_recipe import CM

    rng = np.random.default_rng(seed)
    mosaic = np.clip(level + rng.normal(0, 150, (64, 96)), 0, 4095).astype(np.uint16)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_dng(RawCapture(mosaic, "RGGB", (256,) * 4, 4095, CM, (0.45, 1.0, 0.7), make="Canon", model="Canon EOS 5D",
                         capture_id=path.stem), path)


def _column(out, split, name):
    return [v for f in sorted((out / "data").glob(f"{split}-*.parquet")) for v in pq.read_table(f, columns=[name]).column(name).to_pylist()]


def _report(out):
    return json.loads((out / "report.json").read_text())


def test_iso_isp_raw_dir_skips_a_link_leading_out_and_follows_one_inside(tmp_path, run_cli):
    raws, elsewhere = tmp_path / "raws", tmp_path / "elsewhere"
    for i in range(5):
        _dng(raws / f"cap{i}.dng", 500 + 300 * i, i)
    _dng(elsewhere / "private.dng", 3000, 99)
    os.symlink(elsewhere / "private.dng", raws / "escape.dng")  # out of --raw-dir: never read
    (raws / "sub").mkdir()
    os.symlink(raws / "cap0.dng", raws / "sub" / "inner.dng")  # stays inside: used
    out = tmp_path / "out"
    code, stdout, err = run_cli("build", "iso-isp", "--stages", "wb", "--raw-dir", raws, "--size", "32", "--out", out)
    assert code == 0, err
    report = _report(out)
    assert report["num_skipped"] == 1
    assert [(os.path.basename(s["file"]), s["reason"]) for s in report["skipped"]] == [
        ("escape.dng", REASON.format(flag="--raw-dir"))]
    captures = set(_column(out, "train", "capture_id") + _column(out, "test", "capture_id"))
    assert captures == {"cap0", "cap1", "cap2", "cap3", "cap4", "inner"}
    assert "1 capture skipped: " in stdout and "escape.dng (" in stdout  # named in the summary, with its reason
    assert run_cli("verify", out)[0] == 0  # the rebuild skips the same link


def test_iso_isp_when_every_raw_file_leads_out_is_one_line_exit_2(tmp_path, run_cli):
    raws, elsewhere = tmp_path / "raws", tmp_path / "elsewhere"
    raws.mkdir()
    for i in range(3):
        _dng(elsewhere / f"p{i}.dng", 800, i)
        os.symlink(elsewhere / f"p{i}.dng", raws / f"p{i}.dng")
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb", "--raw-dir", raws, "--size", "32", "--out", tmp_path / "o", "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "outside --raw-dir" in err, err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def _fivek_with_escape(tmp_path):
    """A FiveK copy whose photograph a0002 is a link to a DNG out of the folder (under the same name)."""
    raw = _fivek(tmp_path / "fk")
    inside = raw / "fivek_dataset" / "raw_photos" / "HQa1to700" / "photos" / "a0002-kme_102.dng"
    outside = tmp_path / "elsewhere" / inside.name
    outside.parent.mkdir()
    shutil.move(inside, outside)
    os.symlink(outside, inside)
    return raw


def test_fivek_recipe_skips_a_dng_leading_out_of_raw_dir(tmp_path, run_cli):
    raw = _fivek_with_escape(tmp_path)
    out = tmp_path / "out"
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb", "--recipe", "fivek-subject", "--raw-dir", raw, "--size", "32",
                           "--test-fraction", "0.34", "--out", out, "-q")
    assert code == 0, err
    skipped = {os.path.basename(s["file"]): s["reason"] for s in _report(out)["skipped"]}
    assert skipped == {"a0002-kme_102.dng": REASON.format(flag="--raw-dir")}
    assert "a0002-kme_102" not in set(_column(out, "train", "capture_id") + _column(out, "test", "capture_id"))


def test_fivek_cameras_skips_a_dng_leading_out_of_data_dir(tmp_path, run_cli):
    raw = _fivek_with_escape(tmp_path)
    out = tmp_path / "out"
    code, _, err = run_cli("build", "real-devices", "--recipe", "fivek-cameras", "--data-dir", raw, "--size", "32",
                           "--out", out, "-q")
    assert code == 0, err
    report = _report(out)
    listed = {s["file"]: s["reason"] for s in report["skipped"]}
    assert listed["fivek_dataset/raw_photos/HQa1to700/photos/a0002-kme_102.dng"] == REASON.format(flag="--data-dir")
    assert "a0002-kme_102" not in set(_column(out, "train", "capture_id") + _column(out, "test", "capture_id"))


def test_a_categories_file_leading_out_is_one_line_exit_2(tmp_path, run_cli):
    raw = _fivek(tmp_path / "fk")
    cats = raw / "fivek_dataset" / "categories.txt"
    shutil.move(cats, tmp_path / "categories.txt")
    os.symlink(tmp_path / "categories.txt", cats)
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb", "--recipe", "fivek-subject", "--raw-dir", raw,
                           "--size", "32", "--out", tmp_path / "o", "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "leading outside" in err, err
    assert not (tmp_path / "o").exists()


def test_real_devices_data_dir_skips_images_leading_out_and_follows_links_inside(tmp_path, run_cli):
    rng = np.random.default_rng(3)
    root = _phones(tmp_path / "hs", rng)
    secret = tmp_path / "elsewhere" / "secret.jpg"
    _jpeg(secret, rng)
    escape = root / "pixel2" / "Timber_Wolf" / "img1.jpg"
    escape.unlink()
    os.symlink(secret, escape)  # a link out of --data-dir: never read
    inner = root / "nexus5x" / "Timber_Wolf" / "img2.jpg"
    inner.unlink()
    os.symlink(root / "nexus5x" / "Timber_Wolf" / "img3.jpg", inner)  # stays inside: published
    out = tmp_path / "out"
    code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", "--data-dir", root, "--out", out, "-q")
    assert code == 0, err
    report = _report(out)
    assert report["num_skipped"] == 1
    assert report["skipped"] == [{"file": "pixel2/Timber_Wolf/img1.jpg", "reason": REASON.format(flag="--data-dir")}]
    published = [cell["bytes"] for split in ("train", "test") for cell in _column(out, split, "image")]
    assert secret.read_bytes() not in published
    assert published.count((root / "nexus5x" / "Timber_Wolf" / "img3.jpg").read_bytes()) == 2


def test_real_devices_a_linked_folder_leading_out_is_skipped_image_by_image(tmp_path, run_cli):
    rng = np.random.default_rng(4)
    root = _phones(tmp_path / "hs", rng)
    moved = tmp_path / "elsewhere" / "Timber_Wolf"
    moved.parent.mkdir()
    shutil.move(root / "pixel2" / "Timber_Wolf", moved)
    os.symlink(moved, root / "pixel2" / "Timber_Wolf")
    out = tmp_path / "out"
    code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", "--data-dir", root, "--out", out, "-q")
    assert code == 0, err
    report = _report(out)
    assert report["num_skipped"] == 6
    assert {s["reason"] for s in report["skipped"]} == {REASON.format(flag="--data-dir")}
    assert all(s["file"].startswith("pixel2/Timber_Wolf/") for s in report["skipped"])
