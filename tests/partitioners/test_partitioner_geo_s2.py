"""Tests of the adaptive S2 cell partitioner (Hsu et al. 2020, sec. 4.1): hetbench.partitioners.geo_s2."""

from __future__ import annotations

import bisect
from pathlib import Path

import datasets
import numpy as np
import pytest
import s2sphere
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetbench import s2
from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition
from hetbench.partitioners.geo_s2 import (
    GeoS2Partitioner,
    adaptive_s2_cells,
    adaptive_split,
    coordinates_to_leaf_ids,
    default_nmin,
    locate_cells,
)
from hetbench.table import SampleTable

BIRDCLEF = Path(__file__).resolve().parents[3] / "shared" / "data" / "geo" / "birdclef2022_train_metadata.csv"
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- helpers ---------------------------------------------------------------------------------


def geo_table(lat, lon, test_lat=None, test_lon=None) -> SampleTable:
    """A SampleTable with latitude / longitude columns (train, and optionally test)."""
    splits, labels = {}, {}
    for split, la, lo in (("train", lat, lon), ("test", test_lat, test_lon)):
        if la is None:
            continue
        la, lo = list(la), list(lo)
        lab = np.arange(len(la), dtype=np.int64) % 3
        features = datasets.Features(
            {"label": datasets.Value("int64"), "latitude": datasets.Value("float64"), "longitude": datasets.Value("float64")}
        )
        splits[split] = datasets.Dataset.from_dict(
            {"label": lab.tolist(), "latitude": la, "longitude": lo}, features=features
        )
        labels[split] = lab
    return SampleTable(splits=splits, label_column="label", class_names=["a", "b", "c"], labels=labels, source={"dataset": "mem"})


