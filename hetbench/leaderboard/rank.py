"""Ranking: every table's rows best first by one metric, and the best mean of every column.

:func:`build` is the whole path from a results folder to ranked tables (load, aggregate, rank).
"""

from __future__ import annotations

import math
from pathlib import Path

from hetbench.leaderboard.aggregate import GROUPS, RANKED, REFERENCE, Row, SplitTable, aggregate
from hetbench.leaderboard.load import Loaded, load_results
from hetbench.leaderboard.honesty import may_be_best
from hetbench.leaderboard.metrics import DEFAULT_RANK_BY, DEFAULT_STATISTIC, METRICS, check_rank_by, check_statistic


def rank(tables: list[SplitTable], rank_by: str = DEFAULT_RANK_BY) -> list[SplitTable]:
    """Sort every table's rows best first by ``rank_by``, in that metric's direction.

    Ties go by accuracy (higher first), then by label; rows whose rank metric is null go last with
    ``rank = None``. Only :data:`~hetbench.leaderboard.aggregate.RANKED` rows get a rank: the references
    (``central``) and the rows trained on some groups follow them, unranked. Sorts in place. A per-evaluation metric ranks by the statistic the tables were
    aggregated with (``SplitTable.statistic``).

    Parameters
    ----------
    tables : list[SplitTable]
        Tables from :func:`hetbench.leaderboard.aggregate.aggregate`.
    rank_by : str
        The metric name to rank by.

    Returns
    -------
    list[SplitTable]
        ``tables``, ranked.

    Raises
    ------
    HetbenchError
        When ``rank_by`` names no metric.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.leaderboard.rank import rank
    >>> runs = [example_result(algorithm=a, final={"worst_group_accuracy": w})
    ...         for a, w in [("alpha", 70.0), ("beta", 80.0), ("gamma", None)]]
    >>> (table,) = rank(aggregate([parse_result(r) for r in runs]))
    >>> [(r.rank, r.label) for r in table.rows]
    [(1, 'beta'), (2, 'alpha'), (None, 'gamma')]
    """
    metric = check_rank_by(rank_by)
    sign = -1.0 if metric.higher_is_better else 1.0
    order = {RANKED: 0, REFERENCE: 1, GROUPS: 2}
    for t in tables:
        def key(r: Row) -> tuple[int, bool, float, bool, float, str]:
            v, acc = r.mean(metric.name), r.mean("accuracy")
            return (order[r.role], v is None, sign * v if v is not None else 0.0, acc is None,
                    -acc if acc is not None else 0.0, r.label)

        t.rows.sort(key=key)
        for i, r in enumerate(t.rows, 1):
            r.rank = i if r.role == RANKED and r.mean(metric.name) is not None else None
        t.rank_by = metric.name
    return tables


def build(results_dir: str | Path, rank_by: str = DEFAULT_RANK_BY, statistic: str = DEFAULT_STATISTIC,
          settle: dict | None = None, references: tuple[str, ...] = ()) -> tuple[list[SplitTable], Loaded]:
    """The ranked tables of a results folder: load, aggregate, rank.

    Parameters
    ----------
    results_dir : str or Path
        The results folder (searched recursively).
    rank_by : str
        The metric name to rank by; checked before anything is read.
    statistic : str
        What per-evaluation metrics take of each seed's curve: ``"last-k"`` (default), ``"best"``, ``"final"``.
    settle : dict or None
        The settling rule rows are marked by (:func:`hetbench.leaderboard.aggregate.aggregate`).
    references : tuple[str, ...]
        Algorithms shown apart and never ranked, besides ``central``.

    Returns
    -------
    tuple[list[SplitTable], Loaded]
        The ranked tables and what was loaded (with the skipped files).

    Raises
    ------
    HetbenchError
        When ``rank_by`` names no metric, ``statistic`` is unknown, or the folder holds no usable result.

    Examples
    --------
    >>> import json, pathlib
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.rank import build
    >>> folder = pathlib.Path("results_build")
    >>> folder.mkdir()
    >>> for i, acc in enumerate([70.0, 90.0]):
    ...     _ = (folder / f"{i}.json").write_text(json.dumps(example_result(algorithm=f"algo{i}", accuracy=acc)))
    >>> tables, loaded = build(folder, "accuracy")
    >>> [r.label for r in tables[0].rows], len(loaded.results)
    (['algo1', 'algo0'], 2)
    """
    check_rank_by(rank_by)
    check_statistic(statistic)
    loaded = load_results(results_dir)
    return rank(aggregate(loaded.results, statistic, settle, references), rank_by), loaded


