"""End to end: the CLI on the embedded digits, loaded back with datasets.load_dataset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def _independent_emd(train) -> float:
    """EMD recomputed from the loaded rows, without hetbench's metrics module (Hsu et al. sec. 6.1)."""
    cids = np.asarray(train["client_id"])
    labels = np.asarray(train["label"])
    classes = np.unique(labels)
    p = np.array([(labels == c).mean() for c in classes])
    total = 0.0
    for k in np.unique(cids):
        mine = labels[cids == k]
        q = np.array([(mine == c).mean() for c in classes])
        total += mine.size / labels.size * np.abs(q - p).sum()
    return total


@pytest.mark.slow
def test_partition_load_verify(tmp_path, run_cli):
    import datasets

    out = tmp_path / "split"
    code, stdout, err = run_cli("partition", "dirichlet", "--alpha", "0.3", "--clients", "8", "--out", out, "--quiet")
    assert code == 0, err
    for rel in ("README.md", "hetbench.json", "report.json", "plots/label_distribution_heatmap.png",
                "plots/client_size_rank.png", "plots/emd_histogram.png"):
        assert (out / rel).is_file(), rel
    ds = datasets.load_dataset(str(out))
    assert set(ds) == {"train", "test"}
    train = ds["train"]
    assert isinstance(train.features["label"], datasets.ClassLabel)
    assert train.features["label"].names == [str(i) for i in range(10)]
    assert train.features["client_id"].dtype == "int32"
    assert len(train) + len(ds["test"]) == 1797
    assert set(np.unique(train["client_id"])) == set(range(8))
    assert train[0]["image"].size == (8, 8)
    report = json.loads((out / "report.json").read_text())
    assert report["emd"] == pytest.approx(_independent_emd(train), abs=1e-5)
    from hetbench.report import read_clients

    assert read_clients(out)["num_samples"].to_pylist() == np.bincount(train["client_id"], minlength=8).tolist()
    code, stdout, _ = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK")


def test_same_seed_gives_identical_manifest(tmp_path, run_cli):
    args = ("partition", "dirichlet", "--alpha", "0.5", "--scheme", "class", "--clients", "12", "--quiet")
    assert run_cli(*args, "--out", tmp_path / "a")[0] == 0
    assert run_cli(*args, "--out", tmp_path / "b")[0] == 0
    assert run_cli(*args, "--out", tmp_path / "c", "--seed", "1")[0] == 0
    a, b, c = ((tmp_path / x / "hetbench.json").read_bytes() for x in "abc")
    assert a == b
    assert a != c
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()


def _tamper(path: Path, fn) -> None:
    manifest = json.loads(path.read_text())
    fn(manifest)
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True))


def test_verify_detects_tampering(tmp_path, run_cli):
    out = tmp_path / "s"
    assert run_cli("partition", "iid", "--clients", "5", "--out", out, "--quiet")[0] == 0
    manifest = out / "hetbench.json"
    original = manifest.read_text()

    import pyarrow as pa
    import pyarrow.parquet as pq

    ids_file = out / "sample_ids.parquet"
    original_ids = ids_file.read_bytes()
    table = pq.read_table(ids_file)
    cids = table.column("client_id").to_numpy().copy()
    cids[np.flatnonzero(cids == 1)[0]] = 0  # move one sample to another client
    pq.write_table(table.set_column(1, "client_id", pa.array(cids, pa.int32())), ids_file)
    code, stdout, _ = run_cli("verify", out)
    assert code == 1 and "FAILED" in stdout and "sample ids" in stdout

    ids_file.write_bytes(original_ids)
    _tamper(manifest, lambda m: m["recipe"]["partition"].__setitem__("seed", 7))
    code, stdout, _ = run_cli("verify", out)
    assert code == 1 and "FAILED" in stdout

    manifest.write_text(original)
    assert run_cli("verify", out)[0] == 0


def test_verify_detects_edited_parquet(tmp_path, run_cli):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "s"
    assert run_cli("partition", "iid", "--clients", "4", "--out", out, "--quiet")[0] == 0
    f = next((out / "data").glob("train-*.parquet"))
    t = pq.read_table(f)
    cid = t.column("client_id").to_numpy().copy()
    cid[0] = (cid[0] + 1) % 4
    pq.write_table(t.set_column(t.schema.get_field_index("client_id"), "client_id", pa.array(cid, pa.int32())), f)
    code, stdout, _ = run_cli("verify", out)
    assert code == 1 and "client_id" in stdout


def test_report_command_rebuilds_same_report(tmp_path, run_cli):
    out = tmp_path / "s"
    assert run_cli("partition", "shards", "--clients", "10", "--out", out, "--quiet")[0] == 0
    before = json.loads((out / "report.json").read_text())
    (out / "report.json").unlink()
    (out / "plots" / "emd_histogram.png").unlink()
    assert run_cli("report", out, "--quiet")[0] == 0
    after = json.loads((out / "report.json").read_text())
    assert after == before
    assert (out / "plots" / "emd_histogram.png").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_every_partition_command_runs_with_no_inputs(tmp_path, run_cli):
    for method in ("iid", "dirichlet", "shards", "classes-per-client", "natural-id"):
        code, stdout, err = run_cli("partition", method, "--out", tmp_path / method)
        assert code == 0, (method, err)
        assert "wrote" in stdout


def test_overwrite(tmp_path, run_cli):
    out = tmp_path / "s"
    assert run_cli("partition", "iid", "--out", out, "--quiet")[0] == 0
    code, _, err = run_cli("partition", "iid", "--out", out, "--quiet")
    assert code == 2 and "--overwrite" in err
    assert run_cli("partition", "iid", "--clients", "3", "--out", out, "--quiet", "--overwrite")[0] == 0
    assert json.loads((out / "report.json").read_text())["num_clients"] == 3
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_console_script_exit_codes(tmp_path):
    """The installed `hetbench` script itself: success, and bad input as one line with exit 2."""
    exe = Path(sys.executable).with_name("hetbench")
    env = dict(os.environ)
    ok = subprocess.run([exe, "partition", "iid", "--clients", "3", "--out", tmp_path / "o", "-q"],
                        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    # the script ends its process quickly (console_main freezes the collector): everything it wrote is whole
    manifest = json.loads((tmp_path / "o" / "hetbench.json").read_text())
    import datasets

    dd = datasets.load_dataset(str(tmp_path / "o"))
    assert sum(len(dd[s]) for s in dd) == sum(info["num_rows"] for info in manifest["splits"].values())
    bad = subprocess.run([exe, "partition", "dirichlet", "--alpha", "-1", "--out", tmp_path / "bad"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "alpha" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_publish_offline_fails_with_one_line(tmp_path, run_cli):
    out = tmp_path / "s"
    assert run_cli("partition", "iid", "--out", out, "--quiet")[0] == 0
    code, _, err = run_cli("publish", out, "--repo-id", "someone/hetbench-test")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "upload" in err