def random_points(rng: np.random.Generator, n: int, clusters: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Uniform points on the sphere plus tight clusters (so that cells split to many levels)."""
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, n)))
    lon = rng.uniform(-180, 180, n)
    centres = rng.integers(0, n, clusters)
    which = rng.integers(0, clusters, n)
    tight = rng.random(n) < 0.6
    spread = 10.0 ** rng.uniform(-5, 0, n)
    lat = np.where(tight, np.clip(lat[centres[which]] + rng.normal(0, 1, n) * spread, -90, 90), lat)
    lon = np.where(tight, np.clip(lon[centres[which]] + rng.normal(0, 1, n) * spread, -180, 180), lon)
    return lat, lon


def reference_cells(leaf_ids, nmax: int, max_level: int = 30) -> dict[int, int]:
    """Plain recursive subdivision (one cell at a time, Python ints): final cell -> count."""
    ids = sorted(int(v) for v in leaf_ids)

    def count(cell: int) -> int:
        lsb = cell & -cell
        return bisect.bisect_right(ids, cell + lsb - 1) - bisect.bisect_left(ids, cell - lsb + 1)

    out: dict[int, int] = {}
    stack = [int(c) for c in s2.face_cells()]
    while stack:
        cell = stack.pop()
        k = count(cell)
        if k == 0:
            continue
        if k <= nmax or int(s2.level(np.uint64(cell))) == max_level:
            out[cell] = k
        else:
            stack.extend(int(c) for c in s2.children(cell))
    return out


def check_partition(part: Partition, lat, lon, nmax: int, nmin: int, max_level: int = 30, sample: int = 200) -> None:
    """Every invariant of a geo-s2 partition of the points (lat, lon)."""
    lat = np.asarray(lat, dtype=np.float64)
    lon = np.asarray(lon, dtype=np.float64)
    n = lat.size
    a, r = part.assignment, part.drop_reason
    assert a.shape == (n,) and r.shape == (n,)
    # clients plus dropped rows = the input, with the reasons
    dropped = part.dropped_counts()
    assert part.num_kept + sum(dropped.values()) == n
    missing = np.isnan(lat) | np.isnan(lon)
    with np.errstate(invalid="ignore"):
        out = ~missing & ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90) & (np.abs(lon) <= 180))
    assert dropped.get("missing-value", 0) == int(missing.sum())
    assert dropped.get("out-of-range", 0) == int(out.sum())
    assert np.all(r[missing] == DropReason.MISSING_VALUE) and np.all(r[out] == DropReason.OUT_OF_RANGE)
    assert set(np.unique(r).tolist()) <= {0, DropReason.MISSING_VALUE, DropReason.OUT_OF_RANGE, DropReason.CLIENT_TOO_SMALL}

    valid = ~missing & ~out
    leaf = s2.cell_ids_from_latlng(lat[valid], lon[valid])
    sorted_leaf = np.sort(leaf)
    cells = np.array([s2.from_token(t) for t in part.client_names], dtype=np.uint64)
    assert np.all(cells[1:] > cells[:-1])  # sorted by id: Hilbert order
    sizes = part.client_sizes()
    levels = s2.level(cells)
    # size bounds: no kept cell above nmax (unless it cannot split) or below nmin
    assert np.all(sizes >= max(nmin, 1))
    assert np.all((sizes <= nmax) | (levels == max_level))
    # every valid point of every cell is counted: client size = points inside the cell
    inside = np.searchsorted(sorted_leaf, s2.range_max(cells), "right") - np.searchsorted(sorted_leaf, s2.range_min(cells))
    assert np.array_equal(inside, sizes)
    # every kept point lies in its client's cell (vectorised, all points)
    kept_valid = a[valid] >= 0
    assert np.all(s2.contains(cells[a[valid][kept_valid]], leaf[kept_valid]))
    # not over-split: every non-face kept cell's parent holds more than nmax points
    nonface = levels > 0
    if nonface.any():
        par = s2.parent(cells[nonface], levels[nonface] - 1)
        pc = np.searchsorted(sorted_leaf, s2.range_max(par), "right") - np.searchsorted(sorted_leaf, s2.range_min(par))
        assert np.all(pc > nmax)
    # points dropped as too small sit in final cells with fewer than nmin points
    small = valid.copy()
    small[valid] = a[valid] < 0
    assert np.all(r[small] == DropReason.CLIENT_TOO_SMALL)
    if small.any():
        fcells, fcounts = adaptive_split(sorted_leaf, nmax, max_level)
        idx = locate_cells(s2.cell_ids_from_latlng(lat[small], lon[small]), fcells)
        assert np.all(idx >= 0) and np.all(fcounts[idx] < nmin)
    # cross-check with s2sphere on a sample of kept points
    kept_rows = np.flatnonzero(a >= 0)
    rng = np.random.default_rng(0)
    for i in rng.choice(kept_rows, size=min(sample, kept_rows.size), replace=False):
        cell = s2sphere.CellId.from_token(part.client_names[a[i]])
        point = s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(float(lat[i]), float(lon[i])))
        assert cell.contains(point)


# ---- the pure numpy heart --------------------------------------------------------------------


def test_vectorised_children_match_s2_and_s2sphere():
    rng = np.random.default_rng(1)
    leaf = s2.cell_ids_from_latlng(rng.uniform(-90, 90, 20), rng.uniform(-180, 180, 20))
    for lvl in (0, 1, 7, 15, 29):
        cells = s2.parent(leaf, lvl)
        lsb = np.uint64(1 << (2 * (30 - lvl)))
        kids = ((cells - lsb)[:, None] + (lsb >> np.uint64(2)) * np.array([1, 3, 5, 7], dtype=np.uint64)).ravel()
        expected = np.concatenate([s2.children(int(c)) for c in cells])
        assert np.array_equal(kids, expected)
        for c, four in zip(cells[:3].tolist(), kids.reshape(-1, 4)[:3].tolist()):
            assert [k.id() for k in s2sphere.CellId(c).children()] == four


def test_adaptive_matches_reference_and_bounds():
    rng = np.random.default_rng(2)
    lat, lon = random_points(rng, 5000)
    leaf = s2.cell_ids_from_latlng(lat, lon)
    for nmax in (1000, 100, 7):
        cells, counts = adaptive_split(np.sort(leaf), nmax)
        assert dict(zip(cells.tolist(), counts.tolist())) == reference_cells(leaf, nmax)
        nmin = default_nmin(nmax)
        cop, kept, kcounts = adaptive_s2_cells(leaf, nmax, nmin)
        assert np.array_equal(kept, cells[counts >= nmin]) and np.all(kcounts >= nmin)
        assert np.all(s2.contains(cop[cop != 0], leaf[cop != 0]))
        assert int((cop != 0).sum()) == int(kcounts.sum())


def test_face_cells_only_when_small():
    leaf = s2.cell_ids_from_latlng(np.array([0.0, 0.0, 89.0]), np.array([0.0, 90.0, 0.0]))
    cop, cells, counts = adaptive_s2_cells(leaf, nmax=5, nmin=1)
    assert np.array_equal(s2.level(cells), [0, 0, 0]) and counts.tolist() == [1, 1, 1]
    assert np.array_equal(cop, cells)  # faces 0, 1, 2 in order


def test_duplicates_stop_at_max_level():
    leaf = s2.cell_ids_from_latlng(np.full(10, 12.5), np.full(10, -3.25))
    _, cells, counts = adaptive_s2_cells(leaf, nmax=3, nmin=1)
    assert cells.tolist() == [int(leaf[0])] and counts.tolist() == [10]  # one leaf cell, cannot split
    _, cells, counts = adaptive_s2_cells(leaf, nmax=3, nmin=1, max_level=9)
    assert s2.level(cells).tolist() == [9] and counts.tolist() == [10]


def test_empty_input():
    cop, cells, counts = adaptive_s2_cells(np.array([], dtype=np.uint64), 10, 1)
    assert cop.size == 0 and cells.size == 0 and counts.size == 0


@PROPS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    nmax=st.integers(1, 60),
    nmin_frac=st.floats(0, 1),
    max_level=st.sampled_from([30, 30, 12, 3, 0]),
    dups=st.integers(0, 30),
)
def test_property_random_points(seed, n, nmax, nmin_frac, max_level, dups):
    rng = np.random.default_rng(seed)
    lat, lon = random_points(rng, n, clusters=int(rng.integers(1, 5)))
    lat = np.concatenate([lat, np.full(dups, lat[0])])  # exact duplicates: splitting cannot separate them
    lon = np.concatenate([lon, np.full(dups, lon[0])])
    nmin = int(round(nmin_frac * nmax))
    leaf = s2.cell_ids_from_latlng(lat, lon)
    cells, counts = adaptive_split(np.sort(leaf), nmax, max_level)
    assert dict(zip(cells.tolist(), counts.tolist())) == reference_cells(leaf, nmax, max_level)
    part_kept = counts >= max(nmin, 1)
    if not part_kept.any():
        with pytest.raises(HetbenchError, match="no S2 cell"):
            GeoS2Partitioner(nmax=nmax, nmin=nmin, max_level=max_level).partition(geo_table(lat, lon))
        return
    part = GeoS2Partitioner(nmax=nmax, nmin=nmin, max_level=max_level).partition(geo_table(lat, lon))
    check_partition(part, lat, lon, nmax, nmin, max_level, sample=30)


# ---- the Partitioner ---------------------------------------------------------------------------


def test_partitioner_invariants_and_params():
    rng = np.random.default_rng(3)
    lat, lon = random_points(rng, 20000)
    p = GeoS2Partitioner(nmax=300)
    assert p.nmin == 3 and p.name == "geo-s2"
    assert p.params() == {"lat_col": "latitude", "lon_col": "longitude", "nmax": 300, "nmin": 3, "max_level": 30}
    part = p.partition(geo_table(lat, lon), seed=5)
    assert part.num_clients > 60
    assert part.recipe["method"] == "geo-s2" and part.recipe["params"] == p.params()
    check_partition(part, lat, lon, 300, 3)
    assert GeoS2Partitioner(**p.params()).params() == p.params()  # rebuildable from its recipe


def test_bad_coordinates_dropped_with_reasons():
    lat = [10.0, None, float("nan"), 91.0, -90.5, 10.0, float("inf"), 45.0, 90.0, -90.0, 10.0]
    lon = [20.0, 20.0, 20.0, 20.0, 20.0, 180.5, 20.0, float("-inf"), 180.0, -180.0, float("nan")]
    part = GeoS2Partitioner(nmax=100, nmin=1).partition(geo_table(lat, lon))
    r = part.drop_reason.tolist()
    M, O = DropReason.MISSING_VALUE, DropReason.OUT_OF_RANGE
    assert r == [0, M, M, O, O, O, O, O, 0, 0, M]
    assert part.dropped_counts() == {"missing-value": 3, "out-of-range": 5}
    assert part.num_kept == 3
    as_float = np.array([np.nan if v is None else v for v in lat])
    check_partition(part, as_float, lon, 100, 1)


def test_coordinates_to_leaf_ids_missing_wins():
    leaf, reason = coordinates_to_leaf_ids(np.array([np.nan, 100.0, 0.0]), np.array([500.0, np.nan, 0.0]))
    assert reason.tolist() == [DropReason.MISSING_VALUE, DropReason.MISSING_VALUE, 0]
    assert leaf[:2].tolist() == [0, 0] and leaf[2] != 0


def test_small_cells_dropped():
    rng = np.random.default_rng(4)
    lat = np.concatenate([rng.normal(48.0, 0.01, 500), [-33.0, -33.1]])  # a big cluster and 2 strays
    lon = np.concatenate([rng.normal(2.0, 0.01, 500), [151.0, 151.1]])
    part = GeoS2Partitioner(nmax=50, nmin=5).partition(geo_table(lat, lon))
    assert part.dropped_counts().get("client-too-small", 0) >= 2
    assert np.all(part.drop_reason[-2:] == DropReason.CLIENT_TOO_SMALL)
    check_partition(part, lat, lon, 50, 5)


def test_deterministic():
    rng = np.random.default_rng(6)
    lat, lon = random_points(rng, 3000)
    a = GeoS2Partitioner(nmax=40).partition(geo_table(lat, lon), seed=0)
    b = GeoS2Partitioner(nmax=40).partition(geo_table(lat, lon), seed=0)
    c = GeoS2Partitioner(nmax=40).partition(geo_table(lat, lon), seed=123)  # the seed plays no part
    assert np.array_equal(a.assignment, b.assignment) and a.client_names == b.client_names
    assert a.fingerprint == b.fingerprint
    assert np.array_equal(a.assignment, c.assignment)


def test_parameter_errors():
    with pytest.raises(HetbenchError, match="must not exceed"):
        GeoS2Partitioner(nmax=10, nmin=11)
    with pytest.raises(HetbenchError, match="at least 1"):
        GeoS2Partitioner(nmax=0)
    with pytest.raises(HetbenchError, match="max_level"):
        GeoS2Partitioner(max_level=31)
    with pytest.raises(HetbenchError):
        adaptive_s2_cells(np.zeros(0, dtype=np.uint64), nmax=5, nmin=6)
    assert default_nmin(3000) == 30 and default_nmin(100) == 1 and default_nmin(30) == 1 and default_nmin(250) == 3


def test_nothing_kept_and_bad_columns():
    with pytest.raises(HetbenchError, match="no S2 cell"):
        GeoS2Partitioner(nmax=5, nmin=5).partition(geo_table([0.0, 0.0, 89.0], [0.0, 90.0, 0.0]))
    with pytest.raises(HetbenchError, match="valid coordinates"):
        GeoS2Partitioner(nmax=5).partition(geo_table([float("nan"), 95.0], [0.0, 0.0]))
    with pytest.raises(HetbenchError, match="not found"):
        GeoS2Partitioner(lat_col="lat").partition(geo_table([0.0], [0.0]))
    words = SampleTable(
        splits={"train": datasets.Dataset.from_dict({"label": [0], "latitude": ["north"], "longitude": ["east"]})},
        label_column="label",
        class_names=["a"],
        labels={"train": np.array([0])},
    )
    with pytest.raises(HetbenchError, match="numbers"):
        GeoS2Partitioner().partition(words)


def test_integer_and_string_number_columns():
    ints = SampleTable(
        splits={"train": datasets.Dataset.from_dict({"label": [0, 0, 0], "latitude": [10, None, 12], "longitude": ["5", "6", "7.5"]})},
        label_column="label",
        class_names=["a"],
        labels={"train": np.array([0, 0, 0])},
    )
    part = GeoS2Partitioner(nmax=10, nmin=1).partition(ints)
    assert part.drop_reason.tolist() == [0, DropReason.MISSING_VALUE, 0]


def test_assign_split_lines_up_with_train_cells():
    rng = np.random.default_rng(7)
    lat, lon = random_points(rng, 4000)
    t_lat = np.concatenate([lat[:500], [np.nan, 0.0, 95.0]])
    t_lon = np.concatenate([lon[:500], [0.0, np.inf, 0.0]])
    extra_lat, extra_lon = random_points(np.random.default_rng(8), 300)
    t_lat, t_lon = np.concatenate([t_lat, extra_lat]), np.concatenate([t_lon, extra_lon])
    table = geo_table(lat, lon, t_lat, t_lon)
    p = GeoS2Partitioner(nmax=60)
    train = p.partition(table)
    test = p.assign_split(table, "test", train)
    assert test.client_names == train.client_names and test.recipe["split"] == "test"
    # the same coordinates land in the same client
    assert np.array_equal(test.assignment[:500], train.assignment[:500])
    assert test.drop_reason[500:503].tolist() == [DropReason.MISSING_VALUE, DropReason.OUT_OF_RANGE, DropReason.OUT_OF_RANGE]
    cells = np.array([s2.from_token(t) for t in train.client_names], dtype=np.uint64)
    leaf = s2.cell_ids_from_latlng(extra_lat, extra_lon)
    a = test.assignment[503:]
    assert np.all(s2.contains(cells[a[a >= 0]], leaf[a >= 0]))
    outside = ~s2.contains(cells[None, :], leaf[:, None]).any(axis=1)
    assert np.array_equal(a < 0, outside)
    assert np.all(test.drop_reason[503:][outside] == DropReason.CLIENT_TOO_SMALL)
    assert test.num_kept + sum(test.dropped_counts().values()) == t_lat.size


def test_birdclef_real_data():
    if not BIRDCLEF.is_file():
        pytest.skip(f"BirdCLEF 2022 metadata not found at {BIRDCLEF}")
    from hetbench.sources import load_table

    table = load_table(str(BIRDCLEF), label_col="primary_label")
    lat = table.column("train", "latitude").astype(np.float64)
    lon = table.column("train", "longitude").astype(np.float64)
    p = GeoS2Partitioner(nmax=500)
    part = p.partition(table, seed=0)
    assert p.nmin == 5 and part.num_clients >= 20
    check_partition(part, lat, lon, 500, 5)
    # the most populous site of the file (141 recordings at 53.9299, -2.9833) is one client
    site = np.flatnonzero((lat == 53.9299) & (lon == -2.9833))
    assert site.size == 141 and np.unique(part.assignment[site]).size == 1 and part.assignment[site[0]] >= 0
    again = GeoS2Partitioner(nmax=500).partition(table, seed=0)
    assert again.fingerprint == part.fingerprint


def test_million_points_every_cell_within_bounds():
    """At benchmark scale (speed is measured in benchmarks/bench_geo.py, not asserted here)."""
    rng = np.random.default_rng(9)
    n = 1_000_000
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, n)))
    lon = rng.uniform(-180, 180, n)
    leaf = s2.cell_ids_from_latlng(lat, lon)
    _, cells, counts = adaptive_s2_cells(leaf, 3000, 30)
    assert counts.max() <= 3000 and counts.min() >= 30 and counts.sum() == n
    assert np.all(np.diff(cells.astype(np.float64)) > 0)
