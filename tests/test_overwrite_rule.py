"""One overwrite rule for every writing command (issue 25, item 6): ``--overwrite`` replaces only an output of
the same kind whose marker parses (a file merely named ``hetbench.json`` is not enough), ``--out`` may not be,
lie inside or contain an input, and the old output is never deleted before the new one is complete."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hetbench.errors import HetbenchError


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (what must come through a refused command unchanged)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _mine(folder: Path, marker: str | None = None, text: str = "") -> Path:
    """A user's folder: a thesis, and maybe a file named like a hetbench marker."""
    folder.mkdir(parents=True)
    (folder / "thesis.tex").write_text("years of work")
    if marker:
        (folder / marker).write_text(text)
    return folder


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    """A real three-client split of the built-in digits."""
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("overwrite") / "digits-n3"
    make_split("builtin:digits", DirichletPartitioner(3, 0.5, "client", None, 0), out, seed=0, quiet=True)
    return out


@pytest.fixture
def build_copy(build, tmp_path) -> Path:
    """A copy of :func:`build` this test may lose."""
    import shutil

    return Path(shutil.copytree(build, tmp_path / "b"))


# ---- the marker must parse as an output of the same kind -----------------------------------------------
FAKE_MARKERS = [
    ("hetbench.json", "{}"),
    ("hetbench.json", "not json"),
    ("hetbench.json", '{"recipe": {}, "source": "x"}'),
    ("leaderboard.md", "|"),
    ("leaderboard.csv", "a,b\n"),
    ("claims.json", "{}"),
]


@pytest.mark.parametrize("marker, text", FAKE_MARKERS)
def test_partition_overwrite_refuses_a_folder_holding_a_file_merely_named_like_a_marker(marker, text, tmp_path,
                                                                                        run_cli):
    out = _mine(tmp_path / "mine", marker, text)
    before = _files(out)
    code, _, err = run_cli("partition", "iid", "--clients", "3", "--out", out, "--overwrite", "-q")
    assert code == 2
    line = _one_line(err)
    assert "not a hetbench build" in line and str(out) in line
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_build_overwrite_refuses_a_fake_manifest(tmp_path, run_cli):
    out = _mine(tmp_path / "mine", "hetbench.json", "{}")
    before = _files(out)
    code, _, err = run_cli("build", "digits-domains", "--clients", "4", "--out", out, "--overwrite", "-q")
    assert code == 2 and "not a hetbench build" in _one_line(err)
    assert _files(out) == before


def test_a_leaderboard_never_replaces_a_build_nor_a_build_a_leaderboard(build_copy, tmp_path, run_cli):
    from hetbench.leaderboard.example_results import example_result

    results = tmp_path / "r"
    results.mkdir()
    (results / "a.json").write_text(json.dumps(example_result()))
    before = _files(build_copy)
    code, _, err = run_cli("leaderboard", results, "--out", build_copy, "--overwrite", "-q")
    assert code == 2 and "not a hetbench leaderboard" in _one_line(err)
    assert _files(build_copy) == before

    lb = tmp_path / "lb"
    assert run_cli("leaderboard", results, "--out", lb, "-q")[0] == 0
    board = _files(lb)
    code, _, err = run_cli("partition", "iid", "--clients", "3", "--out", lb, "--overwrite", "-q")
    assert code == 2 and "not a hetbench build" in _one_line(err)
    assert _files(lb) == board
    assert run_cli("leaderboard", results, "--out", lb, "--overwrite", "-q")[0] == 0  # its own kind: replaced


@pytest.mark.parametrize("marker, text", [("leaderboard.md", "|"), ("leaderboard.csv", "split\n")])
def test_leaderboard_overwrite_needs_a_leaderboard_csv_with_its_header(marker, text, tmp_path, run_cli):
    from hetbench.leaderboard.example_results import example_result

    results = tmp_path / "r"
    results.mkdir()
    (results / "a.json").write_text(json.dumps(example_result()))
    out = _mine(tmp_path / "mine", marker, text)
    code, _, err = run_cli("leaderboard", results, "--out", out, "--overwrite", "-q")
    assert code == 2 and "not a hetbench leaderboard" in _one_line(err)
    assert (out / "thesis.tex").read_text() == "years of work"


@pytest.mark.parametrize("fake", [True, False])
def test_reproduce_overwrite_replaces_only_a_claims_folder(fake, build_copy, tmp_path, run_cli):
    out = _mine(tmp_path / "mine", "claims.json", "{}") if fake else build_copy
    before = _files(out)
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint", "--out", out, "--overwrite", "-q")
    assert code == 2 and "not a hetbench reproduce output" in _one_line(err)
    assert _files(out) == before


# ---- flower-app --------------------------------------------------------------------------------------
def test_flower_app_overwrite_refuses_a_folder_it_did_not_write(build, tmp_path, run_cli):
    pytest.importorskip("flwr")
    out = _mine(tmp_path / "mine", "pyproject.toml", '[project]\nname = "mine"\n')
    before = _files(out)
    code, _, err = run_cli("flower-app", "--split", build, "--out", out, "--overwrite", "-q")
    assert code == 2 and "not a hetbench Flower app project" in _one_line(err)
    assert _files(out) == before
    code, _, err = run_cli("flower-app", "--split", build, "--out", build, "--overwrite", "-q")
    assert code == 2 and "is the input --split" in _one_line(err)


