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
    * hetbench: read the label column through Arrow and encode it (``encode_labels``, the same step
      hetbench's loader runs), build a ``SampleTable``, ``DirichletPartitioner(scheme="class")
      .partition(table, seed=0)``, ``partition.client_indices()`` (one stable argsort), then
      ``ds.select(idx)`` for every client.
(b) Natural id (one partition per distinct ``user_id``).
    * flwr-datasets: ``NaturalIdPartitioner(partition_by="user_id")`` and one ``load_partition`` per id.
    * hetbench: table as in (a), ``NaturalIdPartitioner(column="user_id").partition(table, 0)``,
      ``client_indices()``, ``ds.select(idx)`` per client.
(c) hetbench ``DirichletPartitioner(scheme="client")`` (Hsu et al.): ``partition()`` time only
    (flwr-datasets has no equivalent; nothing to compare with).

Why it is a fair comparison
---------------------------
* Both tools start from the same ``Dataset`` object, hold nothing precomputed, and end with one
  ``datasets.Dataset`` per partition made by the same call, ``Dataset.select(indices)`` on that
  object. The timed region is "index build + load every partition" for both.
* Everything hetbench reads is inside its timing: the label column (flwr reads it too), the
  ``SampleTable`` and its fingerprint, the partition, the per-client index lists.
* flwr-datasets' tqdm bar (natural id, one tick per row) is switched off (``TQDM_DISABLE=1``), which
  only makes flwr faster.
* Both results are checked outside the timings: the right number of partitions, every row in
  exactly one partition, and the loaded rows equal to the partition's indices (spot checks).

``Dataset.select`` has a fixed cost of about 1-2 ms per call (datasets builds a new ``Dataset``:
info deep copy, schema, fingerprint), whichever tool asks for it. With many partitions that floor
dominates both totals, so the script also prints the index build and the loading separately, and a
second way to load hetbench's output: hetbench writes a split sorted by client (rows of a client
contiguous, ascending), so one ``ds.select(all_indices_sorted_by_client)`` followed by a contiguous
``select(range(start, stop))`` per client yields the same per-client ``Dataset`` objects.

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
    """A SampleTable over ``ds``: the label column read through Arrow and encoded as hetbench's
    loader does (the sorted distinct values become the classes)."""
    from hetbench.table import SampleTable, arrow_column, column_to_numpy, encode_labels

    raw = column_to_numpy(arrow_column(ds, "label"))
    labels, class_names = encode_labels({"train": raw}, "label")
    return SampleTable(
        splits={"train": ds},
        label_column="label",
        class_names=class_names,
        labels=labels,
        source={"dataset": "in-memory"},
    )


def load_per_client(ds, client_indices) -> list:
    """One ``ds.select(idx)`` per client (what flwr's load_partition does)."""
    return [ds.select(idx) for idx in client_indices]


def load_contiguous(ds, client_indices) -> list:
    """hetbench's output layout: one select of every row sorted by client, then a contiguous range
    per client (same rows, same order as ``load_per_client``)."""
    sizes = np.fromiter((idx.size for idx in client_indices), dtype=np.int64, count=len(client_indices))
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    by_client = ds.select(np.concatenate(client_indices))
    return [by_client.select(range(int(bounds[c]), int(bounds[c + 1]))) for c in range(len(client_indices))]


def label_of(part) -> np.ndarray:
    return part.with_format("arrow")["label"].to_numpy()


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
        f"(sizes min {sizes.min()}, median {int(np.median(sizes))}, max {sizes.max()}, empty {int((sizes == 0).sum())})"
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
    return f"  {label:<38s} {r:8.1f}x{verdict}"


def print_times(rows: list[tuple[str, float]]) -> None:
    for label, seconds in rows:
        print(f"  {label:<38s} {seconds:8.3f} s")


