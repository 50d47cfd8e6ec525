"""Bad input, continued (issue 25): each case one line on stderr and exit code 2 (or a warning line, or a cap),
and nothing left behind: an empty or too-long --out or --name, an output that cannot be written (/proc, a full
or read-only disk), a --metadata that names nothing, a split name TOML must quote, SIGTERM and Ctrl-C during a
run, a label outside the split's classes, --num-proc beyond the cores, a million distinct labels.

Tests that start processes bound their time, stop every process they started by pid whatever happens, and
Ray binds 127.0.0.1 only (tests/conftest.py sets its single-node mode for every subprocess).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HETBENCH = [sys.executable, "-m", "hetbench.cli.main"]
ISO = ["build", "iso-isp", "--stages", "wb", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96", "-q"]


def _one_error_line(code: int, err: str, needle: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hetbench: error:"), lines[0]
    assert needle.lower() in lines[0].lower(), lines[0]
    return lines[0]


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def split4(tmp_path_factory):
    """A small split (4 IID clients of the built-in digits)."""
    from hetbench.pipeline import make_split
    from hetbench.partitioners import IIDPartitioner

    out = tmp_path_factory.mktemp("split4") / "digits-iid-n4"
    make_split("builtin:digits", IIDPartitioner(4), out, seed=0, quiet=True)
    return out


# ---- 1. --out '' on every writing command ----------------------------------------------------------
EMPTY_OUT = {
    "partition": ["partition", "iid"],
    "build geo": ["build", "geo", "-q"],
    "build users": ["build", "users", "-q"],
    "build iso-isp": ISO,
    "build devices": ["build", "devices", "--synthetic-color", "3", "-q"],
    "build digits-domains": ["build", "digits-domains", "-q"],
    "build real-devices": ["build", "real-devices", "--recipe", "imagenet-es", "--data-dir", "{split}", "-q"],
    "train": ["train", "--split", "{split}", "--rounds", "1", "-q"],
    "leaderboard": ["leaderboard", "{split}"],
    "reproduce": ["reproduce", "--claims", "dapperfl-footprint", "-q"],
    "flower-app": ["flower-app", "--split", "{split}", "-q"],
    "export": ["export", "builtin:digits"],
}


@pytest.mark.parametrize("case", sorted(EMPTY_OUT))
def test_empty_out_is_refused_not_the_default_folder(case, tmp_path, split4, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [a.format(split=split4) for a in EMPTY_OUT[case]]
    code, _, err = run_cli(*args, "--out", "")
    _one_error_line(code, err, "--out is empty")
    assert _tree(tmp_path) == []  # no default folder, nothing in the current one


def test_empty_results_path_of_flower_app_is_refused(tmp_path, split4, run_cli):
    code, _, err = run_cli("flower-app", "--split", split4, "--out", tmp_path / "app", "--results", "", "-q")
    _one_error_line(code, err, "--results is empty")
    assert not (tmp_path / "app").exists()


# ---- 2. 300-character --out and --name -------------------------------------------------------------
LONG = "a" * 300


@pytest.mark.parametrize("args, needle", [
    (["partition", "iid", "--out", "{long}"], "has a name of 300 bytes"),
    (["partition", "iid", "--out", "{tmp}/{long}/x"], "has a name of 300 bytes"),
    (["partition", "iid", "--out", "{tmp}/x", "--name", "{long}"], "--name 'aaaa"),
    (["build", "geo", "-q", "--out", "{tmp}/x", "--name", "{long}"], "300 characters; at most 200"),
    (["train", "--split", "{split}", "-q", "--out", "{long}"], "has a name of 300 bytes"),
    (["export", "builtin:digits", "--out", "{long}.csv"], "has a name of 304 bytes"),
    (["leaderboard", "{split}", "--out", "{long}"], "at most 200"),
])
def test_long_out_or_name_is_one_line(args, needle, tmp_path, split4, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(*[a.format(long=LONG, tmp=tmp_path, split=split4) for a in args])
    _one_error_line(code, err, needle)
    assert _tree(tmp_path) == []


def test_result_paths_of_a_long_split_name_fit_the_file_system():
    """A split published with a 300-character name (before names were bounded) still trains: its results
    folder keeps the name's start and a digest of the whole."""
    from hetbench.train.results import result_path

    path = result_path("results", "b" * 300, "fedavg", {}, {}, 0, fingerprint="f" * 64)
    assert all(len(part.encode()) <= 255 for part in path.parts), path
    assert path != result_path("results", "b" * 299 + "c", "fedavg", {}, {}, 0, fingerprint="f" * 64)


