"""Geo and per-user splitting speed (issue 4), one run, ratios printed.

(a) S2 cell ids for 1,000,000 points: hetbench's vectorised ``s2.cell_ids_from_latlng`` vs a
    per-point s2sphere loop (timed on a 20,000-point sample and extrapolated; both give the same
    ids, checked on that sample). Target: >= 20x.
(b) The adaptive S2 split (Hsu et al. 2020 sec. 4.1, Nmax 3000) of 1,000,000 points end to end:
    cell ids + adaptive split + client assignment, through ``GeoS2Partitioner.partition``.
(c) ``build users`` with the Landmarks filters on 1,000,000 rows (10,000 heavy-tailed users,
    1,000 heavy-tailed classes) - the filters to a fixed point, then one client per user, then every
    client's rows (``ClientPartitions``) - vs flwr-datasets ``NaturalIdPartitioner`` *without*
    filters (index build + every ``load_partition``) on the same rows. Target: >= 20x.

Run: ``python benchmarks/bench_geo.py`` (about a minute); ``--quick`` for 100k rows.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n = 100_000 if args.quick else 1_000_000
    n_users = 1_000 if args.quick else 10_000

    import datasets
    import s2sphere

    from hetbench import s2
    from hetbench.clients import ClientPartitions
    from hetbench.partitioners import GeoS2Partitioner, UsersPartitioner
    from hetbench.sources import load_table

    datasets.disable_progress_bars()
    rng = np.random.default_rng(0)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, n)))
    lon = rng.uniform(-180, 180, n)
    print(f"hetbench geo benchmark: {n:,} points, s2sphere {getattr(s2sphere, '__version__', '?')}, {os.cpu_count()} CPUs")

    # (a) cell ids
    t0 = time.perf_counter()
    ids = s2.cell_ids_from_latlng(lat, lon)
    t_ours = time.perf_counter() - t0
    sample = 20_000
    t0 = time.perf_counter()
    ref = [s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(a, b)).id() for a, b in zip(lat[:sample], lon[:sample])]
    t_ref = (time.perf_counter() - t0) * n / sample
    same = np.array_equal(np.array(ref, dtype=np.uint64), ids[:sample])
    print(f"\n(a) level-30 cell ids, {n:,} points (ids identical on the {sample:,}-point sample: {same})")
    print(f"  s2sphere per-point loop (extrapolated)   {t_ref:8.2f} s   ({t_ref / n * 1e6:.2f} us/point)")
    print(f"  hetbench vectorised                      {t_ours:8.2f} s   ({t_ours / n * 1e6:.2f} us/point)")
    print(f"  ratio                                    {t_ref / t_ours:8.1f} x   (target >= 20x)")

    # (b) adaptive split end to end
    ds = datasets.Dataset.from_dict({"latitude": lat, "longitude": lon, "label": rng.integers(0, 100, n)})
    t0 = time.perf_counter()
    table = load_table(ds)
    part = GeoS2Partitioner(nmax=3000).partition(table, seed=0)
    t_geo = time.perf_counter() - t0
    sizes = part.client_sizes()
    print(f"\n(b) adaptive S2 split, Nmax 3000: {part.num_clients} cells ({sizes.min()}-{sizes.max()} points)")
    print(f"  load_table + cell ids + split + assign   {t_geo:8.2f} s")

    # (c) users with Landmarks filters vs flwr NaturalId without filters
    users = np.minimum(rng.zipf(1.3, n), n_users) - 1
    classes = np.minimum(rng.zipf(1.2, n), 1000) - 1
    ds = datasets.Dataset.from_dict({"user_id": [f"user_{u:05d}" for u in users], "label": classes})
    try:
        from flwr_datasets.partitioner import NaturalIdPartitioner as FlwrNatural
    except ImportError:
        FlwrNatural = None
    t0 = time.perf_counter()
    table = load_table(ds)
    part = UsersPartitioner(column="user_id", filters="landmarks").partition(table, seed=0)
    clients = ClientPartitions.from_partition(ds, part)
    loaded = [clients.table(i) for i in range(clients.num_partitions)]
    t_users = time.perf_counter() - t0
    print(f"\n(c) users: {n:,} rows, {len(np.unique(users)):,} users; Landmarks filters keep {part.num_kept:,} rows, {part.num_clients:,} users")
    print(f"  hetbench filters + natural id + every client's rows   {t_users:8.2f} s")
    if FlwrNatural is None:
        print("  flwr-datasets not installed (pip install -e .[bench]): no peer timing")
        return
    t0 = time.perf_counter()
    p = FlwrNatural(partition_by="user_id")
    p.dataset = ds
    flwr_parts = [p.load_partition(i) for i in range(p.num_partitions)]
    t_flwr = time.perf_counter() - t0
    print(f"  flwr-datasets NaturalIdPartitioner, no filters ({len(flwr_parts):,} partitions)   {t_flwr:8.2f} s")
    print(f"  ratio                                    {t_flwr / t_users:8.1f} x   (target >= 20x)")
    del loaded


if __name__ == "__main__":
    main()
