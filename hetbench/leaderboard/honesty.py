"""What a leaderboard must say so that its numbers are not over-read.

* **Rounds to target** counts a seed that never reached the target as a miss: the cell reads
  ``16.0 (1/2 reached)``, the mean is over the seeds that reached it, and only rows whose every seed
  reached it can be the column's best (:func:`reach_suffix`, :func:`fully_reached`).
* **The target** itself is printed under the table (:func:`target_text`).
* **Ties within the seeds' spread**: a row whose ranking interval (mean ± std over seeds of the rank
  metric) overlaps the row above it is marked ``≈``: the order between them is not resolved by these
  seeds (:func:`tied_with_previous`).
* A column where every row has the same mean has no best (:func:`hetbench.leaderboard.rank.best_means`).
"""

from __future__ import annotations

from hetbench.leaderboard.aggregate import Row, SplitTable, Stat

#: the rank column's mark for a row whose interval overlaps the row above it
TIE = "≈"


def reach_suffix(metric_name: str, s: Stat, row: Row) -> str:
    """`` (k/n reached)`` for a rounds-to-target cell whose row ran with a target and missed it on some seed.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> from hetbench.leaderboard.honesty import reach_suffix
    >>> row = SimpleNamespace(results=[1, 2], config={"target_accuracy": 80.0})
    >>> reach_suffix("rounds_to_target", Stat(16.0, None, 1), row), reach_suffix("accuracy", Stat(1.0, None, 1), row)
    (' (1/2 reached)', '')
    """
    if metric_name != "rounds_to_target" or row.config.get("target_accuracy") is None:
        return ""
    seeds = len(row.results)
    return f" ({s.n}/{seeds} reached)" if s.n < seeds else ""


def fully_reached(row: Row) -> bool:
    """Whether every seed of the row reached its target (only those rows compete for the best rounds-to-target)."""
    return row.stats["rounds_to_target"].n == len(row.results)


def may_be_best(metric_name: str, row: Row) -> bool:
    """Whether a row's cell may be its column's best: any metric but rounds to target, which needs every seed
    to have reached the target (its mean is over those that did)."""
    return metric_name != "rounds_to_target" or fully_reached(row)


def target_text(t: SplitTable) -> str:
    """The sentence naming the target accuracy of the rows that ran with one (empty when none did).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from hetbench.leaderboard.honesty import target_text
    >>> target_text(SimpleNamespace(rows=[SimpleNamespace(config={"target_accuracy": 80.0})]))
    'Rounds to target: the first evaluated round at or above 80% test accuracy; a seed that never reached it is a miss (k/n reached).'
    """
    targets = sorted({r.config.get("target_accuracy") for r in t.rows} - {None})
    if not targets:
        return ""
    shown = ", ".join(f"{v:g}%" for v in targets)
    return (f"Rounds to target: the first evaluated round at or above {shown} test accuracy; a seed that never "
            "reached it is a miss (k/n reached).")


def tied_with_previous(t: SplitTable, rows: list[Row] | None = None) -> list[bool]:
    """Per row (in rank order; ``rows``, default the table's), whether its rank metric's mean ± std over seeds
    overlaps the row above's.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> from hetbench.leaderboard.honesty import tied_with_previous
    >>> rows = [SimpleNamespace(stats={"accuracy": Stat(80.0, 2.0, 3)}), SimpleNamespace(stats={"accuracy": Stat(77.0, 1.5, 3)}),
    ...         SimpleNamespace(stats={"accuracy": Stat(60.0, 1.0, 3)})]
    >>> tied_with_previous(SimpleNamespace(rows=rows, rank_by="accuracy"))
    [False, True, False]
    """
    out, prev = [], None
    for r in (t.rows if rows is None else rows):
        s = r.stats.get(t.rank_by) if t.rank_by else None
        tied = False
        if prev is not None and s is not None and s.mean is not None and prev.mean is not None and (s.std or prev.std):
            lo_a, hi_a = s.mean - (s.std or 0.0), s.mean + (s.std or 0.0)
            lo_b, hi_b = prev.mean - (prev.std or 0.0), prev.mean + (prev.std or 0.0)
            tied = lo_a <= hi_b and lo_b <= hi_a
        out.append(tied)
        prev = s
    return out


TIE_NOTE = (f"{TIE}: this row's interval (mean ± std over seeds of the ranking metric) overlaps the row above's, "
            "so these seeds do not resolve their order.")


__all__ = ["TIE", "TIE_NOTE", "reach_suffix", "fully_reached", "may_be_best", "target_text", "tied_with_previous"]