# ---- 3. outputs on a file system that refuses new files ----------------------------------------------
needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc")


@needs_proc
def test_train_out_in_proc_is_refused_before_training(split4, tmp_path, run_cli, monkeypatch):
    import hetbench.train.simulation as simulation

    def refuse(*args, **kwargs):
        raise AssertionError("training started before the results folder was checked")

    monkeypatch.setattr(simulation, "run_training", refuse)
    code, _, err = run_cli("train", "--split", split4, "--rounds", "1", "-q", "--out", "/proc/x")
    _one_error_line(code, err, "cannot write --out '/proc/x'")


@needs_proc
def test_export_out_in_proc_is_one_line(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("export", "builtin:digits", "--out", "/proc/x.csv")
    _one_error_line(code, err, "cannot write --out '/proc/x.csv'")
    assert _tree(tmp_path) == []


# ---- 4. a full or read-only disk ---------------------------------------------------------------------
@pytest.fixture
def tiny_fs(tmp_path):
    """mount(tmpfs, options) -> a folder on a 64 KiB tmpfs (skipped where this process cannot mount)."""
    mounted = []

    def mount(options: str = "size=64k") -> Path:
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True,
                              timeout=30)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def _fill(folder: Path) -> None:
    """Fill a tmpfs: every later write fails with ENOSPC (a folder can still be made)."""
    try:
        with open(folder / "fill", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass


@pytest.mark.parametrize("args", [["partition", "iid"], ISO], ids=["partition", "iso-isp"])
def test_a_full_disk_is_one_line_and_leaves_nothing(args, tiny_fs, run_cli):
    disk = tiny_fs()
    code, _, err = run_cli(*args, "--out", disk / "out")
    _one_error_line(code, err, "the disk is full")
    assert _tree(disk) == []


def test_a_full_disk_under_train_results_is_one_line_and_leaves_nothing(split4, tiny_fs, run_cli):
    disk = tiny_fs()
    _fill(disk)
    code, _, err = run_cli("train", "--split", split4, "--rounds", "1", "--clients-per-round", "2", "--threads", "1",
                           "-q", "--out", disk / "results")
    _one_error_line(code, err, "No space left on device")
    assert _tree(disk) == ["fill"]


def test_a_read_only_disk_under_train_results_is_refused_before_training(split4, tiny_fs, run_cli, monkeypatch):
    import hetbench.train.simulation as simulation

    disk = tiny_fs("ro,size=64k")
    monkeypatch.setattr(simulation, "run_training", lambda *a, **k: pytest.fail("training started"))
    code, _, err = run_cli("train", "--split", split4, "--rounds", "1", "-q", "--out", disk / "results")
    _one_error_line(code, err, "Read-only file system")


def test_a_full_disk_under_a_build_process_is_one_line_exit_2(tiny_fs, tmp_path):
    """The whole process: it used to abort (exit 134, 'terminate called without an active exception') when
    the report's plots were still being drawn on a daemon thread as it exited."""
    disk = tiny_fs()
    done = subprocess.run([*HETBENCH, *ISO, "--out", str(disk / "out")], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    _one_error_line(done.returncode, done.stderr, "the disk is full")
    assert _tree(disk) == []


# ---- 5. reproduce --metadata that names nothing -------------------------------------------------------
def test_reproduce_with_missing_metadata_is_refused(tmp_path, run_cli):
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint", "--metadata", tmp_path / "nope.csv", "-q",
                           "--out", tmp_path / "claims")
    _one_error_line(code, err, "nope.csv' not found")
    assert not (tmp_path / "claims").exists()


@pytest.mark.parametrize("metadata, needle", [
    ("inat2017:a.json", "must name two files"),
    ("inat2017:{tmp}/a.json+{tmp}/b.json", "not found"),
    ("builtin:nope", "unknown built-in"),
    ("train={tmp}/nope.csv", "not found"),
])
def test_reproduce_metadata_forms_are_checked(metadata, needle, tmp_path, run_cli):
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint", "--metadata", metadata.format(tmp=tmp_path),
                           "-q", "--out", tmp_path / "claims")
    _one_error_line(code, err, needle)


