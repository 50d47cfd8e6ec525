"""Axis helpers shared by the report's plots: which client rows to label, class tick labels."""

from __future__ import annotations

import numpy as np

#: most labelled ticks on a client axis
MAX_CLIENT_TICKS = 30
#: past this many classes, neighbouring classes are summed into one column of a heatmap
MAX_HEATMAP_CLASSES = 200


def tick_rows(n_rows: int, ids: np.ndarray | None = None, most: int = MAX_CLIENT_TICKS) -> np.ndarray:
    """Rows of a client axis to label: every row when there are few, else rows whose client id is a
    multiple of a round step (1, 2, 5, 10, 20, 50, ...) or, for sampled rows, every k-th row.

    Parameters
    ----------
    n_rows : int
        Rows on the axis.
    ids : numpy.ndarray, optional
        The client id of each row when the rows are a sample (default: row ``i`` is client ``i``).
    most : int
        Most labelled rows.

    Returns
    -------
    numpy.ndarray
        Row positions (integers) to put ticks at.

    Examples
    --------
    >>> from hetbench.report.axes import tick_rows
    >>> tick_rows(8).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> tick_rows(72).tolist()[:5]
    [0, 5, 10, 15, 20]
    """
    if n_rows <= most:
        return np.arange(n_rows)
    if ids is None:
        step = next(s * m for m in (10 ** k for k in range(12)) for s in (1, 2, 5) if n_rows / (s * m) <= most)
        return np.arange(0, n_rows, step)
    return np.unique(np.linspace(0, n_rows - 1, most).round().astype(np.int64))


def class_ticks(ax, names) -> None:
    """Class names as x ticks, slanted when they would run into each other."""
    names = [str(n) for n in names]
    fig = ax.get_figure()
    width_px = ax.get_position().width * fig.get_figwidth() * fig.dpi  # the axes' own width, not a guess
    # an 8-pt label is about 6 px a character at 110 dpi (scaled with the dpi), with a gap of 2 characters; the
    # axes often shrink later (tight_layout beside long row labels), so names of 5 characters or more in 4
    # columns or more are slanted whatever the width now
    longest = max(map(len, names), default=0)
    crowded = (len(names) > 12 or (longest >= 5 and len(names) >= 4)
               or (longest + 2) * 6 * fig.dpi / 110 > width_px / max(len(names), 1))
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=90 if len(names) > 12 else (40 if crowded else 0),
                       ha="center" if len(names) > 12 or not crowded else "right", fontsize=8)
