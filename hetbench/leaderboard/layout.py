"""What a split's main table shows, decided once for the Markdown and the HTML renderings.

- **Ranked rows** first, best first; **references** (``central``, ``--reference``) apart under them, never
  ranked and never bold; rows trained on some groups only (``--train-groups``, leave-one-group-out,
  cross-group) in a table of their own with the group-protocol columns, unranked: their accuracy is on other
  test groups than a run on every client (their per-group tables follow, :mod:`hetbench.leaderboard.groups`,
  :mod:`hetbench.leaderboard.cross_group`).
- A **settled** column: whether the seed-mean of the row's test accuracy had settled (the rule
  ``hetbench reproduce`` decides claims by, :mod:`hetbench.train.settling`). A row that had not is marked
  :data:`UNSETTLED` beside its rank and is never bold: its numbers are points on the way.
- **Rounds to target** names its target in the header (``rounds to 80%``) and is shown only when some row ran
  with one; a cell says ``n/a`` for a row without a target and ``never (0/n)`` when no seed reached it.
- Ties within the seeds' spread are marked :data:`~hetbench.leaderboard.honesty.TIE`
  (:func:`~hetbench.leaderboard.honesty.tied_with_previous`), among the ranked rows only.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetbench.leaderboard.aggregate import CENTRAL, GROUPS, RANKED, REFERENCE, Row, SplitTable, Stat
from hetbench.leaderboard.honesty import TIE, TIE_NOTE, may_be_best, reach_suffix, target_text, tied_with_previous
from hetbench.leaderboard.metrics import METRICS, Metric
from hetbench.leaderboard.rank import best_means, is_best

#: the rank column's mark of a row that had not settled (or diverged, or had too few evaluations to tell)
UNSETTLED = "†"
NOT_APPLICABLE = "n/a"


@dataclass
class Cell:
    """One metric cell of a line.

    Parameters
    ----------
    metric : Metric
        The column.
    stat : Stat
        The row's statistics over seeds.
    bold : bool
        Whether its mean is the column's best.
    suffix : str
        Text after the number (`` (1/2 reached)``).
    text : str or None
        A text that replaces the number (``n/a``, ``never (0/2)``); None: the number.
    """

    metric: Metric
    stat: Stat
    bold: bool = False
    suffix: str = ""
    text: str | None = None


@dataclass
class Line:
    """One row of the main table: its rank text, its settled text and its cells."""

    row: Row
    rank_text: str
    settled_text: str
    cells: list[Cell]


@dataclass
class Layout:
    """The main table of a split: columns, ranked lines, reference lines and the notes under them."""

    columns: list[Metric]
    headers: list[str]
    ranked: list[Line]
    references: list[Line]
    notes: list[str]
    group_columns: list[Metric]
    group_headers: list[str]
    groups: list[Line]


def shown_metrics(t: SplitTable, rows: list[Row] | None = None) -> list[Metric]:
    """The columns a table of ``rows`` (default: the main table's, :func:`main_rows`) shows: every metric but the
    group-protocol ones (unless a row has a value) and rounds to target (unless a row ran with a target).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import SplitTable
    >>> from hetbench.leaderboard.layout import shown_metrics
    >>> names = [m.name for m in shown_metrics(SplitTable("digits", "f00d", "digits", []))]
    >>> "mean_drop" in names, "rounds_to_target" in names, "accuracy" in names
    (False, False, True)
    """
    rows = main_rows(t) if rows is None else rows
    targets = any(r.config.get("target_accuracy") is not None for r in rows)
    return [m for m in METRICS
            if (not m.protocol or any(r.stats[m.name].mean is not None for r in rows))
            and (m.name != "rounds_to_target" or targets)]


def main_rows(t: SplitTable) -> list[Row]:
    """The rows of the main table: the ranked ones and the references (not those trained on some groups)."""
    return [r for r in t.rows if r.role in (RANKED, REFERENCE)]


def header(m: Metric, t: SplitTable, rows: list[Row] | None = None) -> str:
    """A column's header with its arrow; rounds to target names its target when the rows share one.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from hetbench.leaderboard.layout import header
    >>> from hetbench.leaderboard.metrics import METRIC_BY_NAME
    >>> t = SimpleNamespace(rows=[SimpleNamespace(role="ranked", config={"target_accuracy": 80.0})])
    >>> header(METRIC_BY_NAME["rounds_to_target"], t), header(METRIC_BY_NAME["accuracy"], t)
    ('rounds to 80% ↓', 'accuracy ↑')
    """
    if m.name == "rounds_to_target":
        targets = sorted({r.config.get("target_accuracy") for r in (main_rows(t) if rows is None else rows)} - {None})
        if len(targets) == 1:
            return f"rounds to {targets[0]:g}% {m.arrow}"
    return f"{m.header} {m.arrow}"


def settled_text(row: Row) -> str:
    """The settled column: ``yes (+0.8)`` / ``no (+4.2)`` (the fitted change, points), ``diverged``, or ``?``
    with how many evaluations there were.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from hetbench.leaderboard.layout import settled_text
    >>> [settled_text(SimpleNamespace(settling=s)) for s in ({"rounds": [2, 4, 6, 8], "change": 0.8, "settled": True},
    ...  {"rounds": [2, 4, 6, 8], "change": 4.21, "settled": False}, {"rounds": [1], "change": None, "settled": False},
    ...  {"rounds": [], "change": None, "settled": False, "diverged": "a test loss of None"})]
    ['yes (+0.8)', 'no (+4.2)', '? (1 evaluation)', 'diverged']
    """
    s = row.settling
    if s.get("diverged"):
        return "diverged"
    if s.get("change") is None:
        n = len(s.get("rounds") or [])
        return f"? ({n} evaluation{'' if n == 1 else 's'})"
    return f"{'yes' if s.get('settled') else 'no'} ({s['change']:+.1f})"


def _cells(row: Row, columns: list[Metric], best: dict[str, float], competes: bool) -> list[Cell]:
    out = []
    for m in columns:
        s = row.stats[m.name]
        cell = Cell(m, s, competes and is_best(best, m.name, s.mean) and may_be_best(m.name, row),
                    reach_suffix(m.name, s, row))
        if m.name == "rounds_to_target" and row.config.get("target_accuracy") is None:
            cell.text, cell.suffix = NOT_APPLICABLE, ""
        elif m.name == "rounds_to_target" and s.mean is None:
            cell.text, cell.suffix = f"never (0/{len(row.results)})", ""
        out.append(cell)
    return out


def settle_note(t: SplitTable, marked: bool) -> str:
    """The sentence under a table that says what settled means and, when a row is ``marked``, what
    :data:`UNSETTLED` marks.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from hetbench.leaderboard.layout import settle_note
    >>> settle_note(SimpleNamespace(settle={"evaluations": 4, "max_change": 3.0}), False)
    'Settled: the least-squares line through the seed-mean of the last 4 test accuracies moves by at most 3 points (the rule hetbench reproduce decides claims by; in parentheses, its change).'
    """
    e, c = t.settle["evaluations"], t.settle["max_change"]
    text = (f"Settled: the least-squares line through the seed-mean of the last {e} test accuracies moves by at most "
            f"{c:g} points (the rule hetbench reproduce decides claims by; in parentheses, its change).")
    if marked:
        text += (f" {UNSETTLED}: a row that had not settled, diverged or has too few evaluations to tell; its numbers "
                 "are points on the way, so it is never bold and its place is provisional.")
    return text


def layout(t: SplitTable) -> Layout:
    """The main table of a ranked split table.

    Parameters
    ----------
    t : SplitTable
        A ranked table (:func:`hetbench.leaderboard.rank.rank`).

    Returns
    -------
    Layout
        Its columns and headers, the ranked lines, the reference lines and the notes.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.layout import layout
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.leaderboard.rank import rank
    >>> flat = {"round": [1, 2, 3, 4], "accuracy": [80.0, 81.0, 80.0, 81.0]}
    >>> rising = {"round": [1, 2, 3, 4], "accuracy": [40.0, 70.0, 90.0, 99.0]}
    >>> runs = [example_result(algorithm=a, curves=c) for a, c in [("central", flat), ("fedavg", flat), ("fedprox", rising)]]
    >>> (t,) = rank(aggregate([parse_result(r) for r in runs]), "accuracy")
    >>> lay = layout(t)
    >>> [(x.rank_text, x.row.label, x.settled_text, x.cells[0].bold) for x in lay.ranked]
    [('1†', 'fedprox', 'no (+59.1)', False), ('2', 'fedavg', 'yes (+0.6)', False)]
    >>> [(x.rank_text, x.row.label) for x in lay.references]
    [('ref.', 'central')]
    """
    columns = shown_metrics(t)
    best = best_means(t)
    ranked = [r for r in t.rows if r.role == RANKED]
    ties = tied_with_previous(t, ranked)
    lines = []
    for r, tie in zip(ranked, ties):
        rank_text = ((TIE if tie else "") + str(r.rank) if r.rank is not None else "—") + ("" if r.settled else UNSETTLED)
        lines.append(Line(r, rank_text, settled_text(r), _cells(r, columns, best, True)))
    refs = [Line(r, "ref.", settled_text(r), _cells(r, columns, best, False)) for r in t.rows if r.role == REFERENCE]
    notes = [target_text(t)] if any(m.name == "rounds_to_target" for m in columns) else []
    if lines or refs:
        notes.append(settle_note(t, any(not x.row.settled for x in lines)))
    if any(ties):
        notes.append(TIE_NOTE)
    if refs:
        names = ", ".join(x.row.label + (": one model trained on the pooled client data" if x.row.algorithm == CENTRAL
                                         else "") for x in refs)
        notes.append(f"ref.: a reference, shown for scale, never ranked or bold ({names}).")
    group_rows = [r for r in t.rows if r.role == GROUPS]
    group_columns = shown_metrics(t, group_rows)
    groups = [Line(r, "", settled_text(r), _cells(r, group_columns, best, False)) for r in group_rows]
    return Layout(columns, [header(m, t) for m in columns], lines, refs, notes, group_columns,
                  [header(m, t, group_rows) for m in group_columns], groups)


__all__ = ["NOT_APPLICABLE", "UNSETTLED", "Cell", "Layout", "Line", "header", "layout", "main_rows", "settle_note",
           "settled_text", "shown_metrics"]
