"""Bad images and bad crops (issue 25, item 10): an image that decodes to 400 million pixels, a truncated
image, a corrupt RAW, ``--crop-size 100000`` and a million crops. Each is one line and exit code 2 with
nothing left behind, or, inside a batch build that skips unreadable images, skipped, counted and listed."""

from __future__ import annotations

import io
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

RAW = Path(__file__).resolve().parents[3] / "shared" / "data" / "raw"


def huge_png(width: int = 20000, height: int = 20000) -> bytes:
    """A valid PNG header of ``width`` x ``height`` RGB pixels (a few hundred bytes: what decoding it
    would allocate is what the pixel bound refuses; the pixel data is cut short)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b""))


def _png(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


def _table(path: Path, bad: bytes, row: int = 7, n: int = 40) -> Path:
    """A parquet table of ``n`` 8 x 8 images and two labels whose row ``row`` holds ``bad``."""
    import datasets

    rng = np.random.default_rng(0)
    images = [_png(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)) for _ in range(n)]
    images[row] = bad
    feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b"])})
    datasets.Dataset.from_dict({"image": [{"bytes": b, "path": None} for b in images], "label": [i % 2 for i in range(n)]},
                               features=feats).to_parquet(str(path))
    return path


def _one_line_exit_2(result, needle: str, out: Path) -> str:
    code, stdout, err = result
    assert code == 2, (code, stdout, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hetbench: error:"), err
    assert needle in lines[0], lines[0]
    assert not out.exists()
    return lines[0]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    valid = _png(np.zeros((8, 8, 3), np.uint8))
    return {"huge": _table(d / "huge.parquet", huge_png()),
            "over_bound": _table(d / "over_bound.parquet", huge_png(12000, 12000)),  # under PIL's own error
            "truncated": _table(d / "truncated.parquet", valid[: len(valid) // 2])}


# ---- the pixel bound ------------------------------------------------------------------------------


def test_the_bound_is_documented_with_its_value():
    from hetbench.image_limits import MAX_PIXELS

    contract = (Path(__file__).resolve().parents[2] / "docs" / "output-contract.md").read_text()
    assert f"{MAX_PIXELS:,}" in contract and "Decoded image size" in contract


@pytest.mark.parametrize("size", [(20000, 20000), (12000, 12000)])
def test_pil_and_opencv_refuse_an_image_over_the_bound_before_decoding(size):
    from hetbench.image_limits import ImageTooLarge, decode_cv2, open_image

    data = huge_png(*size)
    with pytest.raises(ImageTooLarge, match="too large to decode"):
        open_image(data, "row 1")
    with pytest.raises(ImageTooLarge, match=f"{size[0] * size[1]:,} pixels"):
        decode_cv2(data)
    assert open_image(_png(np.zeros((4, 6, 3), np.uint8))).size == (6, 4)


@pytest.mark.parametrize("table", ["huge", "over_bound"])
def test_partition_embedding_refuses_a_huge_image_naming_its_row(table, tables, tmp_path, run_cli):
    out = tmp_path / "out"
    line = _one_line_exit_2(run_cli("partition", "embedding", "--dataset", tables[table], "--embedder", "pixels:8",
                                    "--clusters", "2", "--clients", "2", "--out", out, "-q"), "too large to decode", out)
    assert "row 7" in line and "134,217,728" in line


def test_partition_embedding_names_the_row_of_a_truncated_image(tables, tmp_path, run_cli):
    out = tmp_path / "out"
    line = _one_line_exit_2(run_cli("partition", "embedding", "--dataset", tables["truncated"], "--embedder", "pixels:8",
                                    "--clusters", "2", "--clients", "2", "--out", out, "-q"), "cannot read the image", out)
    assert "split 'train': row 7" in line


@pytest.mark.parametrize("table", ["huge", "truncated"])
def test_feature_noise_refuses_an_unreadable_image_naming_its_row(table, tables, tmp_path, run_cli):
    out = tmp_path / "out"
    line = _one_line_exit_2(run_cli("partition", "feature-noise", "--dataset", tables[table], "--clients", "2",
                                    "--out", out, "-q"), "training row 7", out)
    assert ("too large to decode" if table == "huge" else "cannot read the image") in line


def test_synthetic_colour_refuses_a_huge_image(tables, tmp_path, run_cli):
    out = tmp_path / "out"
    _one_line_exit_2(run_cli("build", "devices", "--synthetic-color", "2", "--dataset", tables["huge"], "--out", out,
                             "-q"), "too large to decode", out)


def test_train_refuses_a_huge_image_in_a_split(tables, tmp_path, run_cli):
    split = tmp_path / "split"
    code, _, err = run_cli("partition", "iid", "--dataset", tables["huge"], "--clients", "2", "--out", split, "-q")
    assert code == 0, err  # partitioning never decodes an image
    out = tmp_path / "results"
    _one_line_exit_2(run_cli("train", "--split", split, "--rounds", "1", "--out", out, "-q"), "too large to decode", out)


def test_real_devices_skips_counts_and_lists_a_huge_image(tmp_path, run_cli):
    from PIL import Image

    rng = np.random.default_rng(0)
    root = tmp_path / "phones"
    for phone in ("GalaxyS22", "Pixel5", "G4"):
        for cls in ("Chihuahua", "Altar"):
            folder = root / phone / cls
            folder.mkdir(parents=True)
            for i in range(3):
                Image.fromarray(rng.integers(0, 255, (18, 22, 3), dtype=np.uint8)).save(folder / f"img{i}.jpg")
    (root / "G4" / "Altar" / "img3.png").write_bytes(huge_png())
    out = tmp_path / "out"
    code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", "--data-dir", root,
                           "--clients-per-device", "1", "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["num_skipped"] == 1 and report["corpus"]["images"] == 18
    assert report["skipped"][0]["file"] == "G4/Altar/img3.png"
    assert "too large to decode: 400,000,000 pixels" in report["skipped"][0]["reason"]


def test_image_root_skips_a_huge_image(tmp_path):
    import datasets
    from PIL import Image

    from hetbench.builders.geo_images import attach_images
    from hetbench.sources import load_table

    root = tmp_path / "images"
    root.mkdir()
    Image.new("RGB", (4, 4)).save(root / "a.png")
    (root / "b.png").write_bytes(huge_png(12000, 12000))
    table = load_table(datasets.Dataset.from_dict({"file": ["a.png", "b.png"], "label": [0, 1]}))
    skipped = attach_images(table, str(root), "file")
    assert [s["file"] for s in skipped] == ["b.png"] and "too large to decode" in skipped[0]["reason"]
    assert table.num_rows("train") == 1


# ---- RAW files and crops --------------------------------------------------------------------------


@pytest.mark.skipif(not (RAW / "rpi_gs_1456x1088_darkframe.dng").is_file(), reason="needs shared/data/raw")
def test_a_corrupt_raw_gives_hetbench_s_line_only(tmp_path, capfd):
    """LibRaw writes '<file>: Unexpected end of file' to the C stderr itself; only hetbench's line may show."""
    from hetbench.cli.main import main

    raws = tmp_path / "raws"
    raws.mkdir()
    (raws / "cut.dng").write_bytes((RAW / "rpi_gs_1456x1088_darkframe.dng").read_bytes()[:100_000])
    out = tmp_path / "out"
    capfd.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["build", "iso-isp", "--raw-dir", str(raws), "--size", "32", "--out", str(out), "-q"])
    sys.stderr.flush()
    err = capfd.readouterr().err
    assert exc.value.code == 2
    assert err.strip().splitlines() == [err.strip()] and err.startswith("hetbench: error: no capture could be rendered"), err
    assert "Unexpected end of file" not in err and not out.exists()


