"""Leaderboard rendering for people: learning curves (inline SVG and PNG) and the self-contained
``leaderboard.html`` (sortable tables, inline SVG curves, no external resources).

The tables themselves (loading, aggregation, ranking, Markdown and CSV) are in :mod:`hetbench.leaderboard`.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from hetbench.leaderboard import (
    CURVES,
    DASH,
    METRICS,
    Skipped,
    SplitTable,
    _cell_text,
    _meta_line,
    _rank_line,
    best_means,
    is_best,
)


# ----------------------------------------------------------------------------------------------
# rendering: curves (inline SVG and PNG)

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """About ``n`` round tick values covering [lo, hi] (whole numbers only with ``integer``)."""
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


def _tick_text(v: float) -> str:
    return f"{v:g}"


def curves_svg(table: SplitTable, key: str, title: str, width: int = 640, height: int = 340) -> str | None:
    """An inline ``<svg>``: the mean-over-seeds curve ``key`` vs round, one polyline per row, with a
    legend. None when no row has that curve."""
    series = [(i, r) for i, r in enumerate(table.rows) if key in r.curves]
    if not series:
        return None
    ml, mr, mt, mb = 52, 190, 30, 42
    pw, ph = width - ml - mr, height - mt - mb
    xs_all = [x for _, r in series for x in r.curves[key][0]]
    ys_all = [y for _, r in series for y in r.curves[key][1] if y is not None]
    xt = nice_ticks(min(xs_all), max(xs_all), 6, integer=True)
    yt = nice_ticks(min(ys_all), max(ys_all), 5)
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]

    def px(x: float) -> float:
        return ml + (x - x0) / (x1 - x0) * pw if x1 > x0 else ml + pw / 2

    def py(y: float) -> float:
        return mt + ph - (y - y0) / (y1 - y0) * ph if y1 > y0 else mt + ph / 2

    e = html.escape
    label = f"{title} vs round, {table.title}"
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
    for i, r in series:
        color = PALETTE[i % len(PALETTE)]
        xs, ys = r.curves[key]
        out.append(f'<g class="series" data-series="{e(r.label)}" stroke="{color}" fill="{color}">')
        for seg in _segments(xs, ys):
            if len(seg) == 1:
                out.append(f'<circle cx="{px(seg[0][0]):.1f}" cy="{py(seg[0][1]):.1f}" r="2.5"/>')
            else:
                pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in seg)
                out.append(f'<polyline fill="none" stroke-width="1.8" points="{pts}"/>')
        out.append("</g>")
    lx = ml + pw + 14
    for j, (i, r) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        y = mt + 8 + 17 * j
        text = r.label if len(r.label) <= 26 else r.label[:25] + "…"
        out.append(f'<g class="legend-item"><line x1="{lx}" y1="{y}" x2="{lx + 18}" y2="{y}" stroke="{color}" stroke-width="2.5"/>'
                   f'<text x="{lx + 24}" y="{y + 4}" font-size="11"><title>{e(r.label)}</title>{e(text)}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


def plot_curves_png(table: SplitTable, path: str | Path) -> bool:
    """The same curves as :func:`curves_svg`, as one PNG (a panel per curve). False (and no file)
    when the table has no curves."""
    panels = [(k, t) for k, t in CURVES if any(k in r.curves for r in table.rows)]
    if not panels:
        return False
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(6.2 * len(panels), 4.2), dpi=110)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (key, title) in zip(axes, panels):
        for i, r in enumerate(table.rows):
            if key not in r.curves:
                continue
            xs, ys = r.curves[key]
            ax.plot(xs, [math.nan if y is None else y for y in ys], color=PALETTE[i % len(PALETTE)],
                    marker="o" if len(xs) < 2 else None, markersize=3, linewidth=1.6, label=r.label)
        ax.set_title(title)
        ax.set_xlabel("round")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(table.title)
    fig.tight_layout()
    fig.savefig(path)
    return True


# ----------------------------------------------------------------------------------------------
# rendering: HTML

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem; color: #222; }
table.leaderboard { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
table.leaderboard th, table.leaderboard td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: right; white-space: nowrap; }
table.leaderboard th { cursor: pointer; user-select: none; background: #f4f4f4; }
table.leaderboard th[aria-sort=ascending]::after { content: " \\25B2"; }
table.leaderboard th[aria-sort=descending]::after { content: " \\25BC"; }
table.leaderboard td.label, table.leaderboard th.label { text-align: left; }
.scroll { overflow-x: auto; }
.meta, .note { color: #555; font-size: 0.9rem; }
.figures svg { margin-right: 1rem; }
""".strip()

