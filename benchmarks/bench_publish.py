"""Publishing at the speed of Arrow (issue 16): three figures in one run, each beside its floor.

(a) ``hetbench partition dirichlet --dataset big.parquet --label-col label --id-col id --clients 100
    --alpha 0.1`` on a 1,000,000-row table (``id`` int64, ``label`` over 10 classes, ``user``
    int64), end to end as a subprocess: wall time and peak RSS (``os.wait4``). Targets: at most
    3.0 s and 400 MB. Printed beside the floor: a subprocess that imports pyarrow, reads the same
    table, takes its rows in the published order (the folder's ``id`` column gives it) and writes
    them with one ``pyarrow.parquet.write_table``.
(b) A 100,000-image split: generated 32x32 RGB PNGs (bytes, 10 classes) in a parquet file with a
    ``datasets`` Image feature, partitioned (Dirichlet 0.1, 100 clients) and published, timed
    against the bare pyarrow write of the same bytes in the same order. Target: hetbench / bare
    at most 1.5x. Both are timed in one warm process (imports done, the source file in the page
    cache), so the ratio is what publishing adds per byte; the end-to-end subprocess time is
    printed too.
(c) ``hetbench verify`` of (a)'s folder as a subprocess. Target: at most 2.0 s.

hetbench's modules are byte-compiled first, as pip leaves an installed package. Every figure is the
best of ``--repeat`` runs (default 3); every run is printed. Results go to
``results_publish.txt`` beside this script (``--no-save`` to skip). Run:
``python benchmarks/bench_publish.py`` (about two minutes on 2 cores; generating the images takes
most of it) or ``--quick`` (100,000 rows, 10,000 images; a smoke run that saves nothing).
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TARGET_A_S = 3.0
TARGET_A_MB = 400
TARGET_B_RATIO = 1.5
TARGET_C_S = 2.0
ENV = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}


def make_rows(path: Path, rows: int, classes: int = 10, seed: int = 0) -> Path:
    """``rows`` rows of ``id`` (int64), ``label`` (``classes`` classes) and ``user`` (int64)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    pq.write_table(pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "label": rng.integers(0, classes, rows, dtype=np.int64),
        "user": rng.integers(0, 10_000, rows, dtype=np.int64),
    }), path)
    return path


def png_images(count: int, size: int = 32, classes: int = 10, seed: int = 0) -> tuple[list[bytes], np.ndarray]:
    """``count`` PNG-encoded ``size`` x ``size`` RGB images (a class-coloured gradient with noise)
    and their labels."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, count)
    ramp = np.linspace(0, 1, size)[None, :, None] * np.linspace(0.3, 1, size)[:, None, None]
    tint = rng.uniform(0.2, 1.0, (classes, 1, 1, 3))
    out = []
    for k in range(count):
        img = (255 * ramp * tint[labels[k]]).astype(np.int16) + rng.integers(-24, 25, (size, size, 3))
        buf = io.BytesIO()
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, format="PNG")
        out.append(buf.getvalue())
    return out, labels


def make_images(path: Path, count: int) -> Path:
    """A parquet file of ``count`` PNG images with the ``datasets`` features ``id``, ``image``
    (Image) and ``label``, as ``Dataset.to_parquet`` writes them (schema metadata included)."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    data, labels = png_images(count)
    features = datasets.Features({"id": datasets.Value("int64"), "image": datasets.Image(),
                                  "label": datasets.Value("int64")})
    image = pa.StructArray.from_arrays(
        [pa.array(data, pa.binary()), pa.array([f"img{k:06d}.png" for k in range(count)], pa.string())], ["bytes", "path"])
    table = pa.Table.from_arrays([pa.array(np.arange(count, dtype=np.int64)), image, pa.array(labels, pa.int64())],
                                 schema=features.arrow_schema)
    pq.write_table(table, path, row_group_size=10_000)
    return path


#: started as a fresh, small interpreter that runs the measured command and reports its peak RSS: the
#: peak that ``wait4`` gives for a child also counts the memory it shared with its parent before ``exec``,
#: so a command started straight from this (large) process would be charged this process's size
LAUNCHER = """
import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "wall_s": time.perf_counter() - t0,
                  "peak_mb": usage.ru_maxrss / 1024}))
"""


def run_measured(argv: list[str]) -> dict:
    """Run ``argv``: exit code, wall seconds, peak RSS in MB (through :data:`LAUNCHER`), stderr."""
    import json

    proc = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], capture_output=True, text=True,
                          env={**os.environ, **ENV})
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"code": proc.returncode or 1, "wall_s": float("nan"), "peak_mb": float("nan"), "stderr": proc.stderr}
    return {**json.loads(lines[-1]), "stderr": proc.stderr}


def hetbench_cli(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("hetbench")), *args]


