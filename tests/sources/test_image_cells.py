"""Image cells that name a file instead of holding bytes read only inside the source's folder, and every image a
stored-bytes corpus publishes decodes (issue 43, item 7): a Parquet row whose Image struct has ``bytes: null``
and a path outside the copy, a missing file, a truncated JPEG or a decompression bomb is skipped, counted and
listed, never published and never a traceback, through ``partition --dataset`` and ``build real-devices
--recipe fed-isic2019``."""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

SECRET = b"secret-bytes-that-must-never-be-published"


def _png(value: int, size: int = 8) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((size, size, 3), value, np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def _bomb() -> bytes:
    """A valid-looking PNG header declaring 20,000 x 20,000 pixels (400 M, over hetbench's bound)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b""))


def _write(path: Path, cells: list[dict], labels: list[int], extra: dict | None = None) -> None:
    import datasets

    features = {"image": datasets.Image(), "label": datasets.Value("int64")}
    rows = {"image": cells, "label": labels}
    for name, values in (extra or {}).items():
        features[name] = datasets.Value("int64")
        rows[name] = values
    path.parent.mkdir(parents=True, exist_ok=True)
    table = datasets.Dataset.from_dict(rows, features=datasets.Features(features)).data.table
    assert b"huggingface" in table.schema.metadata  # the features, as the Hub's files carry them
    pq.write_table(table, path)  # as written by hand: datasets' own writer would open the named files


def _published_bytes(folder: Path) -> list[bytes]:
    manifest = json.loads((folder / "hetbench.json").read_text())
    out = []
    for split in manifest["splits"].values():
        for f in split["files"]:
            out += [c["bytes"] for c in pq.read_table(folder / f, columns=["image"]).column("image").to_pylist()]
    return out


@pytest.fixture()
def copy_with_named_files(tmp_path):
    """21 rows in ``copy/``: 16 with image bytes, one naming ``inside.png`` in the copy (read), one naming a file
    outside it by absolute path, one by ``../``, one naming a missing file, one holding bytes that are no image."""
    outside = tmp_path / "private" / "outside.png"
    outside.parent.mkdir()
    outside.write_bytes(SECRET)
    root = tmp_path / "copy"
    root.mkdir()
    (root / "inside.png").write_bytes(_png(200))
    cells = [{"bytes": _png(10 * i), "path": None} for i in range(16)]
    cells += [{"bytes": None, "path": "inside.png"}, {"bytes": None, "path": str(outside)},
              {"bytes": None, "path": "../private/outside.png"}, {"bytes": None, "path": "gone.png"},
              {"bytes": b"a text cell, not an image", "path": None}]
    _write(root / "train-00000-of-00001.parquet", cells, [i % 2 for i in range(21)])
    return root


def test_partition_reads_named_files_only_inside_the_copy_and_lists_the_rest(copy_with_named_files, tmp_path, run_cli):
    out = tmp_path / "split"
    code, _, err = run_cli("partition", "iid", "--clients", "2", "--dataset", copy_with_named_files, "--out", out,
                           "--feature-embedder", "none", "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["num_skipped"] == 3
    assert [(s["row"], s["file"]) for s in report["skipped"]] == [(17, "outside.png"), (18, "outside.png"),
                                                                  (19, "gone.png")]
    assert [s["reason"][:40] for s in report["skipped"]] == [
        "an image cell names a file outside the s", "an image cell names a file outside the s",
        "an image cell names a file that does not"]
    published = _published_bytes(out)
    assert len(published) == 18 and SECRET not in published and _png(200) in published
    # a cell holding bytes is re-partitioned as the source holds it, never re-encoded (docs/output-contract.md),
    # and one that is no image is listed by its row in the source
    assert b"a text cell, not an image" in published
    assert report["num_not_images"] == 1
    assert report["not_images"] == [{"split": "train", "row": 20, "reason": "unreadable image: cannot identify image file"}]
    assert str(tmp_path) not in (out / "report.json").read_text()  # a base name, never the path
    code, stdout, err = run_cli("verify", out)
    assert code == 0, stdout + err


def test_a_hub_style_copy_whose_every_cell_is_missing_is_one_line(tmp_path, run_cli):
    root = tmp_path / "copy"
    _write(root / "train.parquet", [{"bytes": None, "path": f"gone{i}.png"} for i in range(4)], [0, 1, 0, 1])
    code, out, err = run_cli("partition", "iid", "--clients", "2", "--dataset", root, "--out", tmp_path / "s", "-q")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s").exists()


CENTRES = {0: 6, 1: 5}  # training images per centre of the small copy; 2 test images each


def _isic_copy(root: Path, bad: list[dict]) -> None:
    """A Fed-ISIC2019-shaped copy (``data/train-*``, ``data/test-*``, integer ``center``) with ``bad`` cells
    appended to the training split (centre 0)."""
    from PIL import Image

    rng = np.random.default_rng(0)

    def jpeg() -> bytes:
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)).save(buf, "JPEG", quality=85)
        return buf.getvalue()

    for split, per in (("train", CENTRES), ("test", {0: 2, 1: 2})):
        cells, centres = [], []
        for centre, n in per.items():
            cells += [{"bytes": jpeg(), "path": None} for _ in range(n)]
            centres += [centre] * n
        if split == "train":
            cells += bad
            centres += [0] * len(bad)
        _write(root / "data" / f"{split}-00000-of-00001.parquet", cells, [i % 2 for i in range(len(cells))],
               {"center": centres})


def test_fed_isic_skips_corrupt_bomb_and_outside_images_and_verify_passes(tmp_path, run_cli):
    from PIL import Image

    secret = tmp_path / "private.jpg"
    secret.write_bytes(SECRET)
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (20, 90, 160)).save(buf, "JPEG")
    truncated = buf.getvalue()[: len(buf.getvalue()) // 2]
    root = tmp_path / "fed-isic2019"
    _isic_copy(root, [{"bytes": truncated, "path": None}, {"bytes": _bomb(), "path": None},
                      {"bytes": None, "path": str(secret)}, {"bytes": b"junk", "path": None}])
    out = tmp_path / "isic"
    code, _, err = run_cli("build", "real-devices", "--recipe", "fed-isic2019", "--dataset", root, "--out", out,
                           "--num-proc", "2", "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["num_skipped"] == 4
    rows = {s["row"]: s["reason"] for s in report["skipped"]}
    assert sorted(rows) == [11, 12, 13, 14] and {s["split"] for s in report["skipped"]} == {"train"}
    assert rows[11].startswith("unreadable image: ")  # PIL: "Truncated File Read" or "image file is truncated"
    assert rows[12].startswith("image is too large to decode: 400,000,000 pixels")
    assert rows[13] == "an image cell names a file outside the source's folder (not read)"
    assert rows[14].startswith("unreadable image: cannot identify image file")
    published = _published_bytes(out)
    assert len(published) == sum(CENTRES.values()) + 4 and SECRET not in published and truncated not in published
    code, stdout, err = run_cli("verify", out)
    assert code == 0, stdout + err
