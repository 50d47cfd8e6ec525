"""Vectorised S2 cell ids: latitude/longitude -> 64-bit cell ids, bit-identical to s2sphere.

This implements Google's S2 cell id scheme (the S2 Geometry library,
http://s2geometry.io; its 64-bit ``S2CellId``), vectorised over numpy arrays.
The pure-Python port ``s2sphere`` (``CellId.from_lat_lng``) is the reference:
for every finite input, ``cell_ids_from_latlng`` returns exactly the id that
``s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(lat, lng)).id()``
returns (the test-suite checks it bit for bit).

The mapping, for each point:

1. **lat/lng -> unit vector.**  phi = lat * pi/180, theta = lng * pi/180 and
   (x, y, z) = (cos theta cos phi, sin theta cos phi, sin phi).
2. **xyz -> face + (u, v).**  The sphere is projected onto the cube [-1, 1]^3.
   The face is the axis of the largest |component| (ties go to the later axis:
   |x| == |y| picks y or z, anything tied with |z| picks z, as in s2sphere's
   ``largest_abs_component``), plus 3 when that component is negative, so faces
   0..5 are +x, +y, +z, -x, -y, -z.  (u, v) are the other two components
   divided by the face component, with the per-face axis order and signs of S2
   (face 0: u = y/x, v = z/x; face 1: u = -x/y, v = z/y; face 2: u = -x/z,
   v = -y/z; face 3: u = z/x, v = y/x; face 4: u = z/y, v = -x/y;
   face 5: u = -y/z, v = -x/z), each in [-1, 1].
3. **(u, v) -> (s, t), the quadratic projection.**  s = sqrt(1 + 3u) / 2 for
   u >= 0 and s = 1 - sqrt(1 - 3u) / 2 for u < 0 (same for t from v).  This
   maps [-1, 1] onto [0, 1] and makes cell areas far more uniform than the
   plain cube projection.
4. **(s, t) -> (i, j) at level 30.**  i = clamp(floor(2^30 s), 0, 2^30 - 1):
   the integer coordinates of the leaf cell (about 1 cm wide) on its face.
5. **(i, j) -> Hilbert curve position.**  On each face the leaf cells are
   ordered along a Hilbert curve, whose orientation on a face starts as
   ``face & 1`` (the curve is swapped on odd faces).  A table over 4-bit chunks
   of i and j and the 2-bit orientation (1024 entries) gives 8 bits of curve
   position and the orientation for the next chunk, so 8 steps of uint64
   arithmetic (from the most significant chunk down) yield the 60-bit position.
   The id is ``face << 61 | position << 1 | 1``.

A cell at level L (0..30) is identified by its first 3 + 2L bits followed by a
single 1 bit (the "lsb", ``1 << 2 (30 - L)``) and zeros, so parents, levels,
children and containment are bit operations on the id (``parent``, ``level``,
``children``, ``range_min``, ``range_max``, ``contains``).  Tokens are the
hexadecimal id with trailing zeros stripped ("X" for id 0).

Exactness.  Every step above is either a correctly rounded IEEE operation
(multiply, divide, sqrt, floor), identical in numpy and in Python, or sin/cos.
numpy's vectorised sin/cos may differ from the C library's (which s2sphere uses
through ``math``) by an ulp or so on some CPUs (AVX-512 builds use SVML).  Such
a difference can only change the id of a point within a few 1e-16 of a cell
boundary or of a face tie, so points whose 2^30 s (or 2^30 t) lies within
``_ST_TOL`` of an integer, or whose two largest |components| are within
``_FACE_TOL`` (relative) of each other, are recomputed with ``math.sin`` /
``math.cos`` (a few hundred per million uniformly random points).
"""

from __future__ import annotations

import math
import re

import numpy as np

__all__ = [
    "MAX_LEVEL",
    "cell_ids_from_latlng",
    "children",
    "contains",
    "face",
    "face_cells",
    "from_token",
    "level",
    "parent",
    "range_max",
    "range_min",
    "to_token",
    "tokens",
]

