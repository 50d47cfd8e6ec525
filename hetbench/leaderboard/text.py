"""``leaderboard.md``: the ranked tables as Markdown (the tidy ``leaderboard.csv`` is
:mod:`hetbench.leaderboard.csv_text`'s).

The header lines and cell texts here are shared with :mod:`hetbench.leaderboard.html`; the file
formats are in ``docs/output-contract.md``.
"""

from __future__ import annotations

from typing import Any, Callable

from hetbench.leaderboard.aggregate import SplitTable, Stat, format_value
from hetbench.leaderboard.groups import LOGO, GroupTable, group_tables
from hetbench.leaderboard.layout import Cell, Layout, layout, shown_metrics
from hetbench.leaderboard.load import Skipped
from hetbench.leaderboard.per_group import per_group_cells, per_group_heading, per_group_table
from hetbench.leaderboard.metrics import DEFAULT_RANK_BY, METRIC_BY_NAME, Metric, statistic_text

DASH = "—"  # an empty cell: no rank, or no value for any seed


def meta_line(t: SplitTable) -> str:
    """The line under a table's title: group_by, clients, model, rounds and fingerprint.

    Parameters
    ----------
    t : SplitTable
        The table.

    Returns
    -------
    str
        The fields joined by `` · ``; ``?`` for a field no result gives.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import SplitTable
    >>> from hetbench.leaderboard.text import meta_line
    >>> meta_line(SplitTable("digits", "0123456789abcdef", "digits", [], num_clients=[20], rounds=[3]))
    'group_by: ? · clients: 20 · model: ? · rounds: 3 · fingerprint: 0123456789ab'
    """
    def j(vals: list[Any]) -> str:
        return ", ".join(format_value(v) for v in vals) if vals else "?"

    parts = [f"group_by: {j(t.group_by)}", f"clients: {j(t.num_clients)}", f"model: {j(t.models)}",
             f"rounds: {j(t.rounds)}", f"fingerprint: {t.fingerprint[:12]}"]
    return " · ".join(parts)


def rank_line(t: SplitTable) -> str:
    """The sentences that say how a table is ranked, by which statistic (and what relative accuracy is against).

    Parameters
    ----------
    t : SplitTable
        The table.

    Returns
    -------
    str
        Two or three sentences.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import SplitTable
    >>> from hetbench.leaderboard.text import rank_line
    >>> print(rank_line(SplitTable("digits", "f00d", "digits", [], rank_by="worst_group_accuracy", last_k=[3])))
    Ranked by worst_group_accuracy, mean of the last 3 evaluations (higher is better). Accuracy, client acc., worst group and group var. are each seed's mean of the last 3 evaluations, the other columns its final round; mean ± std over seeds.
    >>> print(rank_line(SplitTable("digits", "f00d", "digits", [], rank_by="wall_time_s", statistic="final")))
    Ranked by wall_time_s (lower is better). Every column is each seed's final evaluation; mean ± std over seeds.
    """
    m = METRIC_BY_NAME[t.rank_by or DEFAULT_RANK_BY]
    stat = statistic_text(t.statistic, t.last_k)
    how = f", {stat}" if m.per_evaluation else ""
    s = f"Ranked by {m.name}{how} ({'higher' if m.higher_is_better else 'lower'} is better)."
    if t.statistic == "final":
        s += " Every column is each seed's final evaluation; mean ± std over seeds."
    else:
        heads = [x.header for x in shown_metrics(t) if x.per_evaluation]
        names = ", ".join(heads[:-1]) + f" and {heads[-1]}" if len(heads) > 1 else heads[0]
        s += f" {names[0].upper() + names[1:]} are each seed's {stat}, the other columns its final round; mean ± std over seeds."
    if t.reference:
        s += f" Relative accuracy is against {t.reference}."
    return s


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*").replace("\n", " ")


