"""hetbench.s2 against the reference implementation, s2sphere: every id must be bit-identical."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench import s2

s2sphere = pytest.importorskip("s2sphere")
CellId, LatLng = s2sphere.CellId, s2sphere.LatLng

MAGIC_LAT = math.degrees(math.atan(1 / math.sqrt(2)))  # 35.26438968...: the cube's corners


def ref_ids(lat, lng) -> np.ndarray:
    """s2sphere's leaf cell ids, one point at a time."""
    lat = np.asarray(lat, dtype=np.float64).ravel().tolist()
    lng = np.asarray(lng, dtype=np.float64).ravel().tolist()
    return np.array(
        [CellId.from_lat_lng(LatLng.from_degrees(a, b)).id() for a, b in zip(lat, lng)], dtype=np.uint64
    )


def assert_same_ids(lat, lng) -> None:
    got = s2.cell_ids_from_latlng(np.asarray(lat, dtype=np.float64), np.asarray(lng, dtype=np.float64))
    want = ref_ids(lat, lng)
    assert got.dtype == np.uint64
    bad = np.flatnonzero(got.ravel() != want)
    assert bad.size == 0, (
        f"{bad.size} mismatches, e.g. lat={np.ravel(lat)[bad[0]]!r} lng={np.ravel(lng)[bad[0]]!r}: "
        f"{int(got.ravel()[bad[0]]):#x} != {int(want[bad[0]]):#x}"
    )


