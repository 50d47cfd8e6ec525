"""Aggregation: results grouped into split tables and configuration rows, averaged over seeds.

One :class:`SplitTable` per (split name, split fingerprint); one :class:`Row` per algorithm
configuration (name, params, config without the seed: runs with different ``train_groups`` /
``test_groups`` are different rows); every metric cell is the mean and sample standard deviation
(ddof=1) over the seeds, nulls ignored. The per-evaluation metrics are first reduced per seed by the
chosen statistic (:data:`hetbench.leaderboard.metrics.STATISTICS`). Relative accuracy is a seed's
accuracy over the same seed's ``central`` accuracy of the same split (both by that statistic); with the
``final`` statistic a value the result gives is kept. Learning curves are the mean over seeds, with the
seeds' minimum and maximum per round (the band the plots draw). So are the algorithms' per-round
diagnostics (the lists in a result's ``curves.algorithm``, one value per trained round), under the key
``algorithm.<name>``.

Every row has a role: ``reference`` (``central`` and any ``references`` named: shown apart, never ranked),
``groups`` (trained on some groups only, ``--train-groups``: shown in their own sections) or ``ranked``; and
whether it had settled (:mod:`hetbench.train.settling`, the rule ``hetbench reproduce`` decides claims by,
applied to the seed-mean of its test accuracy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from hetbench.leaderboard.labels import format_value, set_labels
from hetbench.leaderboard.load import Result, json_text
from hetbench.leaderboard.metrics import CURVES, DEFAULT_STATISTIC, METRIC_NAMES, check_statistic
from hetbench.leaderboard.seed_curves import DIAGNOSTIC_PREFIX, diagnostic_names, mean_curve  # noqa: F401 (DIAGNOSTIC_PREFIX: re-exported)
from hetbench.leaderboard.statistics import Stat, summarize  # noqa: F401 (re-exported: a row's statistics)
from hetbench.train.settling import DEFAULT_SETTLE, settling_of

__all__ = ["CENTRAL", "DIAGNOSTIC_PREFIX", "GROUPS", "RANKED", "REFERENCE", "Row", "SplitTable", "Stat", "aggregate", "diagnostic_names", "format_value",
           "summarize"]

CENTRAL = "central"
#: a row's role: ranked; a reference (shown apart, never ranked); trained on some groups (their own sections)
RANKED, REFERENCE, GROUPS = "ranked", "reference", "groups"


@dataclass
class Row:
    """One algorithm configuration of a split, over its seeds.

    Parameters
    ----------
    algorithm : str
        The algorithm's name.
    params : dict
        The algorithm's parameters.
    config : dict
        The run configuration without the seed.
    results : list[Result]
        One result per seed.
    label : str
        The name shown: the algorithm, with the params/config values that tell it from its namesakes.
    stats : dict[str, Stat]
        Per metric name, the statistics over the seeds.
    curves : dict[str, tuple[list[float], list[float or None]]]
        Per curve key, (rounds, mean over seeds). The keys are the metrics of
        :data:`~hetbench.leaderboard.metrics.CURVES` against the evaluated rounds and, against the trained
        rounds, ``algorithm.<name>`` for every per-round diagnostic the results' ``curves.algorithm`` hold.
    bands : dict[str, tuple[list[float], list[float or None], list[float or None]]]
        Per curve key, (rounds, min over seeds, max over seeds); None where fewer than two seeds have a value.
    rank : int or None
        The place in its table; None when the rank metric is null or the row is not ranked.
    role : str
        :data:`RANKED`, :data:`REFERENCE` or :data:`GROUPS`.
    settling : dict
        :func:`hetbench.train.settling.settling_of` of its seeds: ``rounds``, ``change``, ``settled`` (and
        ``diverged``, why, when a seed diverged).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> (table,) = aggregate([parse_result(example_result(seed=s, accuracy=80.0 + s)) for s in (0, 2)])
    >>> row = table.rows[0]
    >>> row.label, row.seeds, row.mean("accuracy")
    ('fedavg', [0, 2], 81.0)
    """

    algorithm: str
    params: dict
    config: dict
    results: list[Result]
    label: str = ""
    stats: dict[str, Stat] = field(default_factory=dict)
    curves: dict[str, tuple[list[float], list[float | None]]] = field(default_factory=dict)
    bands: dict[str, tuple[list[float], list[float | None], list[float | None]]] = field(default_factory=dict)
    rank: int | None = None
    role: str = RANKED
    settling: dict = field(default_factory=dict)

    @property
    def settled(self) -> bool:
        """Whether the row's seeds had settled (and none diverged)."""
        return bool(self.settling.get("settled"))

    @property
    def engine(self) -> str:
        """The engine of the row's runs (``local``, ``flower``)."""
        return self.results[0].engine

    @property
    def seeds(self) -> list:
        """The seeds of the row's results, in order."""
        return [r.seed for r in self.results]

    def mean(self, metric: str) -> float | None:
        """The mean over seeds of a metric.

        Parameters
        ----------
        metric : str
            A metric name.

        Returns
        -------
        float or None
            The mean; None when every seed's value is null.

        Examples
        --------
        >>> from hetbench.leaderboard.aggregate import aggregate
        >>> from hetbench.leaderboard.example_results import example_result
        >>> from hetbench.leaderboard.load import parse_result
        >>> (table,) = aggregate([parse_result(example_result())])
        >>> table.rows[0].mean("worst_group_accuracy"), table.rows[0].mean("macs")
        (85.0, None)
        """
        return self.stats[metric].mean