def cell_text(m: Metric, s: Stat, bold: Callable[[str], str] | None) -> str:
    """A metric cell: ``mean ± std``, the mean alone for one seed, :data:`DASH` for none.

    Parameters
    ----------
    m : Metric
        The column's metric (its number format).
    s : Stat
        The cell's statistics.
    bold : Callable[[str], str] or None
        Applied to the mean's text when the mean is the column's best; None for plain.

    Returns
    -------
    str
        The cell's text.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> from hetbench.leaderboard.metrics import METRIC_BY_NAME
    >>> from hetbench.leaderboard.text import cell_text
    >>> acc = METRIC_BY_NAME["accuracy"]
    >>> cell_text(acc, Stat(82.0, 2.0, 3), lambda x: f"**{x}**"), cell_text(acc, Stat(70.0, None, 1), None)
    ('**82.00** ± 2.00', '70.00')
    """
    if s.mean is None:
        return DASH
    mean = m.fmt(s.mean)
    if bold is not None:
        mean = bold(mean)
    if s.std is None:
        return mean
    return f"{mean} ± {m.format_std(s.mean, s.std)}"


def render_markdown(tables: list[SplitTable], skipped: list[Skipped] | None = None) -> str:
    """``leaderboard.md``: a section per split with its table; the best mean per column in bold.

    Parameters
    ----------
    tables : list[SplitTable]
        Ranked tables.
    skipped : list[Skipped] or None
        Files skipped while loading, listed at the end.

    Returns
    -------
    str
        The Markdown text.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.leaderboard.rank import rank
    >>> from hetbench.leaderboard.text import render_markdown
    >>> flat = {"round": [1, 2, 3, 4], "accuracy": [60.0, 61.0, 60.0, 61.0]}
    >>> runs = [example_result(algorithm=a, curves={**flat, "accuracy": [v + d for v in flat["accuracy"]]})
    ...         for a, d in [("central", 30.0), ("a", 0.0), ("b", 20.0)]]
    >>> print(render_markdown(rank(aggregate([parse_result(r) for r in runs]), "accuracy")))
    # hetbench leaderboard
    <BLANKLINE>
    ## digits
    <BLANKLINE>
    group_by: ? · clients: ? · model: ? · rounds: ? · fingerprint: f00d
    <BLANKLINE>
    Ranked by accuracy, mean of the last 3 evaluations (higher is better). Accuracy, ... over seeds. Relative accuracy is against central.
    <BLANKLINE>
    | rank | algorithm | seeds | settled | accuracy ↑ | client acc. ↑ | worst group ↑ | group var. ↓ | ... | MACs/client ↓ |
    |---:|:---|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
    | 1 | b | 1 | yes (+0.6) | **80.67** | — | — | — | — | — | **0.890** | — | — | — |
    | 2 | a | 1 | yes (+0.6) | 60.67 | — | — | — | — | — | 0.669 | — | — | — |
    <BLANKLINE>
    References (not ranked):
    <BLANKLINE>
    |  | algorithm | seeds | settled | accuracy ↑ | client acc. ↑ | worst group ↑ | group var. ↓ | ... | MACs/client ↓ |
    |---:|:---|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
    | ref. | central | 1 | yes (+0.6) | 90.67 | — | — | — | — | — | 1.000 | — | — | — |
    <BLANKLINE>
    Settled: the least-squares line through ... ref.: a reference, shown for scale, never ranked or bold (central: ...).
    <BLANKLINE>
    """
    out = ["# hetbench leaderboard", ""]
    for t in tables:
        lay = layout(t)
        out += [f"## {_md_escape(t.title)}", "", meta_line(t), "", rank_line(t), ""]
        if lay.ranked:
            out += _markdown_table(lay, ["rank", "algorithm", "seeds", "settled"], ["---:", ":---", "---:", ":---"],
                                   lay.ranked)
        else:
            out += ["No ranked rows: every run here is a reference or trained on some groups only.", ""]
        if lay.references:
            out += ["References (not ranked):", ""]
            out += _markdown_table(lay, ["", "algorithm", "seeds", "settled"], ["---:", ":---", "---:", ":---"],
                                   lay.references)
        if lay.notes:
            out += [" ".join(lay.notes), ""]
        if lay.groups:
            out += [GROUPS_HEADING, ""]
            out += _markdown_table(lay, ["", "algorithm", "seeds", "settled"], ["---:", ":---", "---:", ":---"],
                                   lay.groups, lay.group_headers)
        out += per_group_markdown(t)
        for gt in group_tables(t):
            out += group_table_markdown(gt, t)
        out += cross_group_markdown(t)
    if skipped:
        out.append(f"Skipped files ({len(skipped)}): "
                   + "; ".join(f"`{s.path}` ({_md_escape(s.reason)})" for s in skipped))
        out.append("")
    return "\n".join(out)


