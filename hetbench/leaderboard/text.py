"""Text renderings of ranked tables: ``leaderboard.md`` and the tidy ``leaderboard.csv``.

The header lines and cell texts here are shared with :mod:`hetbench.leaderboard.html`; the file
formats are in ``docs/output-contract.md``.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Callable

from hetbench.leaderboard.aggregate import SplitTable, Stat, format_value
from hetbench.leaderboard.load import Skipped, json_text
from hetbench.leaderboard.metrics import DEFAULT_RANK_BY, METRIC_BY_NAME, METRIC_NAMES, METRICS, Metric
from hetbench.leaderboard.rank import best_means, is_best

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
    """The sentence that says how a table is ranked (and what relative accuracy is against).

    Parameters
    ----------
    t : SplitTable
        The table.

    Returns
    -------
    str
        One sentence or two.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import SplitTable
    >>> from hetbench.leaderboard.text import rank_line
    >>> rank_line(SplitTable("digits", "f00d", "digits", [], rank_by="wall_time_s"))
    'Ranked by wall_time_s (lower is better); mean ± std over seeds.'
    """
    m = METRIC_BY_NAME[t.rank_by or DEFAULT_RANK_BY]
    s = f"Ranked by {m.name} ({'higher' if m.higher_is_better else 'lower'} is better); mean ± std over seeds."
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
    >>> from hetbench.leaderboard.load import example_result, parse_result
    >>> from hetbench.leaderboard.rank import rank
    >>> from hetbench.leaderboard.text import render_markdown
    >>> tables = rank(aggregate([parse_result(example_result(algorithm=a, accuracy=acc)) for a, acc in [("a", 70.0), ("b", 90.0)]]))
    >>> print(render_markdown(tables))
    # hetbench leaderboard
    <BLANKLINE>
    ## digits
    <BLANKLINE>
    group_by: ? · clients: ? · model: ? · rounds: ? · fingerprint: f00d
    <BLANKLINE>
    Ranked by worst_group_accuracy (higher is better); mean ± std over seeds.
    <BLANKLINE>
    | rank | algorithm | seeds | accuracy ↑ | client acc. ↑ | worst group ↑ | group var. ↓ | ... | MACs/client ↓ |
    |---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
    | 1 | b | 1 | **90.00** | — | **85.00** | — | — | — | — | — | — | — | — |
    | 2 | a | 1 | 70.00 | — | 65.00 | — | — | — | — | — | — | — | — |
    <BLANKLINE>
    """
    out = ["# hetbench leaderboard", ""]
    for t in tables:
        best = best_means(t)
        out += [f"## {_md_escape(t.title)}", "", meta_line(t), "", rank_line(t), ""]
        head = ["rank", "algorithm", "seeds"] + [f"{m.header} {m.arrow}" for m in METRICS]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join(["---:", ":---", "---:"] + ["---:"] * len(METRICS)) + "|")
        for r in t.rows:
            cells = [str(r.rank) if r.rank is not None else DASH, _md_escape(r.label), str(len(r.results))]
            for m in METRICS:
                s = r.stats[m.name]
                cells.append(cell_text(m, s, (lambda x: f"**{x}**") if is_best(best, m.name, s.mean) else None))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if skipped:
        out.append(f"Skipped files ({len(skipped)}): "
                   + "; ".join(f"`{s.path}` ({_md_escape(s.reason)})" for s in skipped))
        out.append("")
    return "\n".join(out)


def _csv_num(x: float | None) -> str:
    return "" if x is None else repr(float(x))


CSV_COLUMNS: tuple[str, ...] = (
    ("split", "fingerprint", "rank", "algorithm", "seeds")
    + tuple(f"{m}_{s}" for m in METRIC_NAMES for s in ("mean", "std"))
    + ("algorithm_name", "params", "config")
)


def render_csv(tables: list[SplitTable]) -> str:
    """``leaderboard.csv``: one row per (split, configuration), the columns :data:`CSV_COLUMNS`.

    Numbers are written in full (``repr``); null is an empty cell.

    Parameters
    ----------
    tables : list[SplitTable]
        Ranked tables.

    Returns
    -------
    str
        The CSV text (``\\n`` line ends).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.load import example_result, parse_result
    >>> from hetbench.leaderboard.rank import rank
    >>> from hetbench.leaderboard.text import render_csv
    >>> import csv, io
    >>> runs = [example_result(params={"mu": 0.1}, seed=s, accuracy=acc) for s, acc in [(0, 80.0), (1, 84.0)]]
    >>> (row,) = csv.DictReader(io.StringIO(render_csv(rank(aggregate([parse_result(r) for r in runs])))))
    >>> row["algorithm"], row["seeds"], row["accuracy_mean"], row["accuracy_std"], row["rounds_to_target_mean"], row["params"]
    ('fedavg', '2', '82.0', '2.8284271247461903', '', '{"mu":0.1}')
    """
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    for t in tables:
        for r in t.rows:
            rec = {"split": t.name, "fingerprint": t.fingerprint, "rank": "" if r.rank is None else r.rank,
                   "algorithm": r.label, "seeds": len(r.results), "algorithm_name": r.algorithm,
                   "params": json_text(r.params), "config": json_text(r.config)}
            for m in METRIC_NAMES:
                rec[f"{m}_mean"] = _csv_num(r.stats[m].mean)
                rec[f"{m}_std"] = _csv_num(r.stats[m].std)
            w.writerow(rec)
    return buf.getvalue()