_JS = """
(function () {
  document.querySelectorAll("table.leaderboard").forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var numeric = th.getAttribute("data-type") === "num";
        var state = th.getAttribute("aria-sort");
        var asc = state ? state !== "ascending" : th.getAttribute("data-dir") !== "up";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-value"), y = b.cells[col].getAttribute("data-value");
          if (x === "" && y === "") return 0;
          if (x === "") return 1;
          if (y === "") return -1;
          var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      });
    });
  });
})();
""".strip()


def _td(value: Any, text: str, cls: str = "") -> str:
    dv = "" if value is None else (repr(float(value)) if isinstance(value, float) else str(value))
    c = f' class="{cls}"' if cls else ""
    return f'<td{c} data-value="{html.escape(dv)}">{text}</td>'


def render_html(tables: list[SplitTable], skipped: list[Skipped] | None = None) -> str:
    """One self-contained page: a sortable table and inline SVG curves per split."""
    e = html.escape
    out = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>hetbench leaderboard</title>", f"<style>\n{_CSS}\n</style>", "</head>", "<body>",
           "<h1>hetbench leaderboard</h1>",
           '<p class="note">Mean ± sample std over seeds; best mean per column in bold. Click a column header to sort.</p>']
    for t in tables:
        best = best_means(t)
        out.append(f'<section class="split" data-split="{e(t.title)}">')
        out.append(f"<h2>{e(t.title)}</h2>")
        out.append(f'<p class="meta">{e(_meta_line(t))}<br>{e(_rank_line(t))}</p>')
        out.append('<div class="scroll">')
        out.append(f'<table class="leaderboard" data-split="{e(t.title)}">')
        heads = ['<th data-type="num" data-dir="down" title="rank">rank</th>',
                 '<th class="label" data-type="text" data-dir="down">algorithm</th>',
                 '<th data-type="num" data-dir="up" title="number of seeds">seeds</th>']
        for m in METRICS:
            heads.append(f'<th data-type="num" data-dir="{"up" if m.higher_is_better else "down"}" data-metric="{m.name}" '
                         f'title="{e(m.description)}; {"higher" if m.higher_is_better else "lower"} is better">'
                         f"{e(m.header)} {m.arrow}</th>")
        out.append("<thead><tr>" + "".join(heads) + "</tr></thead>")
        out.append("<tbody>")
        for r in t.rows:
            cells = [_td(r.rank, str(r.rank) if r.rank is not None else DASH),
                     _td(r.label, e(r.label), "label"), _td(len(r.results), str(len(r.results)))]
            for m in METRICS:
                s = r.stats[m.name]
                cells.append(_td(s.mean, _cell_text(m, s, (lambda x: f"<b>{e(x)}</b>") if is_best(best, m.name, s.mean) else None)))
            out.append(f'<tr data-algorithm="{e(r.label)}">' + "".join(cells) + "</tr>")
        out.append("</tbody></table></div>")
        svgs = [s for s in (curves_svg(t, k, title) for k, title in CURVES) if s]
        if svgs:
            out.append('<div class="figures">')
            out.extend(svgs)
            out.append("</div>")
        out.append("</section>")
    if skipped:
        items = "".join(f"<li><code>{e(s.path)}</code>: {e(s.reason)}</li>" for s in skipped)
        out.append(f'<div class="skipped"><p class="note">Skipped files ({len(skipped)}):</p><ul>{items}</ul></div>')
    out += [f"<script>\n{_JS}\n</script>", "</body>", "</html>", ""]
    return "\n".join(out)