MAX_LEVEL = 30
_POS_BITS = 2 * MAX_LEVEL + 1  # 61: the face sits above the position and the trailing 1
_MAX_SIZE = 1 << MAX_LEVEL  # leaf cells along one edge of a face
_MAX_SIZE_F = float(_MAX_SIZE)
_DEG2RAD = math.pi / 180.0  # exactly what math.radians multiplies by
_LOOKUP_BITS = 4
_CHUNK = 1 << 16  # points per pass: keeps the temporaries cache-sized

# Tolerances of the exactness fallback (see the module docstring).  2^30 s moves by
# ~2^-19 when sin/cos move by 4 ulp; _ST_TOL leaves a wide margin above that.
_ST_TOL = 2.0**-14
_FACE_TOL = 2.0**-40

# --- the Hilbert curve -------------------------------------------------------------
# The curve's four sub-cells in traversal order, as (i bit << 1 | j bit), for each
# orientation (bit 0: i and j swapped, bit 1: traversal inverted) ...
_SWAP, _INVERT = 1, 2
_POS_TO_IJ = np.array([[0, 1, 3, 2], [0, 2, 3, 1], [3, 2, 0, 1], [3, 1, 0, 2]], dtype=np.int64)
# ... and how the orientation changes when descending into the sub-cell at each position.
_POS_TO_ORIENTATION = np.array([_SWAP, 0, 0, _SWAP | _INVERT], dtype=np.int64)


def _build_ij_to_pos() -> np.ndarray:
    """Table indexed by ``i4 << 6 | j4 << 2 | orientation`` (4-bit chunks of i and j).

    The value is ``pos8 << 2 | orientation'``: the 8-bit Hilbert position of (i4, j4)
    inside a 16 x 16 block entered with ``orientation``, and the orientation of the
    leaf-level sub-cell reached, which is the orientation of the next, finer chunk.
    Built by walking every (orientation, pos8) pair down four levels of the curve.
    """
    orient0 = np.repeat(np.arange(4, dtype=np.int64), 256)
    pos = np.tile(np.arange(256, dtype=np.int64), 4)
    i = np.zeros_like(pos)
    j = np.zeros_like(pos)
    orient = orient0.copy()
    for lvl in range(_LOOKUP_BITS):
        quadrant = (pos >> (2 * (_LOOKUP_BITS - 1 - lvl))) & 3
        ij = _POS_TO_IJ[orient, quadrant]
        i = (i << 1) | (ij >> 1)
        j = (j << 1) | (ij & 1)
        orient = orient ^ _POS_TO_ORIENTATION[quadrant]
    table = np.empty(1 << (2 * _LOOKUP_BITS + 2), dtype=np.intp)
    table[(i << (_LOOKUP_BITS + 2)) | (j << 2) | orient0] = (pos << 2) | orient
    return table


_IJ_TO_POS = _build_ij_to_pos()

# Per face: which component (0 x, 1 y, 2 z) is divided by the face component for u
# and for v, and with which sign (see the module docstring, step 2).
_U_AXIS = np.array([1, 0, 0, 2, 2, 1], dtype=np.intp)
_U_SIGN = np.array([1.0, -1.0, -1.0, 1.0, 1.0, -1.0])
_V_AXIS = np.array([2, 2, 1, 1, 0, 0], dtype=np.intp)
_V_SIGN = np.array([1.0, 1.0, -1.0, 1.0, -1.0, -1.0])


# --- lat/lng -> leaf cell ids -------------------------------------------------------
def _vector_trig(phi: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sin phi, cos phi, sin theta, cos theta) with numpy's vectorised sin/cos."""
    return np.sin(phi), np.cos(phi), np.sin(theta), np.cos(theta)


