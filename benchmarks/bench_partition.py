"""Partitioning speed: hetbench vs Flower Datasets (flwr-datasets), on the same in-memory data.

What is measured
----------------
One synthetic ``datasets.Dataset`` is built once, outside every timing (``Dataset.from_dict``):
``x`` float32, ``label`` int64 uniform over ``--classes`` classes, ``user_id`` a string uniform over
``--ids`` ids (``"user_00042"``). Then, on that same object:

(a) Label Dirichlet, per-class shares over clients (alpha 0.1, ``--clients`` partitions).
    * flwr-datasets: ``DirichletPartitioner(num_partitions, partition_by="label", alpha,
      min_partition_size=0, seed=42)``, ``partitioner.dataset = ds``, then
      ``for i in range(num_partitions): partitioner.load_partition(i)``. The first call builds the
      index (``dataset.unique``, reading the label column, the Dirichlet draws); every call returns a
      ``Dataset`` via ``ds.select(indices)``.
    * hetbench: ``load_table(ds)`` (reads and encodes the label column through Arrow),
      ``DirichletPartitioner(scheme="class").partition(table, seed=0)``, then
      ``ClientPartitions.from_partition(ds, partition)`` (one Arrow ``take`` of every row into client
      order) and ``clients.table(i)`` for every client: each partition's rows as an Arrow table.
(b) Natural id (one partition per distinct ``user_id``).
    * flwr-datasets: ``NaturalIdPartitioner(partition_by="user_id")`` and one ``load_partition`` per id.
    * hetbench: as in (a) with ``NaturalIdPartitioner(column="user_id")``.
(c) hetbench ``DirichletPartitioner(scheme="client")`` (Hsu et al.): ``partition()`` time only
    (flwr-datasets has no equivalent; nothing to compare with).

Why it is a fair comparison
---------------------------
* Both tools start from the same ``Dataset`` object, hold nothing precomputed, and end with every
  partition's rows in hand. The timed region is "index build + load every partition" for both.
  hetbench's partitions are materialised (the ``take`` copies the rows); flwr's are lazy
  ``select`` views, so the comparison favours flwr.
* Everything hetbench reads is inside its timing: the label column (flwr reads it too), the table
  and its fingerprint, the partition, the client order.
* flwr-datasets' tqdm bar (natural id, one tick per row) is switched off (``TQDM_DISABLE=1``), which
  only makes flwr faster.
* Both results are checked outside the timings: the right number of partitions, every row in
  exactly one partition, and the loaded rows equal to the partition's indices (spot checks).

Building any ``datasets.Dataset`` object has a fixed cost in ``datasets`` itself (about 1 ms with a
precomputed fingerprint, 1.3-2 ms through ``select``), whichever tool asks for it; with 10,000
partitions that floor alone is 10-20 s. So the script also prints the total when hetbench hands out
every partition as a ``datasets.Dataset`` (``ClientPartitions.load_partition``, the Flower-style
contract) and that ratio beside the headline one.

Run: ``python benchmarks/bench_partition.py`` (1,000,000 rows; about 2-3 minutes on 2 cores) or
``--quick`` (100,000 rows, 100 clients, 1,000 ids) as a smoke test. Needs the ``bench`` extra
(``pip install -e .[bench]``) for flwr-datasets.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version

# flwr-datasets' NaturalIdPartitioner wraps a per-row Python loop in tqdm; a bar costs ~0.4 s per
# million rows and floods stderr. tqdm reads this at import, so it must be set before any import.
os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np  # noqa: E402

TARGET = 20.0
PEER = "flwr-datasets"


# ---- helpers ---------------------------------------------------------------------------------
@contextmanager
def timer(out: dict, key: str):
    """Time the block with perf_counter into ``out[key]`` (after a full collection, so one
    benchmark's garbage is not charged to the next)."""
    gc.collect()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        out[key] = time.perf_counter() - t0


def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def import_flwr():
    try:
        from flwr_datasets.partitioner import DirichletPartitioner, NaturalIdPartitioner
    except ImportError as exc:
        sys.exit(
            f"error: this benchmark compares against flwr-datasets, which is not importable ({exc}).\n"
            "Install the bench extra:  pip install -e .[bench]"
        )
    return DirichletPartitioner, NaturalIdPartitioner


def build_dataset(rows: int, classes: int, ids: int, seed: int = 0):
    """The shared in-memory Dataset: float32 feature, int64 label, string user id."""
    import datasets

    rng = np.random.default_rng(seed)
    width = len(str(ids - 1))
    names = np.array([f"user_{i:0{width}d}" for i in range(ids)])
    user = rng.integers(0, ids, size=rows)
    features = datasets.Features(
        {"x": datasets.Value("float32"), "label": datasets.Value("int64"), "user_id": datasets.Value("string")}
    )
    ds = datasets.Dataset.from_dict(
        {
            "x": rng.random(rows, dtype=np.float32),
            "label": rng.integers(0, classes, size=rows, dtype=np.int64),
            "user_id": names[user],
        },
        features=features,
    )
    return ds, int(np.unique(user).size)


def hetbench_table(ds):
    """hetbench's public entry for in-memory data: the label column is read through Arrow and
    encoded (the sorted distinct values become the classes)."""
    from hetbench.sources import load_table

    return load_table(ds, label_col="label")


def label_of(part) -> np.ndarray:
    """Labels of a loaded partition: a ``datasets.Dataset`` or a ``pyarrow.Table``."""
    if hasattr(part, "with_format"):
        return part.with_format("arrow")["label"].to_numpy()
    return part.column("label").to_numpy()


def check_cover(name: str, index_lists, n: int, num_partitions: int) -> str:
    """Every row in exactly one of ``num_partitions`` partitions; returns a one-line summary."""
    index_lists = [np.asarray(i, dtype=np.int64) for i in index_lists]
    if len(index_lists) != num_partitions:
        raise AssertionError(f"{name}: {len(index_lists)} partitions, expected {num_partitions}")
    hits = np.bincount(np.concatenate(index_lists), minlength=n)
    if hits.size != n or not np.all(hits == 1):
        raise AssertionError(f"{name}: rows not covered exactly once (min {hits.min()}, max {hits.max()})")
    sizes = np.array([i.size for i in index_lists])
    return (
        f"{name}: {num_partitions} partitions cover all {n:,} rows once "
        f"(sizes min {sizes.min()}, median {int(np.median(sizes))}, max {sizes.max()}, "
        f"empty {int((sizes == 0).sum())})"
    )


def check_loaded(name: str, parts: list, index_lists, labels: np.ndarray, sample: int = 25) -> None:
    """Spot check: a partition's loaded rows are exactly the rows its index list names."""
    picks = np.unique(np.linspace(0, len(parts) - 1, num=min(sample, len(parts))).astype(int))
    for k in picks:
        idx = np.asarray(index_lists[k], dtype=np.int64)
        got = label_of(parts[k])
        if got.size != idx.size or not np.array_equal(got, labels[idx]):
            raise AssertionError(f"{name}: partition {k} does not hold the rows of its index list")


def ratio_line(label: str, peer_s: float, ours_s: float, target: float | None = None) -> str:
    r = peer_s / ours_s if ours_s > 0 else float("inf")
    verdict = ""
    if target is not None:
        verdict = f"   target >= {target:g}x: {'MET' if r >= target else 'NOT MET'}"
    return f"  {label:<44s} {r:8.1f} x{verdict}"


def print_times(rows: list[tuple[str, float]]) -> None:
    for label, seconds in rows:
        print(f"  {label:<44s} {seconds:8.3f} s")


# ---- the benchmarks --------------------------------------------------------------------------
def run_flwr(make, count: int) -> tuple[dict, object, list]:
    """A fresh flwr partitioner on ``ds``, then ``for i in range(count): load_partition(i)``.

    Returns the times (``total``; ``first``, the first call, which builds flwr's index), the
    partitioner and the loaded partitions."""
    partitioner = make()
    parts = []
    t: dict[str, float] = {}
    with timer(t, "total"):
        start = time.perf_counter()
        for i in range(count):
            parts.append(partitioner.load_partition(i))
            if i == 0:
                t["first"] = time.perf_counter() - start
    return t, partitioner, parts


def run_hetbench(ds, partitioner) -> tuple[dict, object, list, list]:
    """Table (label column read inside the timing) -> partition -> ``ClientPartitions`` (one Arrow
    ``take`` into client order) -> every partition's rows as an Arrow table. Returns the times
    (``total``, ``index``, ``load``), the partition, the loader and the loaded partitions."""
    from hetbench.clients import ClientPartitions

    t: dict[str, float] = {}
    with timer(t, "total"):
        with timer(t, "index"):
            table = hetbench_table(ds)
            part = partitioner.partition(table, seed=0)
        clients = ClientPartitions.from_partition(ds, part)
        parts = [clients.table(i) for i in range(clients.num_partitions)]
    t["load"] = t["total"] - t["index"]
    return t, part, clients, parts


def compare(ds, labels_np: np.ndarray, make_flwr, count: int, het_partitioner, repeat: int, extra_check=None) -> None:
    """Time both tools ``repeat`` times (checking the first round) and report the best of each."""
    n = len(ds)
    flwr_runs, het_runs, dataset_runs = [], [], []
    for rep in range(repeat):
        t, flwr, flwr_parts = run_flwr(make_flwr, count)
        flwr_runs.append(t)
        if rep == 0:
            flwr_index = [flwr._partition_id_to_indices[i] for i in range(count)]  # private; checks only
            print("  check  " + check_cover(PEER, flwr_index, n, flwr.num_partitions))
            check_loaded(PEER, flwr_parts, flwr_index, labels_np)
            names = getattr(flwr, "partition_id_to_natural_id", None)  # natural id only
            flwr_ref = {
                "sizes": np.array([p.num_rows for p in flwr_parts]),
                "names": None if names is None else [str(names[i]) for i in range(count)],
            }
            del flwr_index
        del flwr, flwr_parts

        t, part, clients, het_parts = run_hetbench(ds, het_partitioner)
        het_runs.append(t)
        idx = part.client_indices()  # outside the timing: for the checks only
        if rep == 0:
            print("  check  " + check_cover("hetbench", idx, n, part.num_clients))
            check_loaded("hetbench", het_parts, idx, labels_np)
            if extra_check is not None:
                print("  check  " + extra_check(part, flwr_ref))
        del het_parts

        # the same partitions as datasets.Dataset objects (what flwr's load_partition returns)
        t = {}
        with timer(t, "load"):
            ds_parts = [clients.load_partition(i) for i in range(clients.num_partitions)]
        dataset_runs.append(t)
        if rep == 0:
            check_loaded("hetbench (Dataset objects)", ds_parts, idx, labels_np)
        del ds_parts, part, idx, clients

    f = min(flwr_runs, key=lambda r: r["total"])
    h = min(het_runs, key=lambda r: r["total"])
    d = min(r["load"] for r in dataset_runs)
    best = f" (best of {repeat})" if repeat > 1 else ""
    print_times(
        [
            (f"{PEER} total{best}", f["total"]),
            ("  1st load_partition (index + 1 select)", f["first"]),
            (f"  other {count - 1:,} load_partition calls", f["total"] - f["first"]),
            (f"hetbench total{best}", h["total"]),
            ("  index (labels+table+partition)", h["index"]),
            (f"  load {count:,} partitions (1 take + slices)", h["load"]),
            (f"hetbench + {count:,} x load_partition (Dataset)", h["total"] + d),
        ]
    )
    print(ratio_line(f"ratio {PEER} / hetbench", f["total"], h["total"], TARGET))
    print(ratio_line("  index build only", f["first"], h["index"]))
    print(ratio_line("  partitions as datasets.Dataset objects", f["total"], h["total"] + d))


def bench_dirichlet(ds, labels_np: np.ndarray, args, FlwrDirichlet) -> None:
    from hetbench.partitioners import DirichletPartitioner

    k = args.clients
    print(
        f"\n(a) Dirichlet, per-class shares: {len(ds):,} rows, {args.classes} classes, "
        f"{k} partitions, alpha {args.alpha}"
    )

    def make_flwr():
        p = FlwrDirichlet(num_partitions=k, partition_by="label", alpha=args.alpha, min_partition_size=0, seed=42)
        p.dataset = ds
        return p

    het = DirichletPartitioner(num_clients=k, alpha=args.alpha, scheme="class")
    compare(ds, labels_np, make_flwr, k, het, args.repeat)


def bench_natural_id(ds, labels_np: np.ndarray, num_ids: int, args, FlwrNatural) -> None:
    from hetbench.partitioners import NaturalIdPartitioner

    print(f"\n(b) Natural id: {len(ds):,} rows, {num_ids:,} distinct user_id values (one partition each)")

    def make_flwr():
        p = FlwrNatural(partition_by="user_id")
        p.dataset = ds
        return p

    def same_clients(part, flwr_ref) -> str:
        # both sort the distinct ids, so partition k is the same user in both tools
        same = list(part.client_names) == flwr_ref["names"]
        same = same and np.array_equal(part.client_sizes(), flwr_ref["sizes"])
        return f"same client order and sizes in both tools: {'yes' if same else 'NO'}"

    het = NaturalIdPartitioner(column="user_id")
    compare(ds, labels_np, make_flwr, num_ids, het, args.repeat, extra_check=same_clients)


def bench_hsu(ds, args) -> None:
    from hetbench.partitioners import DirichletPartitioner

    n, k = len(ds), args.clients
    print(f"\n(c) hetbench Dirichlet, per-client (Hsu et al.): {n:,} rows, {k} clients, alpha {args.alpha}")
    runs = []
    for _ in range(args.repeat):
        t: dict[str, float] = {}
        with timer(t, "table"):
            table = hetbench_table(ds)
        with timer(t, "partition"):
            part = DirichletPartitioner(num_clients=k, alpha=args.alpha, scheme="client").partition(table, seed=0)
        runs.append(t)
    sizes = part.client_sizes()
    if part.num_kept != n or sizes.min() < n // k or sizes.max() > -(-n // k):
        raise AssertionError("hetbench (Hsu): clients should hold n/N rows each and cover every row")
    print(f"  check  {k} clients of {sizes.min()}-{sizes.max()} rows cover all {n:,} rows once")
    best = f" (best of {args.repeat})" if args.repeat > 1 else ""
    print_times(
        [
            ("hetbench labels + table" + best, min(r["table"] for r in runs)),
            ("hetbench partition()" + best, min(r["partition"] for r in runs)),
        ]
    )
    print("  (no flwr-datasets equivalent; not compared)")


# ---- main ------------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="rows (default 1,000,000; 100,000 with --quick)")
    ap.add_argument("--classes", type=int, default=100, help="label classes (default 100)")
    ap.add_argument("--clients", type=int, default=None, help="Dirichlet partitions (default 1,000; 100 with --quick)")
    ap.add_argument("--ids", type=int, default=None, help="distinct user ids (default 10,000; 1,000 with --quick)")
    ap.add_argument("--alpha", type=float, default=0.1, help="Dirichlet concentration (default 0.1)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds per comparison; the best is reported (default 1)")
    ap.add_argument("--quick", action="store_true", help="small smoke-test run")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    small = args.quick
    if args.rows is None:
        args.rows = 100_000 if small else 1_000_000
    if args.clients is None:
        args.clients = 100 if small else 1_000
    if args.ids is None:
        args.ids = 1_000 if small else 10_000
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    FlwrDirichlet, FlwrNatural = import_flwr()
    import datasets

    datasets.disable_progress_bars()
    import hetbench  # noqa: F401  (fail here, before any timing, if hetbench is not installed)

    print("hetbench partition benchmark")
    print(
        f"  python {platform.python_version()}, numpy {np.__version__}, pyarrow {pkg_version('pyarrow')}, "
        f"datasets {datasets.__version__}, flwr-datasets {pkg_version('flwr-datasets')}, "
        f"hetbench {pkg_version('hetbench')}"
    )
    print(f"  {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}")

    t0 = time.perf_counter()
    ds, num_ids = build_dataset(args.rows, args.classes, args.ids)
    labels_np = label_of(ds)
    print(
        f"  data: {len(ds):,} rows, columns {ds.column_names}, {args.classes} classes, {num_ids:,} user ids "
        f"(built in {time.perf_counter() - t0:.1f} s, untimed)"
    )

    bench_dirichlet(ds, labels_np, args, FlwrDirichlet)
    bench_natural_id(ds, labels_np, num_ids, args, FlwrNatural)
    bench_hsu(ds, args)


if __name__ == "__main__":
    main()