@dataclass
class SplitTable:
    """The rows of one split.

    Parameters
    ----------
    name : str
        The split's name.
    fingerprint : str
        The split's fingerprint.
    title : str
        The name, or ``"name (fingerprint[:8])"`` when two fingerprints share the name.
    rows : list[Row]
        The configurations (ranked by :func:`hetbench.leaderboard.rank.rank`).
    group_by, num_clients, models, rounds : list
        The distinct values the results give (usually one each).
    rank_by : str or None
        The metric the rows are ranked by; None until ranked.
    statistic : str
        What the per-evaluation cells show of each seed's curve (``last-k``, ``best`` or ``final``).
    last_k : list[int]
        The distinct k the results' ``last-k`` statistic used.
    reference : str or None
        The label of the central row relative accuracy is measured against.
    settle : dict
        The settling rule the rows were judged by (``evaluations``, ``max_change``).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> tables = aggregate([parse_result(example_result(fingerprint=fp)) for fp in ("aaaa1111bb", "cccc2222dd")])
    >>> [t.title for t in tables]
    ['digits (aaaa1111)', 'digits (cccc2222)']
    """

    name: str
    fingerprint: str
    title: str
    rows: list[Row]
    group_by: list[Any] = field(default_factory=list)
    num_clients: list[Any] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    rounds: list[Any] = field(default_factory=list)
    rank_by: str | None = None
    reference: str | None = None
    statistic: str = DEFAULT_STATISTIC
    last_k: list[int] = field(default_factory=list)
    settle: dict = field(default_factory=lambda: dict(DEFAULT_SETTLE))


def _central_reference(rows: list[Row]) -> Row | None:
    """The central row relative accuracy is measured against: the one with the most seeds, then
    the highest mean accuracy, then the first by configuration."""
    central = [r for r in rows if r.algorithm == CENTRAL]
    if not central:
        return None

    def key(r: Row) -> tuple[int, float, str]:
        accs = [x.values["accuracy"] for x in r.results if x.values["accuracy"] is not None]  # final: a stable choice
        return (-len(accs), -(sum(accs) / len(accs)) if accs else math.inf, json_text([r.params, r.config]))

    return min(central, key=key)


def _unique(values: Iterable[Any]) -> list[Any]:
    """The distinct non-None values, in first-seen order."""
    out: list[Any] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def _row_stats(row: Row, ref_acc: dict[str, float | None], statistic: str) -> None:
    """Fill ``row.stats`` (relative accuracy from the reference accuracy of each seed), ``row.curves``
    and ``row.bands``."""
    per_metric: dict[str, list[float | None]] = {m: [] for m in METRIC_NAMES}
    for res in row.results:
        vals = res.values_for(statistic)
        if statistic != "final":
            vals["relative_accuracy"] = None  # the document's is of the final round: recompute below
        if vals["relative_accuracy"] is None and vals["accuracy"] is not None:
            c = ref_acc.get(json_text(res.seed))
            if c:  # not None and not 0
                vals["relative_accuracy"] = vals["accuracy"] / c
        for m in METRIC_NAMES:
            per_metric[m].append(vals[m])
    row.stats = {m: summarize(v) for m, v in per_metric.items()}
    for key in [k for k, _ in CURVES] + [DIAGNOSTIC_PREFIX + n for n in diagnostic_names(row.results)]:
        curve = mean_curve(row.results, key)
        if curve is not None:
            rounds, mean, lo, hi = curve
            row.curves[key] = (rounds, mean)
            row.bands[key] = (rounds, lo, hi)