def test_flower_app_out_dot_leaves_the_working_folder_alone(build, tmp_path, run_cli, monkeypatch):
    pytest.importorskip("flwr")
    here = _mine(tmp_path / "here")
    monkeypatch.chdir(here)
    code, _, err = run_cli("flower-app", "--split", build, "--out", ".", "--overwrite", "-q")
    assert code == 2 and "current folder" in _one_line(err)
    assert sorted(p.name for p in here.iterdir()) == ["thesis.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]


def test_a_failed_rename_keeps_the_old_flower_project(tmp_path, monkeypatch):
    from hetbench.flower.job import FlowerJob
    from hetbench.flower.project import write_app_project

    app = write_app_project(tmp_path / "app", FlowerJob("/data/split", "fedavg", {"rounds": 2}, {}, "/r.json"))
    before = _files(app)
    real = os.replace

    def failing(src, dst):
        if Path(src).name.startswith(".app.tmp-"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError):
        write_app_project(app, FlowerJob("/data/split", "fedavg", {"rounds": 5}, {}, "/r.json"), overwrite=True)
    monkeypatch.undo()
    assert _files(app) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app"]


# ---- export and train results: one file each -----------------------------------------------------------
def test_export_overwrite_replaces_only_its_own_file(tmp_path, run_cli):
    mine = tmp_path / "obs.csv"
    mine.write_text("my,own\n1,2\n")
    code, _, err = run_cli("export", "builtin:observations", "--out", mine, "--overwrite", "-q")
    assert code == 2 and "not a hetbench export" in _one_line(err)
    assert mine.read_text() == "my,own\n1,2\n"

    ours = tmp_path / "d.parquet"
    assert run_cli("export", "builtin:digits", "--out", ours, "-q")[0] == 0
    assert run_cli("export", "builtin:digits", "--out", ours, "--overwrite", "-q")[0] == 0
    ours.write_bytes(ours.read_bytes() + b"edited")  # changed since: the user's now
    code, _, err = run_cli("export", "builtin:digits", "--out", ours, "--overwrite", "-q")
    assert code == 2 and "changed since hetbench exported it" in _one_line(err)
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_train_overwrite_replaces_only_a_train_result(build, tmp_path, run_cli):
    fingerprint = json.loads((build / "hetbench.json").read_text())["split_fingerprint"]
    notes = tmp_path / "res" / f"digits-n3-{fingerprint[:12]}" / "fedavg-s0.json"  # where this run's result goes
    notes.parent.mkdir(parents=True)
    notes.write_text("my notes")
    code, _, err = run_cli("train", "--split", build, "--rounds", "1", "--out", tmp_path / "res", "--overwrite", "-q")
    assert code == 2 and "is not a hetbench train result" in _one_line(err)
    assert notes.read_text() == "my notes"


# ---- --out never equals, lies inside or contains an input ---------------------------------------------
@pytest.mark.parametrize("where, how", [("{b}", "is the input"), ("{b}/sub", "is inside the input")])
def test_partition_out_equal_to_or_inside_its_dataset_is_refused(where, how, build_copy, run_cli):
    before = _files(build_copy)
    out = where.format(b=build_copy)
    code, _, err = run_cli("partition", "dirichlet", "--clients", "3", "--dataset", build_copy, "--out", out,
                           "--overwrite", "-q")
    assert code == 2
    line = _one_line(err)
    assert f"{how} --dataset" in line
    assert _files(build_copy) == before


def test_partition_out_containing_its_dataset_is_refused(build_copy, run_cli):
    from hetbench.export import export_table

    export_table("builtin:digits", build_copy / "digits.parquet")  # the input lives inside a build
    before = _files(build_copy)
    code, _, err = run_cli("partition", "iid", "--clients", "3", "--dataset", build_copy / "digits.parquet",
                           "--out", build_copy, "--overwrite", "-q")
    assert code == 2 and "contains the input --dataset" in _one_line(err)
    assert _files(build_copy) == before


def test_build_out_containing_its_metadata_is_refused(build_copy, run_cli):
    from hetbench.builders.geo import build_geo
    from hetbench.export import export_table

    metadata = build_copy / "obs.csv"
    export_table("builtin:observations", metadata)
    before = _files(build_copy)
    code, _, err = run_cli("build", "geo", "--metadata", metadata, "--label-col", "species", "--nmax", "1000",
                           "--out", build_copy, "--overwrite", "-q")
    assert code == 2 and "contains the input --metadata" in _one_line(err)
    with pytest.raises(HetbenchError, match="contains the input metadata"):  # the Python API too
        build_geo(build_copy, metadata=str(metadata), label_col="species", nmax=1000, overwrite=True, quiet=True)
    assert _files(build_copy) == before


@pytest.mark.parametrize("where, how", [("{b}/results", "is inside"), ("{b}/..", "contains")])
def test_train_out_inside_or_containing_its_split_is_refused(where, how, build_copy, run_cli):
    before = _files(build_copy)
    code, _, err = run_cli("train", "--split", build_copy, "--rounds", "1", "--out", where.format(b=build_copy), "-q")
    assert code == 2 and f"{how} the input --split" in _one_line(err)
    assert _files(build_copy) == before


def test_export_and_flower_app_inside_their_input_are_refused(build_copy, run_cli):
    before = _files(build_copy)
    code, _, err = run_cli("export", build_copy, "--out", build_copy / "x.csv", "-q")
    assert code == 2 and "is inside the input SOURCE" in _one_line(err)
    if __import__("importlib").util.find_spec("flwr"):
        code, _, err = run_cli("flower-app", "--split", build_copy, "--out", build_copy / "app", "-q")
        assert code == 2 and "is inside the input --split" in _one_line(err)
    assert _files(build_copy) == before


def test_the_leaderboard_header_is_the_marker_it_writes():
    from hetbench.leaderboard.csv_text import CSV_COLUMNS
    from hetbench.outputs import LEADERBOARD_HEADER

    assert CSV_COLUMNS[: len(LEADERBOARD_HEADER)] == LEADERBOARD_HEADER
