"""Where a split's rows go in parquet: client-aligned row groups and the shard boundaries.

Output rows are sorted by ``client_id`` (:func:`hetbench.splits.build_split`); every row group holds
whole clients (:func:`row_group_bounds`), sized by :func:`group_row_limits`, and no group crosses a
shard (:func:`shard_bounds`). :mod:`hetbench.publish.parquet` writes the groups.
"""

from __future__ import annotations

import math

import numpy as np

#: bounds of a row group (:func:`row_group_bounds`): a group grows by whole clients until it holds
#: ``MIN_GROUP_ROWS`` rows or ``MIN_GROUP_BYTES`` bytes, whichever comes first, and holds at most
#: ``MAX_GROUP_ROWS`` rows and ``MAX_GROUP_BYTES`` bytes (a larger client is cut into equal groups)
MIN_GROUP_ROWS = 4096
MIN_GROUP_BYTES = 1024 * 1024
MAX_GROUP_ROWS = 65_536
MAX_GROUP_BYTES = 64 * 1024 * 1024


def group_row_limits(row_bytes: float) -> tuple[int, int]:
    """(minimum, maximum) rows of a row group for rows of about ``row_bytes`` bytes each.

    The minimum is ``MIN_GROUP_ROWS`` rows or ``MIN_GROUP_BYTES`` bytes, whichever is fewer rows;
    the maximum is ``MAX_GROUP_ROWS`` rows or ``MAX_GROUP_BYTES`` bytes, whichever is fewer rows,
    and never below the minimum.

    Examples
    --------
    >>> from hetbench.publish.layout import group_row_limits
    >>> group_row_limits(24.0)        # small tabular rows
    (4096, 65536)
    >>> group_row_limits(20_000.0)    # 20 kB images
    (53, 3355)
    """
    per_row = max(float(row_bytes), 1.0)
    lo = max(1, min(MIN_GROUP_ROWS, math.ceil(MIN_GROUP_BYTES / per_row)))
    hi = max(lo, min(MAX_GROUP_ROWS, int(MAX_GROUP_BYTES // per_row)))
    return lo, hi


def row_group_bounds(client_ids: np.ndarray, min_rows: int, max_rows: int) -> np.ndarray:
    """Row-group boundaries of rows sorted by client: whole clients per group, sizes bounded.

    Walking the clients in order, a group takes whole clients until it holds at least ``min_rows``
    rows, provided it stays within ``max_rows``; a client of more than ``max_rows`` rows is cut into
    ``ceil(size / max_rows)`` groups of equal size (within one row), holding no other client. A group
    is smaller than ``min_rows`` only at the end of the split or before such a large client. The walk
    jumps from boundary to boundary with ``numpy.searchsorted``: its cost grows with the number of
    groups, not of clients.

    Parameters
    ----------
    client_ids : numpy.ndarray
        Client id of every row, non-decreasing (the order of :func:`hetbench.splits.build_split`).
    min_rows, max_rows : int
        The bounds, ``1 <= min_rows <= max_rows``.

    Returns
    -------
    numpy.ndarray
        int64 ``[0, b1, ..., n]``: group ``g`` is rows ``bounds[g]:bounds[g + 1]`` (``[0, 0]`` for no
        rows).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.publish.layout import row_group_bounds
    >>> cids = np.repeat([0, 1, 2, 3, 4], [3, 3, 10, 2, 1])
    >>> row_group_bounds(cids, min_rows=4, max_rows=6).tolist()   # clients 0+1, 2 cut in two, 3+4
    [0, 6, 11, 16, 19]
    """
    cids = np.asarray(client_ids)
    n = int(cids.size)
    if n == 0:
        return np.zeros(2, dtype=np.int64)
    if not 1 <= min_rows <= max_rows:
        raise ValueError(f"row group bounds must satisfy 1 <= min_rows <= max_rows (got {min_rows}, {max_rows})")
    starts = np.flatnonzero(np.r_[True, cids[1:] != cids[:-1]]).astype(np.int64)
    starts = np.append(starts, n)  # client boundaries, with the end
    cuts = [0]
    p = 0
    while p < n:
        i = int(np.searchsorted(starts, p + min_rows, "left"))  # first boundary >= p + min_rows
        b = int(starts[min(i, starts.size - 1)])
        if b - p <= max_rows:
            p = b
            cuts.append(p)
            continue
        prev = int(starts[i - 1])  # the last boundary before p + min_rows
        if prev > p:  # whole clients short of min_rows, then a client too large to join them
            p = prev
            cuts.append(p)
            continue
        # the client starting at p is larger than max_rows: equal groups of its own
        end = int(starts[np.searchsorted(starts, p, "right")])
        pieces = math.ceil((end - p) / max_rows)
        cuts += [p + ((end - p) * j) // pieces for j in range(1, pieces + 1)]
        p = end
    return np.asarray(cuts, dtype=np.int64)


def shard_bounds(group_bounds: np.ndarray, rows_per_shard: int) -> np.ndarray:
    """Shard boundaries on row-group boundaries: shard ``s`` ends at the first group boundary at or
    after ``(s + 1) * rows_per_shard`` (so no row group crosses a shard).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.publish.layout import shard_bounds
    >>> shard_bounds(np.array([0, 6, 11, 16, 19]), rows_per_shard=10).tolist()
    [0, 11, 19]
    """
    n = int(group_bounds[-1])
    if n == 0:
        return np.zeros(2, dtype=np.int64)
    targets = np.arange(rows_per_shard, n, rows_per_shard, dtype=np.int64)
    ends = group_bounds[np.searchsorted(group_bounds, targets, "left")]
    return np.unique(np.concatenate([[0], ends, [n]])).astype(np.int64)