@pytest.mark.parametrize("args, needle", [
    (["iso-isp", "--crop-size", "100000"], "--crop-size must be an integer between 32 and 512 pixels"),
    (["devices", "--crop-size", "100000"], "--crop-size must be an integer between 32 and 512 pixels"),
    (["iso-isp", "--crop-size", "16"], "between 32 and 512"),
    (["iso-isp", "--crops-per-photo", "1000000"], "--crops-per-photo must be an integer between 1 and 500"),
    (["devices", "--crops-per-photo", "0"], "--crops-per-photo must be an integer between 1 and 500"),
])
def test_crops_out_of_range_are_refused_not_clamped(args, needle, tmp_path, run_cli, monkeypatch):
    import hetbench.builders.iso_isp as iso_isp

    def refuse(*a, **k):
        raise AssertionError("rendering started before the bad input was refused")

    monkeypatch.setattr(iso_isp, "run_jobs", refuse)
    out = tmp_path / "out"
    _one_line_exit_2(run_cli("build", *args, "--size", "32", "--out", out, "-q"), needle, out)


def test_the_crop_range_ends_at_the_largest_photograph_s_shorter_side():
    from hetbench.builders.embedded_crops import CROP_SIZE_RANGE, MAX_CROPS_PER_PHOTO, RECIPE_CROPS_IF_UNRECORDED
    from hetbench.sources.photographs import embedded_photographs

    assert CROP_SIZE_RANGE[1] == max(min(img.shape[:2]) for _, img in embedded_photographs())
    assert CROP_SIZE_RANGE[0] <= RECIPE_CROPS_IF_UNRECORDED["crop_size"] <= CROP_SIZE_RANGE[1]
    assert RECIPE_CROPS_IF_UNRECORDED["crops_per_photo"] <= MAX_CROPS_PER_PHOTO