BARE_WRITE = """
import sys, time
import pyarrow as pa, pyarrow.parquet as pq
src, order_file, out = sys.argv[1:4]
table = pq.ParquetFile(src, memory_map=True).read()
order = pq.ParquetFile(order_file).read(columns=["id"]).column("id")
pq.write_table(table.take(order), out)
"""


def bare_write(table, order, path: Path) -> float:
    """Seconds for the floor of (b): take ``table``'s rows in ``order`` and write one parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    pq.write_table(table.take(pa.array(order)), path)
    return time.perf_counter() - t0


def published_order(folder: Path):
    """The ``id`` column of a built folder's rows (train, then test), in published order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted((folder / "data").glob("train-*.parquet")) + sorted((folder / "data").glob("test-*.parquet"))
    return pa.concat_tables([pq.ParquetFile(f).read(columns=["id"]) for f in files])


def _runs(values) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def best(runs: list[dict], key: str = "wall_s") -> dict:
    return min(runs, key=lambda r: r[key])


def part_a(tmp: Path, rows: int, repeat: int, lines: list[str]) -> tuple[bool, Path]:
    data = make_rows(tmp / "big.parquet", rows)
    out = tmp / "a"
    runs = []
    for i in range(repeat):
        r = run_measured(hetbench_cli("partition", "dirichlet", "--dataset", str(data), "--label-col", "label",
                                      "--id-col", "id", "--clients", "100", "--alpha", "0.1", "--out", str(out),
                                      "--overwrite", "--quiet"))
        if r["code"] != 0:
            lines.append(f"(a) FAILED: {r['stderr'][-1500:]}")
            return False, out
        runs.append(r)
    import pyarrow.parquet as pq

    order_file = tmp / "a-order.parquet"
    pq.write_table(published_order(out), order_file)
    floor = [run_measured([sys.executable, "-c", BARE_WRITE, str(data), str(order_file), str(tmp / "bare-a.parquet")])
             for _ in range(repeat)]
    h, f = best(runs), best(floor)
    ok = h["wall_s"] <= TARGET_A_S and max(r["peak_mb"] for r in runs) <= TARGET_A_MB
    lines.append(
        f"(a) partition dirichlet, {rows:,} rows, 100 clients, end to end: {h['wall_s']:.2f} s "
        f"(runs {_runs(r['wall_s'] for r in runs)}), peak RSS {max(r['peak_mb'] for r in runs):.0f} MB; "
        f"floor (python + pyarrow: read, take, write_table) {f['wall_s']:.2f} s, {f['peak_mb']:.0f} MB; "
        f"ratio {h['wall_s'] / f['wall_s']:.1f}x; targets <= {TARGET_A_S} s, <= {TARGET_A_MB} MB  "
        f"[{'OK' if ok else 'MISSED'}]")
    return ok, out


IMAGE_PUBLISH = """
import sys, time
from hetbench.partitioners import DirichletPartitioner
from hetbench.pipeline import make_split
make_split(sys.argv[1], DirichletPartitioner(100, alpha=0.1), sys.argv[2], label_col="label", id_col="id", quiet=True)
"""


def _write_path(fs, folder: Path) -> float:
    """Seconds of hetbench's shard writing alone (every output split: gather, parquet, the sha256 of
    every shard and the column digests), into an empty ``folder``."""
    import shutil

    from hetbench.publish.parquet import TARGET_SHARD_BYTES, output_features, write_split

    class NoBar:
        def update(self, advance: int) -> None:
            pass

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    features = output_features(fs)
    t0 = time.perf_counter()
    for split in fs.outputs:
        write_split(fs, split, features, folder, NoBar(), TARGET_SHARD_BYTES)
    return time.perf_counter() - t0


def _extras(folder: Path) -> str:
    """Seconds of what publishing adds to the bare write, each alone: the sha256 of every shard file,
    the column content digests of the rows, and the report (its JSON, clients.parquet and plots)."""
    import json

    import pyarrow.parquet as pq

    from hetbench.publish.digest import SplitDigest, file_sha256
    from hetbench.report import compute_report, write_report

    shards = sorted((folder / "data").glob("*.parquet"))
    t0 = time.perf_counter()
    for f in shards:
        file_sha256(f)
    sha = time.perf_counter() - t0
    tables = [pq.ParquetFile(f).read() for f in shards]
    t0 = time.perf_counter()
    for t in tables:
        SplitDigest(t.schema).update(t)
    digest = time.perf_counter() - t0
    manifest = json.loads((folder / "hetbench.json").read_text())
    cols = {s: pq.ParquetFile(next(folder.glob(f"data/{s}-*.parquet"))).read(columns=["client_id", "label"])
            for s in manifest["splits"]}
    report = compute_report({s: c.column("client_id").to_numpy() for s, c in cols.items()},
                            {s: c.column("label").to_numpy() for s, c in cols.items()},
                            manifest["class_names"], manifest["client_names"])
    t0 = time.perf_counter()
    write_report(report, folder / "report-again")
    drawn = time.perf_counter() - t0
    return (f"sha256 of the shard files {sha:.2f} s, column digests {digest:.2f} s, report and plots {drawn:.2f} s "
            f"(sum {sha + digest + drawn:.2f} s)")


