"""Geographic clients: adaptive S2 cells over latitude / longitude (Hsu et al. 2020, sec. 4.1).

Hsu, Qi and Brown, "Federated Visual Classification with Real-World Data Distribution" (ECCV 2020),
section 4.1, build iNaturalist-Geo-{30k, 3k, 1k, 100} like this: every S2 cell is recursively
subdivided into its four children until no cell holds more than ``Nmax`` examples; cells ending up
with fewer than ``Nmin = 0.01 Nmax`` examples are discarded; every remaining cell is a client.
A smaller ``Nmax`` gives more, smaller clients.

The algorithm (:func:`adaptive_s2_cells`), vectorised over points and over cells:

1. The points' level-30 (leaf) S2 cell ids are sorted once, O(n log n).  Because S2 ids follow a
   Hilbert curve, the points of any cell ``c`` form the contiguous slice
   ``[searchsorted(range_min(c)), searchsorted(range_max(c), 'right'))`` of the sorted ids, so the
   count of a whole array of cells is two ``searchsorted`` calls.
2. Level by level, from the six face cells: count the points of every frontier cell; empty cells
   are discarded, cells holding at most ``nmax`` points (or at ``max_level``) are final, and the
   others are replaced by their four children (all cells of one level share the same lowest set
   bit ``lsb = 1 << 2 (30 - L)``, so the children are ``c - lsb + lsb/4 (2k + 1)``, k = 0..3, one
   broadcast).  The frontier never exceeds ``4 n / nmax`` cells, so a level costs
   O(frontier log n) and the whole split O(levels x frontier x log n), levels <= 30.
3. Final cells (disjoint, from different levels) are sorted by id, which is Hilbert-curve order;
   those with fewer than ``nmin`` points are dropped.  Each point finds its kept cell with one
   ``searchsorted`` over the kept cells' ``range_min`` and a containment check, O(n log cells).

A cell may hold more than ``nmax`` points only when it sits at ``max_level`` (e.g. more than
``nmax`` points at the very same coordinates with the default ``max_level=30``).
"""

from __future__ import annotations

import numpy as np

from hetbench import s2
from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition
from hetbench.partitioners.base import Partitioner, split_partition
from hetbench.partitioners.natural_id import plain_array
from hetbench.table import arrow_column

__all__ = [
    "GeoS2Partitioner",
    "adaptive_s2_cells",
    "adaptive_split",
    "coordinates_to_leaf_ids",
    "default_nmin",
    "locate_cells",
]

_ONE = np.uint64(1)


