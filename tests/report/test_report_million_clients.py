"""A million clients: ``hetbench partition natural-id`` on 1,000,000 rows and 1,000,000 clients
completes under 2 GiB of peak RSS with a report.json under 1 MB; the report alone (compute and
write) stays far below that even with 10,000 classes.

``benchmarks/bench_million_clients.py`` runs the same build and the users partitioner, with a
per-stage breakdown of time and memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

SCRIPT = """
import sys
import numpy as np
from hetbench.report import compute_report, write_report

k, c = 1_000_000, int(sys.argv[2])
rng = np.random.default_rng(0)
train = rng.permutation(k).astype(np.int32)           # one training row per client
test = np.concatenate([np.full(1000, -1), rng.integers(0, k, 199_000)]).astype(np.int32)  # 1,000 shared
report = compute_report({"train": train, "test": test},
                        {"train": rng.integers(0, c, k), "test": rng.integers(0, c, test.size)},
                        [f"class{i}" for i in range(c)], [f"user{i:07d}" for i in range(k)])
write_report(report, sys.argv[1])
# VmHWM: this process's own peak (ru_maxrss would include the forking test worker's RSS, which Linux
# carries across exec)
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) * 1024)
"""

#: runs a command from a small launcher and prints its peak RSS in bytes (the launcher's own RSS is what
#: Linux carries into the child's ru_maxrss across exec, so it must be small, not a test worker's)
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stderr=open(os.environ["HB_STDERR"], "w"))
_, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024)
"""


@pytest.mark.slow
@pytest.mark.parametrize("classes", [10, 10_000])
def test_a_million_clients_report_is_small_and_lean(tmp_path, classes):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(classes)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    peak = int(done.stdout.split()[-1])
    assert peak < 1024**3, f"peak RSS {peak / 2**20:.0f} MiB"  # dense 10^6 x 10^4 float64 alone is 80 GB
    size = (tmp_path / "report.json").stat().st_size
    assert size < 1_000_000
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["num_clients"] == 1_000_000 and report["num_samples"] == 1_000_000
    assert report["splits"]["test"]["shared_rows"] == 1000
    meta = pq.read_metadata(tmp_path / "report" / "clients.parquet")
    assert meta.num_rows == 1_000_000
    if classes > 1000:  # the per-class lists are in report/classes.parquet (hetbench.report.classes)
        assert report["classes_file"] == "report/classes.parquet" and "class_counts" not in report
        assert pq.read_metadata(tmp_path / "report" / "classes.parquet").num_rows == classes
    else:
        assert len(report["class_counts"]) == classes
    assert {"num_samples", "emd", "label_classes", "label_counts", "rows_train", "rows_test"} <= set(meta.schema.to_arrow_schema().names)
    for png in ("label_distribution_heatmap.png", "emd_histogram.png"):
        assert (tmp_path / "plots" / png).stat().st_size > 1000
    assert not (tmp_path / "plots" / "client_size_rank.png").exists()  # one row each: a flat curve says nothing


def _rows(path, n, seed=0):
    """n rows: an id, a label over 10 classes and a user column with n distinct users (one row each)."""
    rng = np.random.default_rng(seed)
    pq.write_table(pa.table({"id": np.arange(n), "label": rng.integers(0, 10, n), "user": rng.permutation(n)}), path)


@pytest.mark.slow
def test_natural_id_with_a_million_clients_end_to_end(tmp_path):
    n = 1_000_000
    _rows(tmp_path / "big.parquet", n)
    out = tmp_path / "split"
    hetbench = os.path.join(os.path.dirname(sys.executable), "hetbench")
    env = {**os.environ, "MPLBACKEND": "Agg", "TQDM_DISABLE": "1", "HB_STDERR": str(tmp_path / "stderr.txt")}
    cmd = [hetbench, "partition", "natural-id", "--dataset", str(tmp_path / "big.parquet"), "--column", "user",
           "--id-col", "id", "--out", str(out), "-q"]
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *cmd], capture_output=True, text=True, env=env, timeout=600)
    code, peak = (int(v) for v in done.stdout.split())
    assert code == 0, (tmp_path / "stderr.txt").read_text()[-2000:]
    assert peak < 2 * 1024**3, f"peak RSS {peak / 2**20:.0f} MiB"
    assert (out / "report.json").stat().st_size < 1_000_000
    report = json.loads((out / "report.json").read_text())
    assert report["num_clients"] == n and report["splits"]["train"]["clients_with_rows"] > 0
    assert pq.read_metadata(out / "report" / "clients.parquet").num_rows == n