def part_b(tmp: Path, count: int, repeat: int, lines: list[str]) -> bool:
    import pyarrow.parquet as pq

    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    t0 = time.perf_counter()
    data = make_images(tmp / "images.parquet", count)
    made = time.perf_counter() - t0
    mb = data.stat().st_size / 1e6
    out = tmp / "b"
    fs, _ = make_split(str(data), DirichletPartitioner(100, alpha=0.1), out, label_col="label", id_col="id",
                       quiet=True, overwrite=True)  # warm-up: imports, page cache
    order = published_order(out).column("id").to_numpy()
    ours, floor, writes, bare = [], [], [], []
    for i in range(repeat):  # interleaved, so drifts in load hit both sides
        t0 = time.perf_counter()
        table = pq.ParquetFile(data, memory_map=True).read()
        read = time.perf_counter() - t0
        bare.append(bare_write(table, order, tmp / "bare-b.parquet"))
        floor.append(read + bare[-1])
        del table
        t0 = time.perf_counter()
        make_split(str(data), DirichletPartitioner(100, alpha=0.1), out, label_col="label", id_col="id", quiet=True,
                   overwrite=True)
        ours.append(time.perf_counter() - t0)
        writes.append(_write_path(fs, tmp / "b-shards"))
    extras = _extras(out)
    e2e = run_measured([sys.executable, "-c", IMAGE_PUBLISH, str(data), str(tmp / "b-e2e")])
    ratio, write_ratio = min(ours) / min(floor), min(writes) / min(bare)
    ok = ratio <= TARGET_B_RATIO and e2e["code"] == 0
    lines.append(
        f"(b) {count:,} PNG images of 32x32 ({mb:.0f} MB; generated in {made:.0f} s), Dirichlet 0.1 over 100 clients, "
        f"in a warm process: partitioned and published {min(ours):.2f} s (runs {_runs(ours)}); bare pyarrow read + take + "
        f"write_table of the same bytes {min(floor):.2f} s (runs {_runs(floor)}); ratio {ratio:.2f}x, target <= "
        f"{TARGET_B_RATIO}x  [{'OK' if ok else 'MISSED'}]\n"
        f"    shard writing alone (gather, parquet, sha256 of every shard, column digests) {min(writes):.2f} s (runs "
        f"{_runs(writes)}) vs bare take + write_table {min(bare):.2f} s (runs {_runs(bare)}): {write_ratio:.2f}x\n"
        f"    work the bare write does not do, each timed alone on one core: {extras}\n"
        f"    end to end as a subprocess: {e2e['wall_s']:.2f} s, peak RSS {e2e['peak_mb']:.0f} MB")
    return ok


def part_c(folder: Path, repeat: int, lines: list[str]) -> bool:
    runs = [run_measured(hetbench_cli("verify", str(folder))) for _ in range(repeat)]
    if any(r["code"] != 0 for r in runs):
        lines.append(f"(c) verify FAILED: {runs[0]['stderr'][-1500:]}")
        return False
    h = best(runs)
    ok = h["wall_s"] <= TARGET_C_S
    lines.append(f"(c) verify of (a)'s folder: {h['wall_s']:.2f} s (runs {_runs(r['wall_s'] for r in runs)}), "
                 f"peak RSS {max(r['peak_mb'] for r in runs):.0f} MB; target <= {TARGET_C_S} s  [{'OK' if ok else 'MISSED'}]")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100,000 rows and 10,000 images; saves nothing")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    os.environ.update(ENV)
    # hetbench's modules byte-compiled, as pip leaves an installed package (``make setup`` does it for the
    # editable install): without it, where PYTHONDONTWRITEBYTECODE is set, every run compiles them anew
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(root / d) for d in ("hetbench", "cli", "builders", "isp"))],
                   check=True, stdout=subprocess.DEVNULL)
    rows, images = (100_000, 10_000) if args.quick else (1_000_000, 100_000)
    lines = [f"hetbench publish benchmark: {platform.python_version()}, {os.cpu_count()} CPUs, "
             f"load average {os.getloadavg()[0]:.2f}"]
    print(lines[0], flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        tmp = Path(tmp)
        ok_a, folder = part_a(tmp, rows, args.repeat, lines)
        print(lines[-1], flush=True)
        ok_c = part_c(folder, args.repeat, lines) if ok_a or folder.exists() else False
        print(lines[-1], flush=True)
        ok_b = part_b(tmp, images, args.repeat, lines)
        print(lines[-1], flush=True)
    if not (args.quick or args.no_save):
        Path(__file__).with_name("results_publish.txt").write_text("\n".join(lines) + "\n")
    return 0 if ok_a and ok_b and ok_c else 1


if __name__ == "__main__":
    sys.exit(main())