def uniform_sphere(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return np.degrees(np.arcsin(rng.uniform(-1.0, 1.0, n))), rng.uniform(-180.0, 180.0, n)


def random_leaf_ids(n: int, seed: int) -> np.ndarray:
    """Random valid leaf ids: a random face and 60 random position bits."""
    rng = np.random.default_rng(seed)
    faces = rng.integers(0, 6, n).astype(np.uint64)
    pos = rng.integers(0, 1 << 60, n, dtype=np.uint64)
    return (faces << np.uint64(61)) | (pos << np.uint64(1)) | np.uint64(1)


def random_cells(n: int, seed: int, levels=(0, 30)) -> np.ndarray:
    """Random cells at random levels in [levels[0], levels[1]]."""
    rng = np.random.default_rng(seed + 1)
    return s2.parent(random_leaf_ids(n, seed), rng.integers(levels[0], levels[1] + 1, n))


def corner_points(n_cells: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The lat/lng (degrees) of the 4 vertices of random cells at levels 1..30, via s2sphere."""
    lats, lngs = [], []
    for cid in random_cells(n_cells, seed, levels=(1, 30)).tolist():
        cell = s2sphere.Cell(CellId(cid))
        for k in range(4):
            ll = LatLng.from_point(cell.get_vertex(k))
            lats.append(ll.lat().degrees)
            lngs.append(ll.lng().degrees)
    return np.array(lats), np.array(lngs)


def with_neighbours(lat, lng, ulps: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Each point plus the points a few ulps away in lat, lng, or both."""
    lat, lng = np.asarray(lat, dtype=np.float64), np.asarray(lng, dtype=np.float64)
    lats, lngs = [lat], [lng]
    for da in range(-ulps, ulps + 1):
        for db in range(-ulps, ulps + 1):
            a, b = lat.copy(), lng.copy()
            for _ in range(abs(da)):
                a = np.nextafter(a, math.copysign(np.inf, da))
            for _ in range(abs(db)):
                b = np.nextafter(b, math.copysign(np.inf, db))
            lats.append(np.clip(a, -90.0, 90.0))
            lngs.append(np.clip(b, -180.0, 180.0))
    return np.concatenate(lats), np.concatenate(lngs)


# --- lat/lng -> leaf ids -----------------------------------------------------------------
def test_uniform_random_points_match_s2sphere():
    assert_same_ids(*uniform_sphere(200_000, seed=0))


@pytest.mark.slow
def test_million_uniform_points_match_s2sphere():
    assert_same_ids(*uniform_sphere(1_000_000, seed=1))


def test_poles_antimeridian_and_prime_meridian():
    lngs = [-180.0, -179.999999, -135.0, -90.0, -45.0, -1e-300, -0.0, 0.0, 1e-300, 30.0, 45.0, 90.0, 135.0, 180.0]
    lats = [-90.0, -89.9999999, -45.0, -1e-300, -0.0, 0.0, 1e-300, 45.0, 89.9999999, 90.0]
    lat, lng = np.meshgrid(lats, lngs)
    assert_same_ids(*with_neighbours(lat.ravel(), lng.ravel()))
    # the antimeridian and lng = 0 at many latitudes
    grid = np.linspace(-90.0, 90.0, 1001)
    for meridian in (-180.0, 180.0, 0.0, -0.0):
        assert_same_ids(grid, np.full_like(grid, meridian))


def test_face_edges_and_cube_corners():
    lat, lng = [], []
    # cube corners: |x| == |y| == |z|
    for a in (MAGIC_LAT, -MAGIC_LAT, 35.26438968, -35.26438968):
        for b in (45.0, -45.0, 135.0, -135.0):
            lat.append(a)
            lng.append(b)
    # face edges: |x| == |z| or |y| == |z| (lat 45 on the axes), |x| == |y| (lng +-45, +-135)
    for b in (0.0, 90.0, 180.0, -90.0, -180.0):
        for a in (45.0, -45.0):
            lat.append(a)
            lng.append(b)
    for b in (45.0, -45.0, 135.0, -135.0):
        for a in np.linspace(-MAGIC_LAT, MAGIC_LAT, 41):
            lat.append(a)
            lng.append(b)
    # |y| == |z| and |x| == |z| edges away from the axes: tan(lat) = |sin(lng)| or |cos(lng)|
    for b in np.linspace(-180.0, 180.0, 73):
        lat.append(math.degrees(math.atan(abs(math.sin(math.radians(b))))))
        lng.append(b)
        lat.append(-math.degrees(math.atan(abs(math.cos(math.radians(b))))))
        lng.append(b)
    assert_same_ids(*with_neighbours(lat, lng, ulps=3))


def test_cell_corners_match_s2sphere():
    lat, lng = corner_points(3000, seed=2)
    assert_same_ids(lat, lng)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-90.0, 90.0, allow_nan=False),
            st.floats(-180.0, 180.0, allow_nan=False),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_hypothesis_points_match_s2sphere(points):
    lat, lng = zip(*points)
    assert_same_ids(lat, lng)


@settings(max_examples=60, deadline=None)
@given(st.floats(-1e4, 1e4, allow_nan=False), st.floats(-1e4, 1e4, allow_nan=False))
def test_out_of_range_finite_input_is_mapped_like_s2sphere(lat, lng):
    assert_same_ids([lat], [lng])


def test_shapes_broadcasting_and_dtypes():
    lat, lng = uniform_sphere(12, seed=3)
    flat = s2.cell_ids_from_latlng(lat, lng)
    assert flat.dtype == np.uint64 and flat.shape == (12,)
    np.testing.assert_array_equal(s2.cell_ids_from_latlng(lat.reshape(3, 4), lng.reshape(3, 4)), flat.reshape(3, 4))
    np.testing.assert_array_equal(s2.cell_ids_from_latlng(lat.tolist(), lng.tolist()), flat)
    scalar = s2.cell_ids_from_latlng(np.float64(lat[0]), np.float64(lng[0]))
    assert scalar.shape == () and int(scalar) == int(flat[0])
    np.testing.assert_array_equal(s2.cell_ids_from_latlng(lat[:1], lng), s2.cell_ids_from_latlng(np.full(12, lat[0]), lng))
    empty = s2.cell_ids_from_latlng(np.array([]), np.array([]))
    assert empty.dtype == np.uint64 and empty.shape == (0,)
    # several internal chunks
    big_lat, big_lng = uniform_sphere(3 * s2._CHUNK + 17, seed=4)
    whole = s2.cell_ids_from_latlng(big_lat, big_lng)
    np.testing.assert_array_equal(whole[-40:], ref_ids(big_lat[-40:], big_lng[-40:]))


def test_nan_and_inf_give_some_uint64_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids = s2.cell_ids_from_latlng(
            np.array([np.nan, 0.0, np.nan, np.inf, 10.0, -np.inf]), np.array([0.0, np.nan, np.nan, 0.0, np.inf, 5.0])
        )
    assert ids.dtype == np.uint64 and ids.shape == (6,)


def _perturbed_trig(seed: int):
    """numpy sin/cos moved by up to 4 ulp, as vectorised (e.g. SVML) libraries may be."""
    rng = np.random.default_rng(seed)

    def trig(phi, theta):
        out = []
        for values in s2.np.sin(phi), s2.np.cos(phi), s2.np.sin(theta), s2.np.cos(theta):
            steps = rng.integers(-4, 5, values.shape)
            values = values.copy()
            for k in range(4):
                moved = np.abs(steps) > k
                values[moved] = np.nextafter(values[moved], np.sign(steps[moved]) * np.inf)
            out.append(values)
        return tuple(out)

    return trig


def test_exact_even_if_numpy_sin_cos_differ_from_libm(monkeypatch):
    """Points near cell boundaries are recomputed with math.sin/cos, so ulp-level differences
    between numpy's and the C library's sin/cos (AVX-512 builds) do not change any id."""
    corner_lat, corner_lng = corner_points(1500, seed=5)
    rand_lat, rand_lng = uniform_sphere(20_000, seed=6)
    lat = np.concatenate([corner_lat, rand_lat, [90.0, -90.0, 0.0, MAGIC_LAT, 45.0]])
    lng = np.concatenate([corner_lng, rand_lng, [0.0, 180.0, 180.0, 45.0, 90.0]])
    want = ref_ids(lat, lng)

    monkeypatch.setattr(s2, "_vector_trig", _perturbed_trig(7))
    np.testing.assert_array_equal(s2.cell_ids_from_latlng(lat, lng), want)

    # control: without the fallback, the perturbation does change ids near corners
    monkeypatch.setattr(s2, "_vector_trig", _perturbed_trig(7))
    monkeypatch.setattr(s2, "_ST_TOL", -1.0)
    monkeypatch.setattr(s2, "_FACE_TOL", -1.0)
    assert (s2.cell_ids_from_latlng(lat, lng) != want).sum() > 0


def test_fallback_is_rare_for_random_points():
    lat, lng = uniform_sphere(200_000, seed=8)
    phi, theta = lat * s2._DEG2RAD, lng * s2._DEG2RAD
    sp, cp, st_, ct = s2._vector_trig(phi, theta)
    _, unsure = s2._xyz_to_ids(ct * cp, st_ * cp, sp)
    assert unsure.mean() < 1e-3


# --- bit operations on ids ------------------------------------------------------------------
def test_parent_matches_s2sphere_at_every_level():
    leaves = random_leaf_ids(400, seed=10)
    for lvl in range(31):
        got = s2.parent(leaves, lvl)
        assert got.dtype == np.uint64
        want = np.array([CellId(i).parent(lvl).id() for i in leaves.tolist()], dtype=np.uint64)
        np.testing.assert_array_equal(got, want)
    # a level array (broadcast), numpy integer scalars, and non-leaf cells
    levels = np.random.default_rng(11).integers(0, 31, leaves.size)
    np.testing.assert_array_equal(
        s2.parent(leaves, levels), [CellId(i).parent(int(lv)).id() for i, lv in zip(leaves.tolist(), levels)]
    )
    np.testing.assert_array_equal(s2.parent(leaves, np.int32(7)), s2.parent(leaves, 7))
    cells = s2.parent(leaves, 20)
    np.testing.assert_array_equal(s2.parent(cells, 9), s2.parent(leaves, 9))
    np.testing.assert_array_equal(s2.parent(cells, 20), cells)


@pytest.mark.parametrize("bad", [-1, 31, 2.5, np.array([3, 40])])
def test_parent_rejects_bad_levels(bad):
    with pytest.raises(ValueError):
        s2.parent(random_leaf_ids(2, seed=12), bad)


def test_level_and_face_match_s2sphere():
    cells = np.concatenate([random_cells(3000, seed=13), s2.face_cells()])
    assert s2.level(cells).dtype == np.int64
    np.testing.assert_array_equal(s2.level(cells), [CellId(i).level() for i in cells.tolist()])
    np.testing.assert_array_equal(s2.face(cells), [CellId(i).face() for i in cells.tolist()])
    leaves = random_leaf_ids(50, seed=20)
    for lvl in range(31):
        assert (s2.level(s2.parent(leaves, lvl)) == lvl).all()


def test_face_cells_match_s2sphere():
    want = [CellId.from_face_pos_level(f, 0, 0).id() for f in range(6)]
    np.testing.assert_array_equal(s2.face_cells(), np.array(want, dtype=np.uint64))
    np.testing.assert_array_equal(s2.level(s2.face_cells()), np.zeros(6))
    np.testing.assert_array_equal(s2.face(s2.face_cells()), np.arange(6))


def test_children_match_s2sphere():
    cells = np.concatenate([random_cells(500, seed=14, levels=(0, 29)), s2.face_cells()])
    for cid in cells.tolist():
        got = s2.children(cid)
        assert got.dtype == np.uint64 and got.shape == (4,)
        want = [c.id() for c in CellId(cid).children()]
        assert got.tolist() == want
        begin = CellId(cid).child_begin()
        assert got.tolist() == [begin.id(), begin.next().id(), begin.next().next().id(), begin.next().next().next().id()]
        np.testing.assert_array_equal(s2.parent(got, s2.level(np.uint64(cid))), np.full(4, cid, dtype=np.uint64))
    assert s2.children(np.uint64(cells[0])).tolist() == s2.children(int(cells[0])).tolist()
    for leaf in random_leaf_ids(3, seed=15).tolist():
        with pytest.raises(ValueError):
            s2.children(leaf)
    for bad in (0, 6 << 61 | 1 << 60, 1 << 1):  # no id, face 6, odd-position lsb
        with pytest.raises(ValueError):
            s2.children(bad)


def test_range_and_contains_match_s2sphere():
    rng = np.random.default_rng(16)
    leaves = random_leaf_ids(600, seed=17)
    cells = s2.parent(leaves, rng.integers(0, 31, leaves.size))
    np.testing.assert_array_equal(s2.range_min(cells), [CellId(i).range_min().id() for i in cells.tolist()])
    np.testing.assert_array_equal(s2.range_max(cells), [CellId(i).range_max().id() for i in cells.tolist()])
    # candidates: own leaf, a random leaf, the first/last leaf, and the leaves just outside
    others = random_leaf_ids(leaves.size, seed=18)
    lo, hi = s2.range_min(cells), s2.range_max(cells)
    two = np.uint64(2)
    for cand in (leaves, others, lo, hi, lo - two, hi + two, s2.parent(others, 12)):
        valid = np.array([CellId(c).is_valid() for c in cand.tolist()])
        got = s2.contains(cells[valid], cand[valid])
        want = [CellId(a).contains(CellId(b)) for a, b in zip(cells[valid].tolist(), cand[valid].tolist())]
        np.testing.assert_array_equal(got, want)
    assert s2.contains(cells, leaves).all()
    assert not s2.contains(cells, lo - two)[lo > two].any()
    # broadcasting: every cell against every leaf
    grid = s2.contains(cells[:30, None], leaves[None, :50])
    assert grid.shape == (30, 50)
    want = [[CellId(a).contains(CellId(b)) for b in leaves[:50].tolist()] for a in cells[:30].tolist()]
    np.testing.assert_array_equal(grid, want)


def test_tokens_match_s2sphere_and_round_trip():
    cells = np.concatenate([random_cells(2000, seed=19), s2.face_cells()])
    toks = s2.tokens(cells)
    assert toks == [CellId(i).to_token() for i in cells.tolist()]
    assert toks == [s2.to_token(i) for i in cells.tolist()]
    assert [s2.from_token(t) for t in toks] == cells.tolist()
    assert [s2.from_token(t) for t in toks] == [CellId.from_token(t).id() for t in toks]
    assert s2.to_token(np.uint64(cells[0])) == toks[0]
    assert s2.from_token(toks[0].upper()) == int(cells[0])
    assert s2.tokens(cells.reshape(-1, 2)) == toks
    assert s2.to_token(0) == "X" and s2.tokens(np.array([0], dtype=np.uint64)) == ["X"] and s2.from_token("X") == 0
    assert s2.to_token(s2.face_cells()[0]) == "1" and s2.from_token("1") == 1 << 60
    for bad in ("", "0x1", "g", "1" * 17, " 1", "+1", "1_0"):
        with pytest.raises(ValueError):
            s2.from_token(bad)
