"""Learning curves of a split's rows: inline SVG (for ``leaderboard.html``) and a PNG per split.

Both draw the mean over seeds of each curve in :data:`hetbench.leaderboard.metrics.CURVES` against
the round, one line per row, in the same colours, and the seeds' spread as a shaded band from their
minimum to their maximum at each round (rows with two or more seeds; a title line says so). Below them
come the algorithms' per-round diagnostics (:mod:`hetbench.leaderboard.diagnostics`: HeteroSwitch's
switch fractions, SCAFFOLD's control-variate norms, ...), a small panel each, drawn the same way.
"""

from __future__ import annotations

import html
import math
import textwrap
from pathlib import Path

from hetbench.leaderboard.aggregate import SplitTable
from hetbench.leaderboard.diagnostics import Diagnostic, diagnostic_panels
from hetbench.leaderboard.metrics import CURVES
from hetbench.plotting import pyplot

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
#: past the palette's 10 colours, the colours again with another dash: (matplotlib style, SVG dash array)
DASHES = (("-", ""), ("--", "7 3"), (":", "2 2"), ("-.", "8 3 2 3"))


def row_style(i: int) -> tuple[str, str, str]:
    """Row ``i``'s colour, matplotlib line style and SVG ``stroke-dasharray``: 40 rows tell apart.

    Examples
    --------
    >>> row_style(0), row_style(10)
    (('#1f77b4', '-', ''), ('#1f77b4', '--', '7 3'))
    >>> len({row_style(i) for i in range(40)})
    40
    """
    style, dash = DASHES[(i // len(PALETTE)) % len(DASHES)]
    return PALETTE[i % len(PALETTE)], style, dash


def _dash_attr(i: int) -> str:
    """Row ``i``'s SVG dash attribute ('' for a solid line)."""
    dash = row_style(i)[2]
    return f' stroke-dasharray="{dash}"' if dash else ""


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """About ``n`` round tick values covering [lo, hi].

    Parameters
    ----------
    lo, hi : float
        The range to cover; an empty range is widened by 1 each side.
    n : int
        About how many ticks.
    integer : bool
        Whole-number steps only.

    Returns
    -------
    list[float]
        Ascending ticks, the first <= ``lo`` and the last >= ``hi``.

    Examples
    --------
    >>> from hetbench.leaderboard.curves import nice_ticks
    >>> nice_ticks(12.3, 87.9)
    [0, 20, 40, 60, 80, 100]
    >>> nice_ticks(0.12, 0.87)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(1, 3, 6, integer=True)
    [1.0, 2.0, 3.0]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0]
    if hi <= lo:
        lo, hi = lo - 1.0, hi + 1.0
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    if integer:
        step = max(1.0, float(math.ceil(step)))
    start = math.floor(lo / step) * step
    ticks = []
    x = start
    while x <= hi + step * 1e-9:
        ticks.append(round(x, 10))
        x += step
    if ticks[-1] < hi:
        ticks.append(round(x, 10))
    return ticks


def _segments(xs: list[float], ys: list[float | None]) -> list[list[tuple[float, float]]]:
    """Split a curve at its nulls into runs of points."""
    segs: list[list[tuple[float, float]]] = [[]]
    for x, y in zip(xs, ys):
        if y is None:
            if segs[-1]:
                segs.append([])
        else:
            segs[-1].append((x, y))
    return [s for s in segs if s]


def _band_segments(xs: list[float], lo: list[float | None],
                   hi: list[float | None]) -> list[list[tuple[float, float, float]]]:
    """Split a band at the rounds where it is undefined into runs of (x, low, high)."""
    segs: list[list[tuple[float, float, float]]] = [[]]
    for x, a, b in zip(xs, lo, hi):
        if a is None or b is None:
            if segs[-1]:
                segs.append([])
        else:
            segs[-1].append((x, a, b))
    return [s for s in segs if s]


BAND_NOTE = "line: mean over seeds; band: min–max over seeds"


def has_band(table: SplitTable, key: str) -> bool:
    """Whether some row of ``table`` has a band (two or more seeds at a round) for curve ``key``.

    Parameters
    ----------
    table : SplitTable
        An aggregated table.
    key : str
        A curve key.

    Returns
    -------
    bool
        True when a band would be drawn.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.curves import has_band
    >>> from hetbench.leaderboard.load import example_result, parse_result
    >>> (t,) = aggregate([parse_result(example_result(seed=s, accuracy=a)) for s, a in [(0, 80.0), (1, 90.0)]])
    >>> has_band(t, "accuracy"), t.rows[0].bands["accuracy"]
    (True, ([1.0], [80.0], [90.0]))
    """
    return any(_band_segments(*r.bands[key]) for r in table.rows if key in r.bands)


def _tick_text(v: float) -> str:
    return f"{v:g}"


def curves_svg(table: SplitTable, key: str, title: str, width: int = 640, height: int = 340,
               ylabel: str | None = None, limits: tuple[float, float] | None = None) -> str | None:
    """One curve of a table as an inline ``<svg>``: one polyline per row, with a legend.

    Parameters
    ----------
    table : SplitTable
        An aggregated table.
    key : str
        The curve's key in ``Row.curves`` (e.g. ``"accuracy"``).
    title : str
        The plot's title.
    width, height : int
        The picture's size in pixels.
    ylabel : str, optional
        The y axis's label (a diagnostic's quantity and unit).
    limits : tuple of float, optional
        A y range the axis covers whatever the data (0 to 1 for fractions).

    Returns
    -------
    str or None
        The SVG element; None when no row has that curve.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.curves import curves_svg
    >>> from hetbench.leaderboard.load import example_result, parse_result
    >>> run = example_result(curves={"round": [1, 2, 3], "accuracy": [40.0, None, 80.0]})
    >>> (table,) = aggregate([parse_result(run)])
    >>> svg = curves_svg(table, "accuracy", "test accuracy (%)")
    >>> svg.startswith("<svg"), svg.count("<circle"), curves_svg(table, "worst_group_accuracy", "") is None
    (True, 2, True)
    """
    series = [(i, r) for i, r in enumerate(table.rows) if key in r.curves]
    if not series:
        return None
    ml, mr, mt, mb = 52 + (14 if ylabel else 0), 190, 30, 42
    pw, ph = width - ml - mr, height - mt - mb
    xs_all = [x for _, r in series for x in r.curves[key][0]]
    ys_all = [y for _, r in series for y in r.curves[key][1] if y is not None]
    ys_all += [y for _, r in series if key in r.bands for ys in r.bands[key][1:] for y in ys if y is not None]
    ys_all += list(limits or ())
    xt = nice_ticks(min(xs_all), max(xs_all), 6, integer=True)
    yt = nice_ticks(min(ys_all), max(ys_all), 5)
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]

    def px(x: float) -> float:
        return ml + (x - x0) / (x1 - x0) * pw if x1 > x0 else ml + pw / 2

    def py(y: float) -> float:
        return mt + ph - (y - y0) / (y1 - y0) * ph if y1 > y0 else mt + ph / 2

    e = html.escape
    band = has_band(table, key)
    label = f"{title} vs round, {table.title}" + (f" ({BAND_NOTE})" if band else "")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="curves" data-curve="{e(key)}" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(label)}">',
           f"<title>{e(label)}</title>",
           f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>',
           f'<text x="{ml + pw / 2:.1f}" y="18" text-anchor="middle" font-size="13" font-weight="bold">{e(title)}</text>']
    for v in xt:
        x = px(v)
        out.append(f'<line x1="{x:.1f}" y1="{mt + ph}" x2="{x:.1f}" y2="{mt + ph + 4}" stroke="#666"/>'
                   f'<text x="{x:.1f}" y="{mt + ph + 16}" text-anchor="middle" font-size="11">{e(_tick_text(v))}</text>')
    for v in yt:
        y = py(v)
        out.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{e(_tick_text(v))}</text>')
    out.append(f'<text x="{ml + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" font-size="12">round</text>')
    if ylabel:
        out.append(f'<text class="ylabel" x="14" y="{mt + ph / 2:.1f}" text-anchor="middle" font-size="11" '
                   f'transform="rotate(-90 14 {mt + ph / 2:.1f})">{e(ylabel)}</text>')
    if band:
        for j, part in enumerate(BAND_NOTE.split("; ")):
            out.append(f'<text class="band-note" x="{ml + pw + 14}" y="{height - 20 + 13 * j}" font-size="10" '
                       f'fill="#555">{e(part)}</text>')
    for i, r in series:
        color = row_style(i)[0]
        for seg in _band_segments(*r.bands[key]) if key in r.bands else []:
            if len(seg) == 1:  # one round: a whisker
                x, a, b = seg[0]
                out.append(f'<line class="band" x1="{px(x):.1f}" y1="{py(b):.1f}" x2="{px(x):.1f}" y2="{py(a):.1f}" '
                           f'stroke="{color}" stroke-opacity="0.35" stroke-width="6"/>')
                continue
            upper = [f"{px(x):.1f},{py(b):.1f}" for x, _, b in seg]
            lower = [f"{px(x):.1f},{py(a):.1f}" for x, a, _ in reversed(seg)]
            out.append(f'<polygon class="band" points="{" ".join(upper + lower)}" fill="{color}" '
                       f'fill-opacity="0.18" stroke="none"/>')
    for i, r in series:
        color = row_style(i)[0]
        xs, ys = r.curves[key]
        out.append(f'<g class="series" data-series="{e(r.label)}" stroke="{color}" fill="{color}"{_dash_attr(i)}>')
        for seg in _segments(xs, ys):
            if len(seg) == 1:
                out.append(f'<circle cx="{px(seg[0][0]):.1f}" cy="{py(seg[0][1]):.1f}" r="2.5"/>')
            else:
                pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in seg)
                out.append(f'<polyline fill="none" stroke-width="1.8" points="{pts}"/>')
        out.append("</g>")
    lx = ml + pw + 14
    for j, (i, r) in enumerate(series):
        color = row_style(i)[0]
        y = mt + 8 + 17 * j
        text = r.label if len(r.label) <= 26 else r.label[:25] + "…"
        out.append(f'<g class="legend-item"><line x1="{lx}" y1="{y}" x2="{lx + 18}" y2="{y}" stroke="{color}" stroke-width="2.5"{_dash_attr(i)}/>'
                   f'<text x="{lx + 24}" y="{y + 4}" font-size="11"><title>{e(r.label)}</title>{e(text)}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


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
                          marker="o" if len(xs) < 2 else None, markersize=3, linewidth=1.6, label=r.label)
        handles.setdefault(i, line)
        for seg in _band_segments(*r.bands[key]) if key in r.bands else []:
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
    >>> from hetbench.leaderboard.curves import curves_figure
    >>> from hetbench.leaderboard.load import example_result, parse_result
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
    banded = sum(1 for _, r in drawn if any(_band_segments(*r.bands[k]) for k in keys if k in r.bands))
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
    >>> from hetbench.leaderboard.curves import plot_curves_png
    >>> from hetbench.leaderboard.load import example_result, parse_result
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
