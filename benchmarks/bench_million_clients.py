"""A million clients (issue 11, item 5): natural-id and users, 1,000,000 clients on 1,000,000 rows.

Generates a parquet file of 1,000,000 rows (``id``: int64, ``label``: ``--classes`` classes,
``user``: a shuffled permutation, so every user holds one row and there are 1,000,000 clients), then
runs, each in a fresh process whose peak RSS is read with ``os.wait4``:

(a) ``hetbench partition natural-id --dataset big.parquet --column user --id-col id`` (the CLI);
(b) the ``users`` partitioner (``UsersPartitioner(column="user", filters="none")``) through
    ``hetbench.pipeline.make_split`` (there is no ``partition users`` command; ``build users`` is
    the geo builder's).

It prints wall time, peak RSS and the sizes of ``report.json``, ``report/clients.parquet`` and
``hetbench.json``, and exits 1 if a run fails, peaks at 2 GiB or more, or writes a report.json of
1 MB or more. ``--stages`` also prints, for (a), the time and the peak RSS of every pipeline stage
(load_table, build_split, write_split, compute_report, write_report, build_manifest,
write_manifest, render_card; Linux only: the peak is reset before each stage through
``/proc/self/clear_refs``).

Run: ``python benchmarks/bench_million_clients.py`` (a few minutes on 2 cores); ``--rows 100000``
for a quick one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RSS_LIMIT = 2 * 1024**3
REPORT_LIMIT = 1_000_000


def make_rows(path: str | os.PathLike, rows: int, users: int | None = None, classes: int = 10, seed: int = 0) -> Path:
    """Write ``rows`` rows (``id``, ``label``, ``user``) to a parquet file; ``users`` distinct users
    (default: one per row), dealt round-robin over a shuffled order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    users = rows if users is None else users
    user = rng.permutation(np.arange(rows, dtype=np.int64) % users)
    table = pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "label": rng.integers(0, classes, rows, dtype=np.int64),
        "user": user,
    })
    pq.write_table(table, path)
    return Path(path)


def run_measured(argv: list[str], env: dict | None = None) -> dict:
    """Run ``argv``; returns its exit code, wall seconds, peak RSS (bytes, from ``os.wait4``), stdout
    and stderr."""
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1", **(env or {})}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"code": proc.returncode, "wall_s": wall, "peak_rss": usage.ru_maxrss * 1024,
                "stdout": out.read(), "stderr": err.read()}


def natural_id_cli(data: Path, out: Path) -> list[str]:
    exe = Path(sys.executable).with_name("hetbench")
    return [str(exe), "partition", "natural-id", "--dataset", str(data), "--column", "user", "--id-col", "id",
            "--out", str(out), "--quiet"]


USERS_SCRIPT = """
import sys
from hetbench.partitioners import UsersPartitioner
from hetbench.pipeline import make_split
make_split(sys.argv[1], UsersPartitioner(column="user", filters="none"), sys.argv[2], id_col="id", quiet=True)
"""

STAGES_SCRIPT = """
import functools, sys, time
import hetbench.pipeline as pl, hetbench.publish as pub, hetbench.sources as src
def rss():
    got = {}
    for line in open("/proc/self/status"):
        if line.startswith(("VmRSS", "VmHWM")):
            got[line[:5]] = int(line.split()[1]) // 1024
    return got["VmRSS"], got["VmHWM"]
def wrap(mod, name):
    f = getattr(mod, name)
    @functools.wraps(f)
    def g(*a, **k):
        open("/proc/self/clear_refs", "w").write("5")
        before, _ = rss(); t = time.perf_counter()
        r = f(*a, **k)
        after, peak = rss()
        print(f"  {name:15s} {time.perf_counter() - t:6.1f} s   RSS {before:5d} -> {after:5d} MB, peak {peak:5d} MB", flush=True)
        return r
    setattr(mod, name, g)
for n in ("compute_report", "write_report", "build_manifest", "write_manifest", "render_card", "write_split"):
    wrap(pub, n)
wrap(pl, "build_split"); wrap(src, "load_table")
from hetbench.partitioners import NaturalIdPartitioner
pl.make_split(sys.argv[1], NaturalIdPartitioner("user"), sys.argv[2], id_col="id", quiet=True)
"""


def _sizes(out: Path) -> str:
    files = ("report.json", "report/clients.parquet", "hetbench.json")
    return ", ".join(f"{f} {(out / f).stat().st_size / 1e3:,.1f} kB" for f in files if (out / f).exists())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows = users = clients")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--stages", action="store_true", help="also time every pipeline stage of (a)")
    args = ap.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-million-") as tmp:
        tmp = Path(tmp)
        data = make_rows(tmp / "big.parquet", args.rows, classes=args.classes)
        print(f"{args.rows:,} rows, {args.rows:,} users, {args.classes} classes; {os.cpu_count()} CPUs")
        runs = {
            "(a) partition natural-id (CLI)": natural_id_cli(data, tmp / "natural"),
            "(b) users partitioner (make_split)": [sys.executable, "-c", USERS_SCRIPT, str(data), str(tmp / "users")],
        }
        for (label, cmd), out in zip(runs.items(), (tmp / "natural", tmp / "users")):
            r = run_measured(cmd)
            report_bytes = (out / "report.json").stat().st_size if (out / "report.json").exists() else None
            good = r["code"] == 0 and r["peak_rss"] < RSS_LIMIT and report_bytes is not None and report_bytes < REPORT_LIMIT
            ok &= good
            print(f"{label}: exit {r['code']}, {r['wall_s']:.1f} s, peak RSS {r['peak_rss'] / 2**20:,.0f} MiB; "
                  f"{_sizes(out)}  [{'OK' if good else 'FAILED'}]")
            if r["code"] != 0:
                print(r["stderr"][-2000:])
        if args.stages:
            print("(a) by stage:")
            r = run_measured([sys.executable, "-c", STAGES_SCRIPT, str(data), str(tmp / "stages")])
            print(r["stdout"], end="")
            print(f"  total {r['wall_s']:.1f} s (each stage's peak is measured from its start: the overall peak is (a)'s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