def default_nmin(nmax: int) -> int:
    """Hsu et al.'s ``Nmin = 0.01 Nmax``, rounded half up in integer arithmetic, at least 1.

    Examples
    --------
    >>> default_nmin(3000), default_nmin(150), default_nmin(10)
    (30, 2, 1)
    """
    return max(1, (int(nmax) + 50) // 100)


def _check_params(nmax: int, nmin: int, max_level: int) -> None:
    if nmax < 1:
        raise HetbenchError(f"geo-s2: `nmax` must be at least 1 (got {nmax})")
    if nmin < 0:
        raise HetbenchError(f"geo-s2: `nmin` must not be negative (got {nmin})")
    if nmin > nmax:
        raise HetbenchError(f"geo-s2: `nmin` ({nmin}) must not exceed `nmax` ({nmax}); no cell could be kept")
    if not 0 <= max_level <= s2.MAX_LEVEL:
        raise HetbenchError(f"geo-s2: `max_level` must be in 0..{s2.MAX_LEVEL} (got {max_level})")


def adaptive_split(sorted_ids: np.ndarray, nmax: int, max_level: int = s2.MAX_LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Final cells of the adaptive subdivision (sorted uint64 ids) and their point counts (int64).

    ``sorted_ids``: the points' leaf cell ids, sorted ascending.  Starting from the six face cells,
    every cell holding more than ``nmax`` points is replaced by its four children until none does
    or ``max_level`` is reached; empty cells are discarded.  No ``nmin`` filtering here.
    O(levels x frontier x log n); see the module docstring.
    """
    ids = np.asarray(sorted_ids, dtype=np.uint64)
    frontier = s2.face_cells()
    finals: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    for lvl in range(max_level + 1):
        lsb = np.uint64(1 << (2 * (s2.MAX_LEVEL - lvl)))
        lo = np.searchsorted(ids, frontier - (lsb - _ONE), side="left")
        hi = np.searchsorted(ids, frontier + (lsb - _ONE), side="right")
        cnt = (hi - lo).astype(np.int64)
        done = (cnt > 0) & ((cnt <= nmax) | (lvl == max_level))
        finals.append(frontier[done])
        counts.append(cnt[done])
        split = frontier[cnt > nmax]
        if split.size == 0 or lvl == max_level:
            break
        step = lsb >> np.uint64(2)
        offsets = step * np.array([1, 3, 5, 7], dtype=np.uint64)
        frontier = ((split - lsb)[:, None] + offsets[None, :]).ravel()  # children, in Hilbert order
    cells = np.concatenate(finals)
    cnts = np.concatenate(counts)
    order = np.argsort(cells, kind="stable")
    return cells[order], cnts[order]


def locate_cells(leaf_ids: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Index (int64) of the cell in ``cells`` (sorted, disjoint) holding each leaf id; -1 for none.

    One ``searchsorted`` over the cells' ``range_min`` and a containment check, O(n log cells).
    """
    leaf = np.asarray(leaf_ids, dtype=np.uint64)
    cells = np.asarray(cells, dtype=np.uint64)
    if cells.size == 0:
        return np.full(leaf.shape, -1, dtype=np.int64)
    idx = np.searchsorted(s2.range_min(cells), leaf, side="right").astype(np.int64) - 1
    safe = np.maximum(idx, 0)
    inside = (idx >= 0) & (leaf <= s2.range_max(cells)[safe])
    return np.where(inside, idx, -1)


def adaptive_s2_cells(
    leaf_ids: np.ndarray, nmax: int, nmin: int, max_level: int = s2.MAX_LEVEL
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Adaptive S2 cell partitioning of points (Hsu et al. 2020, sec. 4.1).

    O(n log n) for the sort plus O(levels x frontier x log n) for the split.

    Parameters
    ----------
    leaf_ids : numpy.ndarray
        Level-30 S2 cell ids (uint64) of the points, in any order.
    nmax : int
        A cell holding more than ``nmax`` points is split into its four children.
    nmin : int
        Final cells holding fewer than ``nmin`` points are dropped.
    max_level : int, default 30
        Cells are not split beyond this level (0..30).

    Returns
    -------
    cell_of_point : numpy.ndarray
        The kept cell id of every point (uint64, 0 for points whose cell was dropped).
    cells : numpy.ndarray
        The kept cells sorted by id (Hilbert order).
    counts : numpy.ndarray
        Their point counts (int64).

    Examples
    --------
    >>> import numpy as np
    >>> leaf, _ = coordinates_to_leaf_ids(np.array([48.85, 48.86, 48.87, 40.71, -33.87]),
    ...                                   np.array([2.35, 2.34, 2.36, -74.0, 151.21]))
    >>> cell_of_point, cells, counts = adaptive_s2_cells(leaf, nmax=2, nmin=1)
    >>> counts.tolist(), len(set(cell_of_point[:3].tolist()))  # Paris's three points: two cells
    ([2, 1, 1, 1], 2)
    """
    nmax, nmin, max_level = int(nmax), int(nmin), int(max_level)
    _check_params(nmax, nmin, max_level)
    leaf = np.asarray(leaf_ids, dtype=np.uint64).ravel()
    cells, counts = adaptive_split(np.sort(leaf), nmax, max_level)
    keep = counts >= nmin
    cells, counts = cells[keep], counts[keep]
    idx = locate_cells(leaf, cells)
    cell_of_point = np.where(idx >= 0, cells[np.maximum(idx, 0)] if cells.size else 0, 0).astype(np.uint64)
    return cell_of_point, cells, counts


def coordinates_to_leaf_ids(lat: np.ndarray, lon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(leaf ids uint64, drop reason int8) of coordinates in degrees.

    NaN in either coordinate is MISSING_VALUE; an infinite value, ``|lat| > 90`` or ``|lon| > 180``
    is OUT_OF_RANGE (a missing coordinate wins over an out-of-range one).  Dropped rows get id 0.

    Examples
    --------
    >>> import numpy as np
    >>> leaf, reason = coordinates_to_leaf_ids(np.array([0.0, np.nan, 91.0]), np.array([0.0, 0.0, 0.0]))
    >>> (leaf > 0).tolist(), [DropReason(r).name for r in reason[1:]]
    ([True, False, False], ['MISSING_VALUE', 'OUT_OF_RANGE'])
    """
    lat = np.asarray(lat, dtype=np.float64)
    lon = np.asarray(lon, dtype=np.float64)
    reason = np.zeros(lat.shape, dtype=np.int8)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0))
    reason[bad] = DropReason.OUT_OF_RANGE
    reason[np.isnan(lat) | np.isnan(lon)] = DropReason.MISSING_VALUE
    ok = reason == 0
    leaf = np.zeros(lat.shape, dtype=np.uint64)
    leaf[ok] = s2.cell_ids_from_latlng(lat[ok], lon[ok])
    return leaf, reason


def _float_column(ds, name: str) -> np.ndarray:
    """A column as float64 numpy, nulls as NaN; a non-numeric column is a HetbenchError."""
    import pyarrow as pa

    col = plain_array(arrow_column(ds, name))
    if not pa.types.is_floating(col.type):
        try:
            col = col.cast(pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise HetbenchError(f"geo-s2: column '{name}' must hold numbers (degrees), not {col.type}") from exc
    return col.cast(pa.float64()).fill_null(float("nan")).to_numpy(zero_copy_only=False)


class GeoS2Partitioner(Partitioner):
    """Geographic clients: one client per adaptive S2 cell (Hsu et al. 2020, sec. 4.1).

    Every S2 cell holding more than ``nmax`` of the partitioned split's located rows is split into
    its four children until none does (or ``max_level`` is reached); cells left with fewer than
    ``nmin`` rows are discarded; each remaining cell is a client (see :func:`adaptive_s2_cells`).
    Clients are the kept cells sorted by id (Hilbert order), named by their S2 tokens. A smaller
    ``nmax`` gives more, smaller clients. The assignment does not depend on the seed.

    Rows with a missing (null / NaN) coordinate are dropped as MISSING_VALUE, rows with an infinite
    or out-of-range one (``|lat| > 90``, ``|lon| > 180``) as OUT_OF_RANGE, rows in cells with fewer
    than ``nmin`` points as CLIENT_TOO_SMALL. :meth:`assign_split` places another split's rows on
    the train partition's cells.

    Parameters
    ----------
    lat_col : str, default "latitude"
        Latitude column, in degrees (numbers, or strings that cast to numbers).
    lon_col : str, default "longitude"
        Longitude column, in degrees.
    nmax : int, default 3000
        Largest cell size N_max before a cell is split (at least 1); Hsu et al. use 30k, 3k, 1k and
        100 (iNaturalist-Geo-{30k, 3k, 1k, 100}).
    nmin : int, optional
        Smallest kept cell N_min (0 <= nmin <= nmax); default :func:`default_nmin`, Hsu et al.'s
        ``0.01 nmax`` rounded half up, at least 1.
    max_level : int, default 30
        Deepest S2 level a cell is split to (0..30); a cell at that level may hold more than
        ``nmax`` rows (e.g. many rows at the very same coordinates).

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
       Distribution", ECCV 2020, sec. 4.1 (iNaturalist-Geo: "every S2 cell is recursively
       subdivided into four finer-level cells until no single cell contains more than N_max
       examples. Cells ending up with less than N_min examples are discarded"; N_min = 0.01 N_max).

    Examples
    --------
    >>> import datasets, numpy as np
    >>> from hetbench.partitioners import GeoS2Partitioner
    >>> from hetbench.sources import load_table
    >>> rng = np.random.default_rng(0)  # 60 points around Paris, 30 around New York, 2 bad rows
    >>> lat = np.concatenate([rng.normal(48.85, 0.05, 60), rng.normal(40.7, 0.05, 30), [np.nan, 95.0]])
    >>> lon = np.concatenate([rng.normal(2.35, 0.05, 60), rng.normal(-74.0, 0.05, 30), [1.0, 1.0]])
    >>> table = load_table(datasets.Dataset.from_dict(
    ...     {"label": [0] * 92, "latitude": lat.tolist(), "longitude": lon.tolist()}))
    >>> part = GeoS2Partitioner(nmax=40).partition(table)
    >>> part.client_names, part.client_sizes().tolist(), part.dropped_counts()
    (('47e664', '47e66c', '47e674', '9'), [4, 24, 32, 30], {'missing-value': 1, 'out-of-range': 1})
    """

    name = "geo-s2"

    def __init__(
        self,
        lat_col: str = "latitude",
        lon_col: str = "longitude",
        nmax: int = 3000,
        nmin: int | None = None,
        max_level: int = s2.MAX_LEVEL,
    ) -> None:
        nmax = int(nmax)
        nmin = default_nmin(nmax) if nmin is None else int(nmin)
        _check_params(nmax, nmin, int(max_level))
        self.lat_col = lat_col
        self.lon_col = lon_col
        self.nmax = nmax
        self.nmin = nmin
        self.max_level = int(max_level)

    def derive_columns(self, fs) -> None:
        """Each row's cell as ``s2_cell`` (its client's S2 token; None where no client holds it) and the
        coordinates renamed ``lat`` / ``lon``, in every split."""
        from hetbench.split_columns import rename_columns, values_per_row

        for split in fs.table.split_names:
            fs.table.splits[split] = fs.table.splits[split].add_column(
                "s2_cell", values_per_row(fs, split, list(fs.client_names)))
        rename_columns(fs, {self.lat_col: "lat", self.lon_col: "lon"})

    def params(self) -> dict:
        return {
            "lat_col": self.lat_col,
            "lon_col": self.lon_col,
            "nmax": self.nmax,
            "nmin": self.nmin,
            "max_level": self.max_level,
        }

    def _points(self, table, split: str) -> tuple[np.ndarray, np.ndarray]:
        """(leaf ids, drop reason) of a split's rows (cached on the table)."""
        key = ("geo-s2-leaf", split, self.lat_col, self.lon_col)
        if key not in table._cache:
            ds = table.splits[split]
            table._cache[key] = coordinates_to_leaf_ids(_float_column(ds, self.lat_col), _float_column(ds, self.lon_col))
        leaf, reason = table._cache[key]
        return leaf, reason.copy()

    def _assign(self, table, split, rng):
        leaf, reason = self._points(table, split)
        valid = reason == 0
        if not valid.any():
            raise HetbenchError(
                f"geo-s2: no row of split '{split}' has valid coordinates in '{self.lat_col}' / '{self.lon_col}'"
            )
        cells, counts = adaptive_split(np.sort(leaf[valid]), self.nmax, self.max_level)
        cells = cells[counts >= self.nmin]
        if cells.size == 0:
            raise HetbenchError(
                f"geo-s2: no S2 cell keeps at least nmin={self.nmin} of the {int(valid.sum())} located rows; "
                "lower `nmin` or raise `nmax`"
            )
        assignment = np.where(valid, locate_cells(leaf, cells), -1).astype(np.int32)
        reason[(assignment < 0) & (reason == 0)] = DropReason.CLIENT_TOO_SMALL
        return assignment, reason, int(cells.size), tuple(s2.tokens(cells))

    def assign_split(self, table, split, train: Partition) -> Partition:
        """Rows of ``split`` -> the train partition's cells (clients); outside them CLIENT_TOO_SMALL."""
        try:
            cells = np.array([s2.from_token(t) for t in train.client_names], dtype=np.uint64)
        except ValueError as exc:
            raise HetbenchError(f"geo-s2: the train partition's client names are not S2 tokens ({exc})") from exc
        order = np.argsort(cells, kind="stable")
        leaf, reason = self._points(table, split)
        idx = locate_cells(leaf, cells[order])
        hit = (reason == 0) & (idx >= 0)
        assignment = np.full(leaf.shape, -1, dtype=np.int32)
        assignment[hit] = order[idx[hit]]
        reason[(assignment < 0) & (reason == 0)] = DropReason.CLIENT_TOO_SMALL
        return split_partition(train, split, assignment, reason)