def markdown_cell(c: Cell) -> str:
    """A layout cell as Markdown: the number (bold when best) with its suffix, or its replacing text.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> from hetbench.leaderboard.layout import Cell
    >>> from hetbench.leaderboard.metrics import METRIC_BY_NAME
    >>> from hetbench.leaderboard.text import markdown_cell
    >>> markdown_cell(Cell(METRIC_BY_NAME["accuracy"], Stat(82.0, 2.0, 3), bold=True)), markdown_cell(
    ...     Cell(METRIC_BY_NAME["rounds_to_target"], Stat(None, None, 0), text="never (0/3)"))
    ('**82.00** ± 2.00', 'never (0/3)')
    """
    if c.text is not None:
        return c.text
    return cell_text(c.metric, c.stat, (lambda x: f"**{x}**") if c.bold else None) + c.suffix


#: the heading of the table of runs trained on some groups only
GROUPS_HEADING = ("Trained on some groups only (not ranked: their accuracy is on other test groups than a run on "
                  "every client; per-group tables below):")


def _markdown_table(lay: Layout, lead: list[str], align: list[str], lines: list,
                    headers: list[str] | None = None) -> list[str]:
    """The Markdown lines of a table of layout lines (rank, algorithm, seeds, settled, then the metric columns)."""
    headers = lay.headers if headers is None else headers
    out = ["| " + " | ".join(lead + headers) + " |", "|" + "|".join(align + ["---:"] * len(headers)) + "|"]
    for x in lines:
        cells = [x.rank_text, _md_escape(x.row.label), str(len(x.row.results)), x.settled_text]
        out.append("| " + " | ".join(cells + [markdown_cell(c) for c in x.cells]) + " |")
    return out + [""]


def cross_group_markdown(t: SplitTable) -> list[str]:
    """The split's cross-group matrices (:mod:`hetbench.leaderboard.cross_group`) as Markdown lines, or none."""
    from hetbench.leaderboard.cross_group import cross_group_cells, cross_group_heading, cross_group_tables

    out: list[str] = []
    for ct in cross_group_tables(t):
        heading, note = cross_group_heading(ct, statistic_text(t.statistic, t.last_k))
        head, rows = cross_group_cells(ct, lambda s: cell_text(METRIC_BY_NAME["accuracy"], s, None))
        out += [f"### {_md_escape(heading)}", "", note, "", "| " + " | ".join(_md_escape(h) for h in head) + " |",
                "|" + "|".join([":---"] + ["---:"] * (len(head) - 1)) + "|"]
        for group, cells in zip(ct.trained, rows):  # the diagonal (in-group accuracy) bold, as in the PNG
            shown = [_md_escape(cells[0])] + [
                f"**{_md_escape(c)}**" if tested == group and c.strip() not in ("", "-") else _md_escape(c)
                for c, tested in zip(cells[1:], ct.tested)]
            out.append("| " + " | ".join(shown) + " |")
        out.append("")
    return out


def per_group_markdown(t: SplitTable) -> list[str]:
    """The split's per-group table (:mod:`hetbench.leaderboard.per_group`) as Markdown lines, or none."""
    pg = per_group_table(t)
    if pg is None:
        return []
    heading, note = per_group_heading(statistic_text(t.statistic, t.last_k))
    head, rows = per_group_cells(pg, lambda s: cell_text(METRIC_BY_NAME["accuracy"], s, None))
    out = [f"### {heading}", "", note, "", "| " + " | ".join(_md_escape(h) for h in head) + " |",
           "|" + "|".join([":---"] + ["---:"] * (len(head) - 1)) + "|"]
    out += ["| " + " | ".join(_md_escape(c) for c in cells) + " |" for cells in rows]
    return out + [""]


