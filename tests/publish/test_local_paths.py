"""No local path in a published file (issue 25, item 9): sources by name and content digest, the paths
in an unpublished sidecar that verify reads on the machine that built the folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

RAW = Path(__file__).resolve().parents[3] / "shared" / "data" / "raw"


def _rows(folder: Path) -> Path:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"id": np.arange(300), "label": rng.integers(0, 4, 300), "x": rng.random(300)}),
                   folder / "rows.parquet")
    return folder / "rows.parquet"


def _published_text(folder: Path) -> str:
    from hetbench.contract import read_manifest
    from hetbench.publish.published_files import published_paths

    return "".join((folder / p).read_bytes().decode("latin-1") for p in published_paths(read_manifest(folder)))


def test_no_published_file_holds_the_sources_path_and_verify_finds_it_through_the_sidecar(tmp_path, run_cli):
    src = _rows(tmp_path / "home" / "alice" / "private")
    out = tmp_path / "out"
    assert run_cli("partition", "dirichlet", "--dataset", src, "--label-col", "label", "--id-col", "id",
                   "--clients", "4", "--out", out, "-q")[0] == 0
    text = _published_text(out)
    assert "alice" not in text and str(tmp_path) not in text
    assert json.loads((out / "hetbench.json").read_text())["source"]["dataset"] == "local:rows.parquet"
    assert json.loads((out / ".hetbench-local.json").read_text()) == {"source.dataset": str(src)}
    assert run_cli("verify", out)[0] == 0
    moved = tmp_path / "elsewhere"  # another machine: no sidecar
    shutil.copytree(out, moved)
    (moved / ".hetbench-local.json").unlink()
    code, _, err = run_cli("verify", moved)
    assert code == 2 and "pass --dataset" in err
    assert run_cli("verify", moved, "--dataset", src)[0] == 0


def test_the_same_data_at_two_paths_gives_the_same_manifest(tmp_path, run_cli):
    a, b = _rows(tmp_path / "a"), tmp_path / "b" / "rows.parquet"
    b.parent.mkdir()
    shutil.copy(a, b)
    for src, out in ((a, "oa"), (b, "ob")):
        assert run_cli("partition", "iid", "--dataset", src, "--label-col", "label", "--id-col", "id", "--clients", "3",
                       "--out", tmp_path / out, "-q")[0] == 0
    assert (tmp_path / "oa" / "hetbench.json").read_bytes() == (tmp_path / "ob" / "hetbench.json").read_bytes()


@pytest.mark.skipif(not RAW.is_dir(), reason="needs ../shared/data/raw")
def test_a_raw_dir_is_recorded_by_name_and_the_build_verifies(tmp_path, run_cli):
    raws = tmp_path / "users" / "bob" / "raws"
    raws.mkdir(parents=True)
    for name in ("canon_eos550d_magiclantern_colorchecker.dng", "rpi_picamera2_1920x1200_desk.dng",
                 "rpi_picamera2_1920x1200_rover.dng"):
        shutil.copy(RAW / name, raws / name)
    (raws / "truncated.dng").write_bytes((RAW / "rpi_picamera2_1920x1200_desk.dng").read_bytes()[:20_000])
    out = tmp_path / "iso"
    assert run_cli("build", "iso-isp", "--stages", "wb", "--raw-dir", raws, "--size", "32", "--crops-per-photo", "1",
                   "--crop-size", "96", "--out", out, "-q")[0] == 0
    assert "bob" not in _published_text(out)  # nor in the report's list of skipped files
    assert [s["file"] for s in json.loads((out / "report.json").read_text())["skipped"]] == ["truncated.dng"]
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["recipe"]["build"]["params"]["raw_dir"] == "local:raws"
    assert run_cli("verify", out)[0] == 0
    (out / ".hetbench-local.json").unlink()
    code, _, err = run_cli("verify", out)
    assert code == 2 and ".hetbench-local.json" in err


def test_a_format_3_folder_that_recorded_the_local_path_still_verifies(tmp_path, run_cli):
    """Before format 4 the source was recorded as given (here an absolute path), and the recipe too."""
    src = _rows(tmp_path / "data")
    out = tmp_path / "out"
    assert run_cli("partition", "iid", "--dataset", src, "--label-col", "label", "--id-col", "id", "--clients", "3",
                   "--out", out, "-q")[0] == 0
    manifest = json.loads((out / "hetbench.json").read_text())
    manifest.update(format=3, source={**manifest["source"], "dataset": str(src)})
    manifest.pop("files")
    (out / "hetbench.json").write_text(json.dumps(manifest, sort_keys=True, indent=1))
    (out / ".hetbench-local.json").unlink()
    code, text, err = run_cli("verify", out)
    assert code == 0 and text.startswith("OK:"), text + err


def test_an_edited_partition_recipe_of_a_builder_build_fails(tmp_path, run_cli):
    out = tmp_path / "sc"
    assert run_cli("build", "devices", "--synthetic-color", "3", "--clients", "6", "--out", out, "-q")[0] == 0
    manifest = json.loads((out / "hetbench.json").read_text())
    manifest["recipe"]["partition"]["params"]["allocation"] = "deal"  # what the card and users read
    (out / "hetbench.json").write_text(json.dumps(manifest, sort_keys=True, indent=1))
    code, text, err = run_cli("verify", out)
    assert code == 1 and "recipe.partition.params.allocation" in text, text + err