# ---- 6. --name with a line break or '---' -------------------------------------------------------------
@pytest.mark.parametrize("name, needle", [("a\nb", "line break"), ("my---split", "'---'"), ("---", "'---'"),
                                          ("tab\there", "control character"), (" ", "--name is empty")])
@pytest.mark.parametrize("command", [["partition", "iid"], ["build", "geo", "-q"]], ids=["partition", "geo"])
def test_a_name_the_card_cannot_hold_is_refused(command, name, needle, tmp_path, run_cli):
    code, _, err = run_cli(*command, "--name", name, "--out", tmp_path / "out")
    _one_error_line(code, err, needle)
    assert _tree(tmp_path) == []


def test_a_name_with_quotes_builds_and_verifies(tmp_path, run_cli):
    code, _, err = run_cli("partition", "iid", "--clients", "3", "--name", 'my "digits": split #1', "-q",
                           "--out", tmp_path / "out")
    assert code == 0, err
    code, out, err = run_cli("verify", tmp_path / "out")
    assert code == 0 and out.startswith("OK"), out + err


# ---- 7. a split folder named with a quote: flower-app's pyproject.toml --------------------------------
def test_flower_app_quotes_the_split_name(split4, tmp_path, run_cli):
    import shutil
    import tomllib

    pytest.importorskip("flwr")
    odd = tmp_path / 'q"uo\\te\x7f'
    shutil.copytree(split4, odd)
    code, _, err = run_cli("flower-app", "--split", odd, "--out", tmp_path / "app", "-q")
    assert code == 0, err
    doc = tomllib.loads((tmp_path / "app" / "pyproject.toml").read_text())
    assert doc["project"]["description"] == f"hetbench fedavg on {odd.name} through Flower"
    assert doc["tool"]["flwr"]["app"]["config"]["split"] == str(odd)


def test_toml_values_read_back():
    import tomllib

    from hetbench.flower.project import toml_value

    for text in ('"', "\\", "\n\t\r", "\x00\x1f\x7f", "é ☃", "a'b", '"""'):
        assert tomllib.loads(f"x = {toml_value(text)}")["x"] == text


# ---- 10. a label outside the split's classes ----------------------------------------------------------
def _split_with_label(folder: Path, bad: int) -> Path:
    """Two clients, classes x and y; train row 3 has label ``bad`` (written under the ClassLabel's schema)."""
    import datasets
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    rng = np.random.default_rng(0)
    feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=["x", "y"]),
                               "client_id": datasets.Value("int64")})
    (folder / "data").mkdir(parents=True)
    for split, n in (("train", 16), ("test", 6)):
        rows = {"image": [Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8)) for _ in range(n)],
                "label": [i % 2 for i in range(n)], "client_id": [i % 2 if split == "train" else -1 for i in range(n)]}
        table = datasets.Dataset.from_dict(rows, features=feats).data.table
        labels = table.column("label").to_pylist()
        if split == "train":
            labels[3] = bad
        i = table.schema.get_field_index("label")
        pq.write_table(table.set_column(i, table.schema.field(i), pa.array(labels, pa.int64())),
                       folder / "data" / f"{split}.parquet")
    return folder