def best_means(table: SplitTable) -> dict[str, float]:
    """Per metric, the best mean of the table by the metric's direction.

    Only ranked rows that settled compete (a reference is not a competitor; a row still moving has not shown
    where it goes). Columns where fewer than two of them have a value, or where they all have the same mean
    (parameters and MACs of one model, say), are left out: nothing to compare, nothing is bold. Rounds to
    target compares only the rows whose every seed reached the target (:mod:`hetbench.leaderboard.honesty`).
    A metric whose spread decides (:attr:`Metric.spread_decides_best`: wall time) has a best only when its
    best row's mean ± std over seeds is apart from every other's.

    Parameters
    ----------
    table : SplitTable
        An aggregated table.

    Returns
    -------
    dict[str, float]
        Metric name to its best mean.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.leaderboard.rank import best_means
    >>> flat = {"round": [1, 2, 3, 4], "accuracy": [60.0, 61.0, 60.5, 61.0]}
    >>> runs = [example_result(algorithm=a, curves={**flat, "accuracy": [v + d for v in flat["accuracy"]]})
    ...         for a, d in [("a", 0.0), ("b", 20.0)]]
    >>> best_means(aggregate([parse_result(r) for r in runs])[0])
    {'accuracy': 80.833333}
    """
    out = {}
    for m in METRICS:
        rows = [r for r in table.rows if r.role == RANKED and r.settled and may_be_best(m.name, r)]
        vals = [r.mean(m.name) for r in rows if r.mean(m.name) is not None]
        if len(vals) >= 2 and max(vals) - min(vals) > 1e-9 * max(1.0, abs(max(vals))):  # all tied: nothing is best
            best = max(vals) if m.higher_is_better else min(vals)
            if not m.spread_decides_best or _apart(m.name, best, rows):
                out[m.name] = best
    return out


def _apart(metric: str, best: float, rows: list[Row]) -> bool:
    """Whether the row with the ``best`` mean of ``metric`` has mean ± std over seeds apart from every other row's
    (rows of one seed have no spread: nothing is apart)."""
    stats = [r.stats[metric] for r in rows if r.stats[metric].mean is not None]
    top = next(s for s in stats if math.isclose(s.mean, best, rel_tol=1e-9, abs_tol=1e-12))
    if top.std is None:
        return False
    others = [s for s in stats if s is not top]
    return all(s.std is not None and abs(s.mean - top.mean) > s.std + top.std for s in others)


def is_best(table_best: dict[str, float], metric: str, value: float | None) -> bool:
    """Whether ``value`` is the best mean of its column (to rounding error).

    Parameters
    ----------
    table_best : dict[str, float]
        :func:`best_means` of the table.
    metric : str
        The column's metric name.
    value : float or None
        The cell's mean.

    Returns
    -------
    bool
        True when the column has a best mean and ``value`` equals it.

    Examples
    --------
    >>> from hetbench.leaderboard.rank import is_best
    >>> is_best({"accuracy": 90.0}, "accuracy", 90.0), is_best({"accuracy": 90.0}, "macs", 90.0)
    (True, False)
    """
    best = table_best.get(metric)
    return best is not None and value is not None and math.isclose(value, best, rel_tol=1e-9, abs_tol=1e-12)