# ---- the benchmarks --------------------------------------------------------------------------
def bench_dirichlet(ds, labels_np: np.ndarray, args, FlwrDirichlet) -> None:
    from hetbench.partitioners import DirichletPartitioner

    n, k = len(ds), args.clients
    print(f"\n(a) Dirichlet, per-class shares: {n:,} rows, {args.classes} classes, {k} partitions, alpha {args.alpha}")

    # flwr-datasets: first load_partition builds the index; every call selects.
    t: dict[str, float] = {}
    flwr = FlwrDirichlet(num_partitions=k, partition_by="label", alpha=args.alpha, min_partition_size=0, seed=42)
    flwr.dataset = ds
    flwr_parts = load_flwr(flwr, k, t)
    flwr_index = [flwr._partition_id_to_indices[i] for i in range(k)]  # private; verification only
    summary_flwr = check_cover(PEER, flwr_index, n, flwr.num_partitions)
    check_loaded(PEER, flwr_parts, flwr_index, labels_np)
    del flwr, flwr_parts, flwr_index

    # hetbench: table (label column read inside the timing) -> partition -> indices -> select.
    with timer(t, "het"):
        with timer(t, "het_index"):
            table = hetbench_table(ds)
            part = DirichletPartitioner(num_clients=k, alpha=args.alpha, scheme="class").partition(table, seed=0)
            idx = part.client_indices()
        het_parts = load_per_client(ds, idx)
    t["het_load"] = t["het"] - t["het_index"]
    summary_het = check_cover("hetbench", idx, n, part.num_clients)
    check_loaded("hetbench", het_parts, idx, labels_np)
    del het_parts

    with timer(t, "het_contig_load"):
        contig_parts = load_contiguous(ds, idx)
    check_loaded("hetbench (contiguous)", contig_parts, idx, labels_np)
    del contig_parts, table, part, idx

    print("  check  " + summary_flwr)
    print("  check  " + summary_het)
    _report(t, "load_partition", k)


def bench_natural_id(ds, labels_np: np.ndarray, num_ids: int, args, FlwrNatural) -> None:
    from hetbench.partitioners import NaturalIdPartitioner

    n = len(ds)
    print(f"\n(b) Natural id: {n:,} rows, {num_ids:,} distinct user_id values (one partition each)")

    t: dict[str, float] = {}
    flwr = FlwrNatural(partition_by="user_id")
    flwr.dataset = ds
    flwr_parts = load_flwr(flwr, num_ids, t)
    flwr_index = [flwr._partition_id_to_indices[i] for i in range(num_ids)]  # private; verification only
    summary_flwr = check_cover(PEER, flwr_index, n, flwr.num_partitions)
    check_loaded(PEER, flwr_parts, flwr_index, labels_np)
    flwr_sizes = np.array([p.num_rows for p in flwr_parts])
    flwr_names = [str(flwr.partition_id_to_natural_id[i]) for i in range(num_ids)]
    del flwr, flwr_parts, flwr_index

    with timer(t, "het"):
        with timer(t, "het_index"):
            table = hetbench_table(ds)
            part = NaturalIdPartitioner(column="user_id").partition(table, 0)
            idx = part.client_indices()
        het_parts = load_per_client(ds, idx)
    t["het_load"] = t["het"] - t["het_index"]
    summary_het = check_cover("hetbench", idx, n, part.num_clients)
    check_loaded("hetbench", het_parts, idx, labels_np)
    same = list(part.client_names) == flwr_names and np.array_equal(part.client_sizes(), flwr_sizes)
    del het_parts

    with timer(t, "het_contig_load"):
        contig_parts = load_contiguous(ds, idx)
    check_loaded("hetbench (contiguous)", contig_parts, idx, labels_np)
    del contig_parts, table, part, idx

    print("  check  " + summary_flwr)
    print("  check  " + summary_het)
    print(f"  check  same client order and sizes in both tools: {'yes' if same else 'NO'}")
    _report(t, "load_partition", num_ids)


