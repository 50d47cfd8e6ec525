"""Learning curves of a split's rows: inline SVG (for ``leaderboard.html``) and a PNG per split
(:mod:`hetbench.leaderboard.curves_png`), with the colours, dashes, ticks and bands both share.

Both draw the mean over seeds of each curve in :data:`hetbench.leaderboard.metrics.CURVES` against
the round, one line per row, in the same colours, and the seeds' spread as a shaded band from their
minimum to their maximum at each round (rows with two or more seeds; a title line says so). Below them
come the algorithms' per-round diagnostics (:mod:`hetbench.leaderboard.diagnostics`: HeteroSwitch's
switch fractions, SCAFFOLD's control-variate norms, ...), a small panel each, drawn the same way.
"""

from __future__ import annotations

import html
import math

from hetbench.leaderboard.aggregate import SplitTable

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


def band_segments(xs: list[float], lo: list[float | None],
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
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> (t,) = aggregate([parse_result(example_result(seed=s, accuracy=a)) for s, a in [(0, 80.0), (1, 90.0)]])
    >>> has_band(t, "accuracy"), t.rows[0].bands["accuracy"]
    (True, ([1.0], [80.0], [90.0]))
    """
    return any(band_segments(*r.bands[key]) for r in table.rows if key in r.bands)


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
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
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
        for seg in band_segments(*r.bands[key]) if key in r.bands else []:
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