def group_heading(gt: GroupTable, t: SplitTable) -> tuple[str, str]:
    """A group table's heading and the sentence under it (shared by Markdown and HTML).

    Parameters
    ----------
    gt : GroupTable
        The group table.
    t : SplitTable
        Its split table (the statistic).

    Returns
    -------
    tuple[str, str]
        (heading, explanation).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import SplitTable
    >>> from hetbench.leaderboard.groups import GroupTable
    >>> from hetbench.leaderboard.text import group_heading
    >>> group_heading(GroupTable("train-groups", "fedavg (train_groups=base)", ["base"]),
    ...               SplitTable("isp", "f00d", "isp", [], statistic="final"))[0]
    'Trained on base: fedavg (train_groups=base)'
    """
    stat = statistic_text(t.statistic, t.last_k)
    drop = "drop = accuracy on the trained-on groups' test rows minus the group's accuracy, in points"
    if gt.kind == LOGO:
        return (f"Leave one group out: {gt.label}",
                f"One run per held-out group, trained on all the others; {drop}; each seed's {stat}, mean ± std over "
                "seeds; the last line is the mean over held-out groups (± std over groups).")
    return (f"Trained on {', '.join(gt.train_groups)}: {gt.label}",
            f"Every test group of the run; {drop}; each seed's {stat}, mean ± std over seeds.")


def group_cells(gt: GroupTable) -> tuple[list[str], list[list[str]]]:
    """A group table's header and its lines' cell texts (shared by Markdown and HTML).

    Parameters
    ----------
    gt : GroupTable
        The group table.

    Returns
    -------
    tuple[list[str], list[list[str]]]
        The column headers and one list of cell texts per line.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> from hetbench.leaderboard.groups import GroupLine, GroupTable
    >>> from hetbench.leaderboard.text import group_cells
    >>> line = GroupLine("dark", False, 2, Stat(70.0, 1.0, 2), Stat(20.0, 0.5, 2))
    >>> group_cells(GroupTable("train-groups", "fedavg", ["base"], [line]))
    (['group', 'trained on', 'seeds', 'accuracy ↑', 'drop ↓'], [['dark', 'no', '2', '70.00 ± 1.00', '20.00 ± 0.50']])
    """
    acc, drop = METRIC_BY_NAME["accuracy"], METRIC_BY_NAME["mean_drop"]
    if gt.kind == LOGO:
        head = ["held-out group", "seeds", "accuracy ↑", "drop ↓", "trained-on acc. ↑"]
        rows = [[x.group, str(x.seeds), cell_text(acc, x.accuracy, None), cell_text(drop, x.drop, None),
                 cell_text(acc, x.trained_on_accuracy, None) if x.trained_on_accuracy else DASH] for x in gt.lines]
        return head, rows
    head = ["group", "trained on", "seeds", "accuracy ↑", "drop ↓"]
    rows = [[x.group, "yes" if x.trained_on else "no", str(x.seeds), cell_text(acc, x.accuracy, None),
             cell_text(drop, x.drop, None)] for x in gt.lines]
    return head, rows


def group_table_markdown(gt: GroupTable, t: SplitTable) -> list[str]:
    """A group table as Markdown lines: a ``###`` heading, its explanation and the table.

    Parameters
    ----------
    gt : GroupTable
        The group table.
    t : SplitTable
        Its split table.

    Returns
    -------
    list[str]
        The lines, ending with an empty one.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import SplitTable, Stat
    >>> from hetbench.leaderboard.groups import GroupLine, GroupTable
    >>> from hetbench.leaderboard.text import group_table_markdown
    >>> line = GroupLine("dark", False, 1, Stat(70.0, None, 1), Stat(20.0, None, 1))
    >>> group_table_markdown(GroupTable("train-groups", "fedavg", ["base"], [line]), SplitTable("s", "f", "s", []))[-2]
    '| dark | no | 1 | 70.00 | 20.00 |'
    """
    heading, note = group_heading(gt, t)
    head, rows = group_cells(gt)
    out = [f"### {_md_escape(heading)}", "", note, "", "| " + " | ".join(head) + " |",
           "|" + "|".join([":---"] + ["---:"] * (len(head) - 1)) + "|"]
    out += ["| " + " | ".join(_md_escape(c) for c in cells) + " |" for cells in rows]
    return out + [""]