def bench_hsu(ds, args) -> None:
    from hetbench.partitioners import DirichletPartitioner

    n, k = len(ds), args.clients
    print(f"\n(c) hetbench Dirichlet, per-client (Hsu et al.): {n:,} rows, {k} clients, alpha {args.alpha}")
    t: dict[str, float] = {}
    with timer(t, "table"):
        table = hetbench_table(ds)
    with timer(t, "partition"):
        part = DirichletPartitioner(num_clients=k, alpha=args.alpha, scheme="client").partition(table, seed=0)
    sizes = part.client_sizes()
    if part.num_kept != n or sizes.min() < n // k or sizes.max() > -(-n // k):
        raise AssertionError("hetbench (Hsu): clients should hold n/N rows each and cover every row")
    print(f"  check  {k} clients of {sizes.min()}-{sizes.max()} rows cover all {n:,} rows")
    print_times([("hetbench table (read + encode labels)", t["table"]), ("hetbench partition()", t["partition"])])
    print("  (no flwr-datasets equivalent; not compared)")


def load_flwr(partitioner, count: int, t: dict) -> list:
    """``for i in range(count): partitioner.load_partition(i)``, timed into ``t["flwr"]``; the first
    call (which builds flwr's index) is also recorded alone in ``t["flwr_first"]``."""
    parts = []
    with timer(t, "flwr"):
        start = time.perf_counter()
        for i in range(count):
            parts.append(partitioner.load_partition(i))
            if i == 0:
                t["flwr_first"] = time.perf_counter() - start
    return parts


def _report(t: dict, what: str, count: int) -> None:
    rows = [
        (f"{PEER} total", t["flwr"]),
        (f"  of which 1st {what} (index + 1 select)", t["flwr_first"]),
        (f"  of which the other {count - 1:,} {what}", t["flwr"] - t["flwr_first"]),
        ("hetbench total", t["het"]),
        ("  of which index (table+partition+idx)", t["het_index"]),
        (f"  of which {count:,} x ds.select(idx)", t["het_load"]),
        (f"hetbench alt. load: 1 select + ranges", t["het_contig_load"]),
    ]
    print_times(rows)
    print(ratio_line(f"ratio {PEER} / hetbench (total)", t["flwr"], t["het"], TARGET))
    print(ratio_line("ratio, index build only", t["flwr_first"], t["het_index"]))
    alt = t["het_index"] + t["het_contig_load"]
    print(ratio_line("ratio, hetbench with alt. load", t["flwr"], alt))


# ---- main ------------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=None, help="rows (default 1,000,000; 100,000 with --quick)")
    ap.add_argument("--classes", type=int, default=100, help="label classes (default 100)")
    ap.add_argument("--clients", type=int, default=None, help="Dirichlet partitions (default 1,000; 100 with --quick)")
    ap.add_argument("--ids", type=int, default=None, help="distinct user ids (default 10,000; 1,000 with --quick)")
    ap.add_argument("--alpha", type=float, default=0.1, help="Dirichlet concentration (default 0.1)")
    ap.add_argument("--quick", action="store_true", help="small smoke-test run")
    args = ap.parse_args(argv)
    small = args.quick
    args.rows = args.rows or (100_000 if small else 1_000_000)
    args.clients = args.clients or (100 if small else 1_000)
    args.ids = args.ids or (1_000 if small else 10_000)
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    FlwrDirichlet, FlwrNatural = import_flwr()
    import datasets

    datasets.disable_progress_bars()
    import hetbench  # noqa: F401  (version check below)

    print("hetbench partition benchmark")
    print(
        f"  python {platform.python_version()}, numpy {np.__version__}, pyarrow {pkg_version('pyarrow')}, "
        f"datasets {datasets.__version__}, flwr-datasets {pkg_version('flwr-datasets')}, hetbench {pkg_version('hetbench')}"
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
