"""The learning curves of a split's rows as a PNG (matplotlib): the curves of
:data:`hetbench.leaderboard.metrics.CURVES` above, the algorithms' per-round diagnostics below, a small
panel each, in the colours, dashes and bands of the SVG (:mod:`hetbench.leaderboard.curves`)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from hetbench.leaderboard.aggregate import SplitTable
from hetbench.leaderboard.curves import BAND_NOTE, band_segments, has_band, row_style
from hetbench.leaderboard.diagnostics import Diagnostic, diagnostic_panels
from hetbench.leaderboard.metrics import CURVES
from hetbench.plotting import pyplot

#: diagnostic panels per row of the PNG, their height and the learning curves' (inches)
DIAGNOSTICS_PER_ROW, DIAGNOSTIC_HEIGHT, CURVES_HEIGHT = 3, 2.7, 4.2


def _draw(ax, drawn: list, key: str, alpha: float, handles: dict) -> None:
    """Each row's mean line of curve ``key`` and its seeds' band, in the row's colour and dash."""
    for i, r in drawn:
        if key not in r.curves:
            continue
        color, style, _ = row_style(i)
        xs, ys = r.curves[key]
        (line,) = ax.plot(xs, [math.nan if y is None else y for y in ys], color=color, linestyle=style,
                          marker="o" if len(xs) < 2 else None, markersize=3, linewidth=1.6, label=r.label,
                          clip_on=False, zorder=3)  # over the frame: a curve at 0 % is not hidden by the axis
        handles.setdefault(i, line)
        for seg in band_segments(*r.bands[key]) if key in r.bands else []:
            bx, lo, hi = zip(*seg)
            if len(seg) == 1:  # one round: a whisker
                ax.vlines(bx, lo, hi, color=color, alpha=2 * alpha, linewidth=5)
            else:
                ax.fill_between(bx, lo, hi, color=color, alpha=alpha, linewidth=0)


def _diagnostic_axes(ax, d: Diagnostic) -> None:
    """A diagnostic panel's title, labels and (for a bounded quantity) its whole range."""
    ax.set_title("\n".join(textwrap.wrap(d.title, 48)), fontsize=9.5)  # a long (unknown) name on two lines
    ax.set_ylabel(d.ylabel, fontsize=8.5)
    ax.set_xlabel("round", fontsize=8.5)
    ax.tick_params(labelsize=8)
    if d.limits is not None:  # the whole range, so that 0.4 of the clients does not look like most of them
        lo, hi = d.limits
        y0, y1 = ax.get_ylim()
        pad = 0.04 * (hi - lo)
        ax.set_ylim(min(lo - pad, y0), max(hi + pad, y1))