def _libm_xyz(phi: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit vectors computed with ``math`` (the C library), exactly as s2sphere does."""
    xs, ys, zs = [], [], []
    for p, t in zip(phi.tolist(), theta.tolist()):
        cosphi = math.cos(p)
        xs.append(math.cos(t) * cosphi)
        ys.append(math.sin(t) * cosphi)
        zs.append(math.sin(p))
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64), np.array(zs, dtype=np.float64)


def _st_to_ij(uv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(i or j as int64, whether 2^30 s is within _ST_TOL of an integer) for u or v."""
    r = 0.5 * np.sqrt(1.0 + 3.0 * np.abs(uv))  # for u < 0, 1 - 3u == 1 + 3|u| exactly
    scaled = np.where(uv >= 0, r, 1.0 - r) * _MAX_SIZE_F  # 2^30 s (exact power-of-two scaling)
    floor = np.floor(scaled)
    frac = scaled - floor
    unsure = (frac <= _ST_TOL) | (frac >= 1.0 - _ST_TOL)
    ij = np.clip(floor, 0.0, _MAX_SIZE_F - 1.0).astype(np.int64)
    return ij, unsure


def _xyz_to_ids(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(leaf cell ids, mask of points near a cell boundary or a face tie)."""
    ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
    # s2sphere's largest_abs_component: strict '>', so ties go to the later axis.
    axis = np.where(ax > ay, np.where(ax > az, 0, 2), np.where(ay > az, 1, 2))
    comps = (x, y, z)
    den = np.choose(axis, comps)
    face_ = axis + 3 * (den < 0)
    u = np.choose(_U_AXIS[face_], comps) / den * _U_SIGN[face_]  # (-a)/b == -(a/b) exactly
    v = np.choose(_V_AXIS[face_], comps) / den * _V_SIGN[face_]
    i, unsure_i = _st_to_ij(u)
    j, unsure_j = _st_to_ij(v)

    big = np.abs(den)
    second = np.maximum(np.minimum(ax, ay), np.minimum(np.maximum(ax, ay), az))  # median of three
    unsure = unsure_i | unsure_j | (big - second <= _FACE_TOL * big)

    # Hilbert position, 4 bits of i and j (8 bits of position) per step, top chunk first.
    bits = face_ & _SWAP  # the starting orientation: odd faces are swapped
    pos = np.zeros(x.shape, dtype=np.uint64)
    for k in range(7, -1, -1):
        shift = k * _LOOKUP_BITS
        idx = (((i >> shift) & 15) << 6) | (((j >> shift) & 15) << 2) | bits
        entry = _IJ_TO_POS[idx]
        pos |= (entry >> 2).astype(np.uint64) << np.uint64(2 * shift)
        bits = entry & 3
    ids = (face_.astype(np.uint64) << np.uint64(_POS_BITS)) | (pos << np.uint64(1)) | np.uint64(1)
    return ids, unsure


def cell_ids_from_latlng(lat_deg: np.ndarray, lng_deg: np.ndarray) -> np.ndarray:
    """Level-30 (leaf) S2 cell ids (uint64) of points given in degrees, equal to s2sphere's.

    ``lat_deg`` and ``lng_deg`` are broadcast together; the result has their shape.
    Ranges are not checked (callers drop invalid coordinates first): out-of-range but
    finite values are mapped exactly as s2sphere maps them, and NaN or infinite input
    gives an unspecified (but uint64) id.
    """
    lat, lng = np.broadcast_arrays(np.asarray(lat_deg, dtype=np.float64), np.asarray(lng_deg, dtype=np.float64))
    shape = lat.shape
    lat = lat.ravel()
    lng = lng.ravel()
    out = np.empty(lat.size, dtype=np.uint64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in range(0, lat.size, _CHUNK):
            stop = min(start + _CHUNK, lat.size)
            phi = lat[start:stop] * _DEG2RAD
            theta = lng[start:stop] * _DEG2RAD
            sin_phi, cos_phi, sin_theta, cos_theta = _vector_trig(phi, theta)
            ids, unsure = _xyz_to_ids(cos_theta * cos_phi, sin_theta * cos_phi, sin_phi)
            out[start:stop] = ids
            if unsure.any():  # near a boundary: redo with the C library's sin/cos, as s2sphere
                where = np.flatnonzero(unsure)
                exact, _ = _xyz_to_ids(*_libm_xyz(phi[where], theta[where]))
                out[start + where] = exact
    return out.reshape(shape)


# --- cell id bit operations -----------------------------------------------------------
def _as_ids(ids: np.ndarray) -> np.ndarray:
    return np.asarray(ids, dtype=np.uint64)


def _lsb(ids: np.ndarray) -> np.ndarray:
    """Lowest set bit of each id (0 for id 0)."""
    return ids & (~ids + np.uint64(1))


def parent(ids: np.ndarray, level: int | np.ndarray) -> np.ndarray:
    """Ancestors at ``level`` (0..30, scalar or broadcast against ``ids``) of cell ids.

    ``(id & ~(2 lsb - 1)) | lsb`` with ``lsb = 1 << 2 (30 - level)``.  ``level`` must not
    exceed each id's own level (not checked; the result is then not an ancestor).
    """
    ids = _as_ids(ids)
    lv = np.asarray(level)
    if lv.dtype.kind not in "iu" or (lv.size and (lv.min() < 0 or lv.max() > MAX_LEVEL)):
        raise ValueError(f"level must be integers in 0..{MAX_LEVEL}, got {level!r}")
    lsb = np.left_shift(np.uint64(1), (2 * (MAX_LEVEL - lv.astype(np.int64))).astype(np.uint64))
    return (ids & ~(lsb + lsb - np.uint64(1))) | lsb


def level(ids: np.ndarray) -> np.ndarray:
    """Level (0..30, int64) of each cell id, from its lowest set bit (unspecified for id 0)."""
    lsb = _lsb(_as_ids(ids))
    _, exponent = np.frexp(lsb.astype(np.float64))  # exact for powers of two: 2^k -> k + 1
    return MAX_LEVEL - (exponent.astype(np.int64) - 1) // 2


def face(ids: np.ndarray) -> np.ndarray:
    """Cube face (0..5, int64) of each cell id: its top 3 bits."""
    return (_as_ids(ids) >> np.uint64(_POS_BITS)).astype(np.int64)


def children(id: int) -> np.ndarray:
    """The four children (uint64, in Hilbert curve order) of one non-leaf cell id."""
    cid = int(id)
    lsb = cid & -cid
    if cid <= 0 or cid >> _POS_BITS >= 6 or lsb == 1 or lsb.bit_length() % 2 == 0:
        raise ValueError(f"not a non-leaf cell id: {id!r}")
    step = lsb >> 2
    return np.array([cid - lsb + step * (2 * k + 1) for k in range(4)], dtype=np.uint64)


def range_min(ids: np.ndarray) -> np.ndarray:
    """Smallest leaf id inside each cell: ``id - (lsb - 1)``."""
    ids = _as_ids(ids)
    return ids - (_lsb(ids) - np.uint64(1))


def range_max(ids: np.ndarray) -> np.ndarray:
    """Largest leaf id inside each cell: ``id + (lsb - 1)``."""
    ids = _as_ids(ids)
    return ids + (_lsb(ids) - np.uint64(1))


def contains(cell_ids: np.ndarray, leaf_ids: np.ndarray) -> np.ndarray:
    """Whether each cell contains each leaf (or any cell) id, broadcast: range_min <= id <= range_max."""
    cells = _as_ids(cell_ids)
    leaves = _as_ids(leaf_ids)
    return (range_min(cells) <= leaves) & (leaves <= range_max(cells))


def face_cells() -> np.ndarray:
    """The six level-0 (face) cell ids, faces 0..5."""
    return np.array([(f << _POS_BITS) | (1 << (2 * MAX_LEVEL)) for f in range(6)], dtype=np.uint64)


# --- tokens -----------------------------------------------------------------------------
_TOKEN_RE = re.compile(r"[0-9a-fA-F]{1,16}")


def to_token(id: int) -> str:
    """S2 token of a cell id: 16 hex digits, trailing zeros stripped ("X" for id 0)."""
    return format(int(id), "016x").rstrip("0") or "X"


def tokens(ids: np.ndarray) -> list[str]:
    """S2 tokens of many cell ids (a list, in the order of ``ids`` flattened)."""
    return [format(v, "016x").rstrip("0") or "X" for v in _as_ids(ids).ravel().tolist()]


def from_token(token: str) -> int:
    """Cell id of an S2 token (hex, zero-padded on the right to 16 digits; "X" is 0)."""
    if token in ("X", "x"):
        return 0
    if not _TOKEN_RE.fullmatch(token):
        raise ValueError(f"not an S2 token: {token!r}")
    return int(token.ljust(16, "0"), 16)
