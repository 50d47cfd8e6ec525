"""``leaderboard.html``: one self-contained page with a sortable table and inline SVG curves per split.

No external resources: the style sheet and the column sorter are inline. The cell texts and header
lines are those of :mod:`hetbench.leaderboard.text`; the curves are :func:`hetbench.leaderboard.curves.curves_svg`,
and so are the algorithms' per-round diagnostics (:mod:`hetbench.leaderboard.diagnostics`) under them.
"""

from __future__ import annotations

import html
from typing import Any

from hetbench.leaderboard.aggregate import SplitTable, Stat
from hetbench.leaderboard.curves import BAND_NOTE, curves_svg
from hetbench.leaderboard.diagnostics import diagnostic_panels
from hetbench.leaderboard.load import Skipped
from hetbench.leaderboard.groups import group_tables
from hetbench.leaderboard.layout import Layout, Line, layout, settle_note
from hetbench.leaderboard.metrics import CURVES, METRIC_BY_NAME, Metric, statistic_text
from hetbench.leaderboard.per_group import per_group_cells, per_group_heading, per_group_table
from hetbench.leaderboard.text import DASH, GROUPS_HEADING, cell_text, group_cells, group_heading, meta_line, rank_line

RANK_WIDTH = "2.9rem"  # the sticky rank column's fixed width: the algorithm column sticks right after it

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem; color: #222; }
table.leaderboard { border-collapse: separate; border-spacing: 0; margin: 0.5rem 0 1rem; font-size: 0.85rem; }
table.leaderboard th, table.leaderboard td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.45rem; text-align: right; white-space: nowrap; }
table.leaderboard th { cursor: pointer; user-select: none; background: #f4f4f4; white-space: normal; vertical-align: bottom; line-height: 1.2; min-width: 3.5em; }
table.leaderboard th[aria-sort=ascending]::after { content: " \\25B2"; }
table.leaderboard th[aria-sort=descending]::after { content: " \\25BC"; }
table.leaderboard td.label, table.leaderboard th.label { text-align: left; }
table.leaderboard .rank, table.leaderboard .label { position: sticky; z-index: 1; background: #fff; }
table.leaderboard .rank { left: 0; box-sizing: border-box; width: RANKW; min-width: RANKW; max-width: RANKW; }
table.leaderboard .label { left: RANKW; max-width: 15rem; white-space: normal; box-shadow: inset -1px 0 #ccc; }
table.leaderboard th.rank, table.leaderboard th.label { z-index: 2; background: #f4f4f4; }
table.leaderboard .sd { color: #666; font-size: 0.88em; }
table.groups { border-collapse: collapse; margin: 0.3rem 0 1rem; font-size: 0.85rem; }
table.groups th, table.groups td { border-bottom: 1px solid #ddd; padding: 0.2rem 0.6rem; text-align: right; }
table.groups th { background: #f4f4f4; }
table.groups td:first-child, table.groups th:first-child { text-align: left; }
.scroll { overflow-x: auto; max-width: 100%; }
.meta, .note { color: #555; font-size: 0.9rem; }
.figures svg { margin-right: 1rem; max-width: 100%; height: auto; }
""".strip().replace("RANKW", RANK_WIDTH)

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


def _td(value: Any, text: str, cls: str = "", title: str = "") -> str:
    """A cell whose ``data-value`` (what the sorter compares) is ``value`` in full."""
    dv = "" if value is None else (repr(float(value)) if isinstance(value, float) else str(value))
    c = f' class="{cls}"' if cls else ""
    t = f' title="{html.escape(title)}"' if title else ""
    return f'<td{c} data-value="{html.escape(dv)}"{t}>{text}</td>'


def metric_cell(m: Metric, s: Stat, best: bool, suffix: str = "") -> str:
    """A metric's ``<td>``: the compact ``mean ± std`` (:meth:`Metric.compact`), the best mean in bold, the std
    in a smaller ``sd`` span; the full-precision text (:func:`~hetbench.leaderboard.text.cell_text`) is its
    tooltip and the mean in full its sort value.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> from hetbench.leaderboard.html import metric_cell
    >>> from hetbench.leaderboard.metrics import METRIC_BY_NAME
    >>> metric_cell(METRIC_BY_NAME["accuracy"], Stat(78.234, 0.4321, 2), True)
    '<td data-value="78.234" title="78.23 ± 0.43"><b>78.2</b><span class="sd"> ± 0.4</span></td>'
    >>> metric_cell(METRIC_BY_NAME["accuracy"], Stat(None, None, 0), False)
    '<td data-value="">—</td>'
    """
    if s.mean is None:
        return _td(None, DASH + html.escape(suffix))
    mean, std = m.compact(s.mean, s.std)
    text = f"<b>{html.escape(mean)}</b>" if best else html.escape(mean)
    if std is not None:
        text += f'<span class="sd"> ± {html.escape(std)}</span>'
    if suffix:
        text += f'<span class="sd">{html.escape(suffix)}</span>'
    return _td(s.mean, text, title=cell_text(m, s, None) + suffix)


def _html_table(t: SplitTable, lay: Layout, lines: list[Line], rank_head: str, group: bool = False) -> list[str]:
    """A sortable ``<table>`` of layout lines: rank, algorithm, seeds, settled, then the metric columns (the group
    table's own columns when ``group``)."""
    e = html.escape
    stat = statistic_text(t.statistic, t.last_k)
    heads = [f'<th class="rank" data-type="num" data-dir="down" title="rank">{e(rank_head)}</th>',
             '<th class="label" data-type="text" data-dir="down">algorithm</th>',
             '<th data-type="num" data-dir="up" title="number of seeds">seeds</th>',
             f'<th data-type="num" data-dir="down" title="{e(settle_note(t, False))}">settled</th>']
    for m, head in zip(*((lay.group_columns, lay.group_headers) if group else (lay.columns, lay.headers))):
        of = f"; each seed's {stat}" if m.per_evaluation else ""
        heads.append(f'<th data-type="num" data-dir="{"up" if m.higher_is_better else "down"}" data-metric="{m.name}" '
                     f'title="{e(m.description)}{e(of)}; {"higher" if m.higher_is_better else "lower"} is better">'
                     f"{e(head).replace('/', '/<wbr>').replace(' ' + m.arrow, '&nbsp;' + m.arrow)}</th>")
    role = "groups" if group else lines[0].row.role
    out = ['<div class="scroll">', f'<table class="leaderboard" data-split="{e(t.title)}" data-role="{role}">',
           "<thead><tr>" + "".join(heads) + "</tr></thead>", "<tbody>"]
    for x in lines:
        r = x.row
        change = r.settling.get("change")
        cells = [_td(r.rank, e(x.rank_text), "rank"), _td(r.label, e(r.label), "label"),
                 _td(len(r.results), str(len(r.results))), _td(abs(change) if change is not None else None, e(x.settled_text))]
        cells += [_td(None, e(c.text)) if c.text is not None else metric_cell(c.metric, c.stat, c.bold, c.suffix)
                  for c in x.cells]
        out.append(f'<tr data-algorithm="{e(r.label)}" data-role="{r.role}">' + "".join(cells) + "</tr>")
    return out + ["</tbody></table></div>"]


def render_html(tables: list[SplitTable], skipped: list[Skipped] | None = None) -> str:
    """``leaderboard.html``: one self-contained page, a sortable table and inline SVG curves per split.

    Parameters
    ----------
    tables : list[SplitTable]
        Ranked tables.
    skipped : list[Skipped] or None
        Files skipped while loading, listed at the end.

    Returns
    -------
    str
        The HTML page.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.html import render_html
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import Skipped, parse_result
    >>> from hetbench.leaderboard.rank import rank
    >>> flat = [70.0, 71.0, 70.0, 71.0]
    >>> runs = [example_result(algorithm=a, curves={"round": [1, 2, 3, 4], "accuracy": [v + d for v in flat]})
    ...         for a, d in [("a", 0.0), ("b", 20.0), ("central", 25.0)]]
    >>> page = render_html(rank(aggregate([parse_result(r) for r in runs])), [Skipped("x.json", "missing 'final'")])
    >>> page.startswith("<!DOCTYPE html>"), page.count("<tr data-algorithm="), "<b>90.7</b>" in page, "<b>95.7</b>" in page
    (True, 3, True, False)
    """
    e = html.escape
    out = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>hetbench leaderboard</title>", f"<style>\n{_CSS}\n</style>", "</head>", "<body>",
           "<h1>hetbench leaderboard</h1>",
           '<p class="note">Mean ± sample std over seeds (hover a cell for more digits, a header for the metric); best mean per column in bold (among the ranked rows that settled). Click a column header to sort.</p>']
    for t in tables:
        stat = statistic_text(t.statistic, t.last_k)
        out.append(f'<section class="split" data-split="{e(t.title)}">')
        out.append(f"<h2>{e(t.title)}</h2>")
        out.append(f'<p class="meta">{e(meta_line(t))}<br>{e(rank_line(t))}</p>')
        lay = layout(t)
        if lay.ranked:
            out += _html_table(t, lay, lay.ranked, "rank")
        else:
            out.append('<p class="note">No ranked rows: every run here is a reference or trained on some groups only.</p>')
        if lay.references:
            out.append('<p class="note">References (not ranked):</p>')
            out += _html_table(t, lay, lay.references, "")
        if lay.notes:
            out.append(f'<p class="note">{e(" ".join(lay.notes))}</p>')
        if lay.groups:
            out.append(f'<p class="note">{e(GROUPS_HEADING)}</p>')
            out += _html_table(t, lay, lay.groups, "", group=True)
        pg = per_group_table(t)
        if pg is not None:
            heading, note = per_group_heading(stat)
            head, rows = per_group_cells(pg, lambda s: cell_text(METRIC_BY_NAME["accuracy"], s, None))
            out.append(f'<h3>{e(heading)}</h3><p class="note">{e(note)}</p>')
            out.append('<table class="groups"><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
            out.extend("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>" for cells in rows)
            out.append("</tbody></table>")
        for gt in group_tables(t):
            heading, note = group_heading(gt, t)
            head, rows = group_cells(gt)
            out.append(f'<h3>{e(heading)}</h3><p class="note">{e(note)}</p>')
            out.append('<table class="groups"><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
            out.extend("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>" for cells in rows)
            out.append("</tbody></table>")
        from hetbench.leaderboard.cross_group import cross_group_cells, cross_group_heading, cross_group_tables

        for ct in cross_group_tables(t):  # cells shaded by accuracy on one 0-100% scale
            heading, note = cross_group_heading(ct, stat)
            head, rows = cross_group_cells(ct, lambda s: cell_text(METRIC_BY_NAME["accuracy"], s, None))
            out.append(f'<h3>{e(heading)}</h3><p class="note">{e(note)}</p>')
            out.append('<table class="groups cross"><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
            for group, cells, stats in zip(ct.trained, rows, ct.cells):  # the diagonal (in-group) bold, as in the PNG
                shaded = [f'<td style="background: hsl(140, 45%, {95 - 0.45 * (s.mean or 0):.0f}%)'
                          f'{"; font-weight: bold" if tested == group else ""}">{e(c)}</td>'
                          if s.mean is not None else f"<td>{e(c)}</td>" for c, s, tested in zip(cells[1:], stats, ct.tested)]
                out.append(f"<tr><th>{e(cells[0])}</th>" + "".join(shaded) + "</tr>")
            out.append("</tbody></table>")
        svgs = [s for s in (curves_svg(t, k, title) for k, title in CURVES) if s]
        if svgs:
            out.append('<div class="figures">')
            out.extend(svgs)
            out.append("</div>")
        diagnostics = [s for s in (curves_svg(t, k, d.title, 560, 260, ylabel=d.ylabel, limits=d.limits)
                                   for k, d in diagnostic_panels(t)) if s]
        if diagnostics:
            out.append(f'<h3>Algorithm diagnostics</h3><p class="note">Per trained round, as each algorithm\'s '
                       f'server recorded them (the results\' <code>curves.algorithm</code>); {e(BAND_NOTE)}.</p>')
            out.append('<div class="figures diagnostics">')
            out.extend(diagnostics)
            out.append("</div>")
        out.append("</section>")
    if skipped:
        items = "".join(f"<li><code>{e(s.path)}</code>: {e(s.reason)}</li>" for s in skipped)
        out.append(f'<div class="skipped"><p class="note">Skipped files ({len(skipped)}):</p><ul>{items}</ul></div>')
    out += [f"<script>\n{_JS}\n</script>", "</body>", "</html>", ""]
    return "\n".join(out)