def curves_figure(table: SplitTable):
    """The matplotlib figure of :func:`plot_curves_png`: a panel per curve that some row has, then a small
    panel per algorithm diagnostic that some row has (:func:`hetbench.leaderboard.diagnostics.diagnostic_panels`,
    three to a line, each titled with its algorithm and what it is, its y axis with the unit).

    Each row is its mean line and, where two or more seeds have a value, a band from the seeds'
    minimum to their maximum (``fill_between``; a vertical whisker for a one-round band), in the
    row's colour; the title says what the line and the band are.

    Parameters
    ----------
    table : SplitTable
        An aggregated table.

    Returns
    -------
    matplotlib.figure.Figure or None
        The figure (the caller closes it); None when the table has no curves and no diagnostics.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.curves_png import curves_figure
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> runs = [example_result(seed=s, curves={"round": [1, 2], "accuracy": [40.0 + s, 80.0 - s]}) for s in (0, 4)]
    >>> fig = curves_figure(aggregate([parse_result(r) for r in runs])[0])
    >>> len(fig.axes[0].collections), tuple(float(v) for v in fig.axes[0].collections[0].get_paths()[0].get_extents().bounds)
    (1, (1.0, 40.0, 1.0, 40.0))
    >>> from hetbench.plotting import pyplot
    >>> pyplot().close(fig)
    >>> run = example_result(algorithm="scaffold", curves={"round": [1, 2], "accuracy": [40.0, 60.0],
    ...                                                    "algorithm": {"c_norm": [0.5, 0.7]}})
    >>> fig = curves_figure(aggregate([parse_result(run)])[0])
    >>> [ax.get_title() for ax in fig.axes], fig.axes[1].get_ylabel()
    (['test accuracy (%)', 'SCAFFOLD: server control variate ‖c‖₂'], 'L2 norm (gradient units)')
    >>> pyplot().close(fig)
    """
    panels = [(k, t) for k, t in CURVES if any(k in r.curves for r in table.rows)]
    diagnostics = diagnostic_panels(table)
    if not panels and not diagnostics:
        return None
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    keys = [k for k, _ in panels] + [k for k, _ in diagnostics]
    drawn = [(i, r) for i, r in enumerate(table.rows) if any(k in r.curves for k in keys)]
    ncol = min(3, len(drawn))
    legend_rows = math.ceil(len(drawn) / ncol)
    legend_h = 0.19 * legend_rows + 0.12  # inches under the panels for the shared legend
    lines = math.ceil(len(diagnostics) / DIAGNOSTICS_PER_ROW)
    heights = ([CURVES_HEIGHT] if panels else []) + [DIAGNOSTIC_HEIGHT] * lines
    height = sum(heights) + legend_h
    banded = sum(1 for _, r in drawn if any(band_segments(*r.bands[k]) for k in keys if k in r.bands))
    alpha = 0.2 if banded <= 3 else 0.1  # many overlapping bands: lighter, so the lines stay readable
    if not diagnostics:
        fig, axes = plt.subplots(1, len(panels), squeeze=False, figsize=(6.2 * len(panels), height), dpi=110)
        curve_axes, diagnostic_axes = list(axes[0]), []
    else:  # a grid of 6 columns: the learning curves take 3 each, the diagnostics 2
        fig = plt.figure(figsize=(6.2 * 2, height), dpi=110)
        grid = fig.add_gridspec(len(heights), 6, height_ratios=heights)
        spans = [(0, 3), (3, 6)] if len(panels) == 2 else [(1, 5)]
        curve_axes = [fig.add_subplot(grid[0, a:b]) for (a, b), _ in zip(spans, panels)]
        first = 1 if panels else 0
        diagnostic_axes = [fig.add_subplot(grid[first + n // DIAGNOSTICS_PER_ROW,
                                                2 * (n % DIAGNOSTICS_PER_ROW):2 * (n % DIAGNOSTICS_PER_ROW) + 2])
                           for n in range(len(diagnostics))]
    try:
        handles: dict = {}
        for ax, (key, title) in zip(curve_axes, panels):
            _draw(ax, drawn, key, alpha, handles)
            lo, hi = ax.get_ylim()
            if lo < 0:  # accuracies are percentages: all-zero curves would get an axis showing negative ones
                ax.set_ylim(0.0, max(hi, 1.0))
            ax.set_title(title)
            ax.set_xlabel("round")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        for ax, (key, d) in zip(diagnostic_axes, diagnostics):
            _draw(ax, drawn, key, alpha, handles)
            _diagnostic_axes(ax, d)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        order = sorted(handles)
        fig.legend([handles[i] for i in order], [table.rows[i].label for i in order], loc="lower center",
                   ncol=ncol, fontsize=8, frameon=False)
        band = any(has_band(table, key) for key in keys)
        fig.suptitle(table.title + (f"\n{BAND_NOTE}" if band else ""), fontsize=11)
        fig.tight_layout(rect=(0, legend_h / height, 1, 1))
    except BaseException:
        plt.close(fig)
        raise
    return fig


def plot_curves_png(table: SplitTable, path: str | Path) -> bool:
    """The curves of :func:`curves_svg` as one PNG (:func:`curves_figure`): a panel per curve that some row
    has, then a small panel per algorithm diagnostic that some row has.

    Parameters
    ----------
    table : SplitTable
        An aggregated table.
    path : str or Path
        The PNG to write.

    Returns
    -------
    bool
        True when written; False (and no file) when the table has no curves and no diagnostics.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.curves_png import plot_curves_png
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> run = example_result(curves={"round": [1, 2], "accuracy": [40.0, 80.0]})
    >>> (table,) = aggregate([parse_result(run)])
    >>> plot_curves_png(table, "curves.png"), open("curves.png", "rb").read(4)
    (True, b'\\x89PNG')
    """
    fig = curves_figure(table)
    if fig is None:
        return False
    plt = pyplot()
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)
    return True