def aggregate(results: list[Result], statistic: str = DEFAULT_STATISTIC, settle: dict | None = None,
              references: Iterable[str] = ()) -> list[SplitTable]:
    """Group results into split tables and configuration rows, and average them over seeds.

    Fills in relative accuracy from the central run, the per-metric mean/std and the mean learning
    curves. Tables are sorted by (name, fingerprint); rows are unranked, in configuration order,
    until :func:`hetbench.leaderboard.rank.rank`.

    Parameters
    ----------
    results : list[Result]
        The results (of any splits), e.g. ``load_results(folder).results``.
    statistic : str
        What the per-evaluation metrics' cells take of each seed's curve: ``"last-k"`` (mean of the
        last k evaluations, the default), ``"best"`` or ``"final"``.
    settle : dict or None
        The settling rule rows are judged by (``{"evaluations": E, "max_change": points}``); default
        :data:`hetbench.train.settling.DEFAULT_SETTLE`.
    references : Iterable[str]
        Algorithms shown as references (never ranked) besides ``central``.

    Returns
    -------
    list[SplitTable]
        One table per (split name, fingerprint).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> runs = [example_result(algorithm=a, seed=s, accuracy=acc)
    ...         for a, s, acc in [("central", 0, 100.0), ("fedavg", 0, 90.0), ("fedavg", 1, 70.0)]]
    >>> (table,) = aggregate([parse_result(r) for r in runs])
    >>> [(r.label, r.mean("accuracy"), r.mean("relative_accuracy")) for r in table.rows]
    [('central', 100.0, 1.0), ('fedavg', 80.0, 0.9)]
    >>> table.reference, [r.role for r in table.rows]
    ('central', ['reference', 'ranked'])
    """
    check_statistic(statistic)
    settle = dict(settle or DEFAULT_SETTLE)
    reference_names = {CENTRAL, *references}
    by_split: dict[tuple[str, str], dict[tuple, list[Result]]] = {}
    for res in results:
        by_split.setdefault(res.split_key, {}).setdefault(res.row_key, []).append(res)
    name_count: dict[str, int] = {}
    for name, _ in by_split:
        name_count[name] = name_count.get(name, 0) + 1
    tables: list[SplitTable] = []
    for (name, fp), groups in sorted(by_split.items()):
        rows = []
        for (_, _, _), rs in sorted(groups.items()):
            rs = sorted(rs, key=lambda r: (json_text(r.seed), r.path))
            rows.append(Row(algorithm=rs[0].algorithm, params=rs[0].params, config=rs[0].config, results=rs))
        set_labels(rows)
        ref = _central_reference(rows)
        ref_acc = {json_text(r.seed): r.values_for(statistic)["accuracy"] for r in ref.results} if ref else {}
        for row in rows:
            _row_stats(row, ref_acc, statistic)
            row.settling = settling_of([res.data for res in row.results], settle)
            row.role = (REFERENCE if row.algorithm in reference_names
                        else GROUPS if row.results[0].train_groups is not None else RANKED)
        datas = [res.data for row in rows for res in row.results]
        tables.append(SplitTable(
            name=name, fingerprint=fp, title=f"{name} ({fp[:8]})" if name_count[name] > 1 else name, rows=rows,
            group_by=_unique(d["split"].get("group_by") for d in datas),
            num_clients=_unique(d["split"].get("num_clients") for d in datas),
            models=_unique(d["config"].get("model") or (d.get("model") or {}).get("name") for d in datas),
            rounds=_unique(d["config"].get("rounds") for d in datas),
            reference=ref.label if ref else None, statistic=statistic,
            last_k=sorted({r.last_k for row in rows for r in row.results if r.last_k is not None}), settle=settle,
        ))
    return tables
