"""--image-root: paths stay inside the root, every image is decoded once at build time, and rows
whose image cannot be used are dropped, counted and listed while the build goes on."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

SECRET = b"secret bytes outside the root"


def _png(path, value: int, size: int = 6) -> None:
    from PIL import Image

    Image.fromarray(np.full((size, size, 3), value % 255, np.uint8)).save(path)


@pytest.fixture
def observations(tmp_path):
    """200 observations with an image each under ``imgs/``; returns a function writing the CSV
    with some rows' image paths replaced."""
    rng = np.random.default_rng(0)
    (tmp_path / "imgs").mkdir()
    for i in range(200):
        _png(tmp_path / "imgs" / f"{i}.png", i)
    coords = [(rng.normal(45, 2), rng.normal(5, 2)) for _ in range(200)]

    def write(paths: dict[int, str] | None = None):
        lines = ["obs_id,species,observer,latitude,longitude,path"]
        for i, (lat, lon) in enumerate(coords):
            lines.append(f"o{i},s{i % 4},u{i % 20},{lat:.4f},{lon:.4f},{(paths or {}).get(i, f'{i}.png')}")
        (tmp_path / "obs.csv").write_text("\n".join(lines) + "\n")
        return tmp_path / "obs.csv"

    return write


def _build(run_cli, kind, csv, root, out, *extra):
    args = ["build", kind, "--metadata", csv, "--label-col", "species", "--id-col", "obs_id", "--image-root", root,
            "--image-col", "path", "--out", out, "-q", *extra]
    if kind == "geo":
        args += ["--nmax", "50"]
    else:
        args += ["--user-col", "observer", "--filters", "none"]
    return run_cli(*args)


def _all_image_bytes(folder) -> list[bytes]:
    import pyarrow.parquet as pq

    out = []
    for f in sorted((folder / "data").glob("*.parquet")):
        out += [cell["bytes"] for cell in pq.read_table(f, columns=["image"]).column("image").to_pylist()]
    return out


@pytest.mark.parametrize("kind", ["geo", "users"])
def test_paths_leaving_the_root_are_dropped_not_embedded(kind, tmp_path, observations, run_cli):
    import pyarrow.parquet as pq

    (tmp_path / "secret.png").write_bytes(SECRET)
    os.symlink(tmp_path / "secret.png", tmp_path / "imgs" / "link.png")
    csv = observations({3: "../secret.png", 4: str(tmp_path / "secret.png"), 5: "link.png", 6: "sub/../../secret.png"})
    out = tmp_path / "out"
    code, _, err = _build(run_cli, kind, csv, tmp_path / "imgs", out)
    assert code == 0, err
    assert all(SECRET not in b for b in _all_image_bytes(out))
    report = json.loads((out / "report.json").read_text())
    assert report["num_skipped"] == 4
    assert {(s["file"], s["reason"]) for s in report["skipped"]} == {
        ("../secret.png", "outside --image-root"), (str(tmp_path / "secret.png"), "outside --image-root"),
        ("link.png", "outside --image-root"), ("sub/../../secret.png", "outside --image-root")}
    assert report["dropped"]["train"]["filtered"] >= 4
    ids = {r for f in (out / "data").glob("*.parquet") for r in pq.read_table(f, columns=["obs_id"]).column("obs_id").to_pylist()}
    assert not ids & {"o3", "o4", "o5", "o6"} and "o7" in ids


def test_undecodable_and_missing_images_are_skipped_and_listed(tmp_path, observations, run_cli):
    import datasets
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.zeros((64, 64, 3), np.uint8)).save(buf, format="PNG")
    (tmp_path / "imgs" / "truncated.png").write_bytes(buf.getvalue()[:60])
    (tmp_path / "imgs" / "text.png").write_text("not an image")
    csv = observations({10: "truncated.png", 11: "text.png", 12: "gone.png", 13: ""})
    out = tmp_path / "out"
    code, _, err = _build(run_cli, "geo", csv, tmp_path / "imgs", out)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    reasons = {s["file"]: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"truncated.png", "text.png", "gone.png", ""}
    assert reasons["truncated.png"].startswith("cannot be decoded") and reasons["text.png"].startswith("cannot be decoded")
    assert reasons["gone.png"] == "missing under --image-root" and reasons[""] == "no image named"
    assert report["dropped"]["train"]["missing-value"] == 2
    for split in ("train", "test"):  # every embedded image decodes: training never meets a bad one
        ds = datasets.load_dataset(str(out), split=split)
        assert all(img.size == (6, 6) for img in ds["image"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imgs", "obs.csv", "out"]


def test_a_split_without_one_usable_image_is_one_line(tmp_path, observations, run_cli):
    csv = observations({i: "../elsewhere.png" for i in range(200)})
    code, _, err = _build(run_cli, "geo", csv, tmp_path / "imgs", tmp_path / "out")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "outside --image-root" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imgs", "obs.csv"]


def test_image_root_that_is_not_a_folder_is_one_line(tmp_path, observations, run_cli):
    csv = observations()
    code, _, err = _build(run_cli, "users", csv, tmp_path / "nowhere", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--image-root" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imgs", "obs.csv"]


def test_each_file_is_decoded_once(tmp_path, monkeypatch):
    import datasets

    from hetbench.builders import geo_images
    from hetbench.sources import load_table

    (tmp_path / "imgs").mkdir()
    _png(tmp_path / "imgs" / "a.png", 1)
    calls = []
    real = geo_images._image_problem
    monkeypatch.setattr(geo_images, "_image_problem", lambda p: calls.append(p) or real(p))
    table = load_table(datasets.Dataset.from_dict({"file": ["a.png", "./a.png", "a.png"], "label": [0, 1, 0]}))
    assert geo_images.attach_images(table, str(tmp_path / "imgs"), "file") == []
    assert len(calls) == 1 and table.num_rows("train") == 3