@pytest.mark.parametrize("bad", [2, 5])
def test_train_label_outside_the_classes_is_one_line(bad, tmp_path, run_cli, monkeypatch):
    import hetbench.train.simulation as simulation

    split = _split_with_label(tmp_path / "split", bad)
    monkeypatch.setattr(simulation, "run_training", lambda *a, **k: pytest.fail("training started"))
    code, _, err = run_cli("train", "--split", split, "--rounds", "1", "--threads", "1", "-q", "--out", tmp_path / "r")
    _one_error_line(code, err, f"has label {bad} at row 3, outside the 2 classes it declares (0 to 1: x, y)")
    assert not (tmp_path / "r").exists()


def test_flower_app_label_outside_the_classes_is_one_line(tmp_path, run_cli):
    pytest.importorskip("flwr")
    split = _split_with_label(tmp_path / "split", 7)
    code, _, err = run_cli("flower-app", "--split", split, "--out", tmp_path / "app", "-q")
    _one_error_line(code, err, "has label 7 at row 3")
    assert not (tmp_path / "app").exists()


# ---- 11. build real-devices --num-proc 1000 ------------------------------------------------------------
def test_real_devices_num_proc_is_capped_at_the_cores(tmp_path, run_cli, monkeypatch):
    import numpy as np
    from PIL import Image

    import hetbench.builders.real_devices as real_devices

    rng = np.random.default_rng(0)
    root = tmp_path / "ImageNet-ES"
    for light in ("l1", "l5"):
        for k in (1, 2):
            for c, wnid in enumerate(("n01443537", "n01629819")):
                for i in range(2):
                    path = root / "es-test" / "param_control" / light / f"param_{k}" / wnid / f"ILSVRC2012_val_{100 * c + i:08d}.JPEG"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    Image.fromarray(rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)).save(path, format="JPEG")
    asked = []
    real = real_devices.stream_images  # the images are read as a stream, each one to disk as it comes

    def spy(root, images, size, num_proc=1, *args, **kwargs):
        asked.append(num_proc)
        return real(root, images, size, num_proc, *args, **kwargs)

    monkeypatch.setattr(real_devices, "stream_images", spy)
    code, out, err = run_cli("build", "real-devices", "--recipe", "imagenet-es", "--data-dir", root, "--num-proc", "1000",
                             "--out", tmp_path / "out")
    assert code == 0, err
    cores = os.cpu_count() or 1
    assert asked and asked[0] <= cores, asked
    assert f"--num-proc 1000 is more than the {cores} CPU cores; using {cores}" in err


# ---- 12. a million distinct labels ---------------------------------------------------------------------
def test_many_distinct_labels_get_one_warning_line(tmp_path, run_cli):
    from hetbench.outnames import MANY_CLASSES

    n = MANY_CLASSES + 1
    table = tmp_path / "many.csv"
    table.write_text("x,label\n" + "".join(f"{i},c{i}\n" for i in range(n)))
    code, _, err = run_cli("partition", "iid", "--dataset", table, "--clients", "4", "-q", "--out", tmp_path / "out")
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("hetbench: warning:")]
    assert warnings == [f"hetbench: warning: {n:,} distinct labels in column 'label' (more than {MANY_CLASSES:,}): the "
                        "card and the manifest list every class, so they will be large (MBs); check the label column"], err
    code, _, err = run_cli("partition", "iid", "--clients", "4", "-q", "--out", tmp_path / "few")
    assert code == 0 and "warning" not in err, err


@pytest.mark.parametrize("spec", ["pixels:abc", "pixels:-1", "pixels:8.5", "pixels:", "pixels:1", "pixels:300"])
def test_a_pixels_feature_embedder_without_a_whole_side_is_refused_before_anything_is_written(tmp_path, run_cli, spec):
    out = tmp_path / "split"
    code, stdout, err = run_cli("partition", "iid", "--clients", "4", "--feature-embedder", spec, "--out", out, "-q")
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and spec in lines[0] and "whole number S from 2 to 256" in lines[0], err
    assert not out.exists()
