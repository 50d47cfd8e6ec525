"""Aggregation: results grouped into split tables and configuration rows, averaged over seeds.

One :class:`SplitTable` per (split name, split fingerprint); one :class:`Row` per algorithm
configuration (name, params, config without the seed); every metric cell is the mean and sample
standard deviation (ddof=1) over the seeds, nulls ignored. Relative accuracy, when a result does not
give it, is its accuracy over the accuracy of the same seed's ``central`` run of the same split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from hetbench.leaderboard.load import Result, json_text, number
from hetbench.leaderboard.metrics import CURVES, METRIC_NAMES

CENTRAL = "central"


@dataclass
class Stat:
    """A metric over the seeds of a row.

    Parameters
    ----------
    mean : float or None
        The mean of the non-null values; None when there are none.
    std : float or None
        The sample standard deviation (ddof=1); None with fewer than two values.
    n : int
        The number of non-null values.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> Stat(80.0, None, 1).std is None
    True
    """

    mean: float | None
    std: float | None
    n: int


def summarize(values: Iterable[float | None]) -> Stat:
    """Mean and sample standard deviation (ddof=1) of the non-null values.

    Parameters
    ----------
    values : Iterable[float or None]
        One value per seed; None for a null.

    Returns
    -------
    Stat
        The mean, std and count.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import summarize
    >>> summarize([80.0, None, 84.0])
    Stat(mean=82.0, std=2.8284271247461903, n=2)
    >>> summarize([None])
    Stat(mean=None, std=None, n=0)
    """
    vals = [v for v in values if v is not None]
    if not vals:
        return Stat(None, None, 0)
    mean = math.fsum(vals) / len(vals)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else None
    return Stat(mean, std, len(vals))


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
        Per curve key, (rounds, mean over seeds).
    rank : int or None
        The place in its table; None when the rank metric is null.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.load import example_result, parse_result
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
    rank: int | None = None

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
        >>> from hetbench.leaderboard.load import example_result, parse_result
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
    reference : str or None
        The label of the central row relative accuracy is measured against.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.load import example_result, parse_result
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


def format_value(v: Any) -> str:
    """A params/config value as shown in labels and table headers.

    Parameters
    ----------
    v : Any
        A JSON value.

    Returns
    -------
    str
        ``null``/``true``/``false``, ``%g`` for floats, the text of ints and strings, else JSON.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import format_value
    >>> format_value(0.010), format_value(None), format_value(True), format_value([1, "a"])
    ('0.01', 'null', 'true', '[1,"a"]')
    """
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (int, str)):
        return str(v)
    return json_text(v)


_MISSING = object()


def _labels(rows: list[Row]) -> None:
    """Label = algorithm name; rows sharing a name get the params/config values that differ."""
    by_name: dict[str, list[Row]] = {}
    for r in rows:
        by_name.setdefault(r.algorithm, []).append(r)
    for name, group in by_name.items():
        if len(group) == 1:
            group[0].label = name
            continue
        parts: list[list[str]] = [[] for _ in group]
        for attr in ("params", "config"):
            keys = sorted({k for r in group for k in getattr(r, attr)})
            for k in keys:
                vals = [getattr(r, attr).get(k, _MISSING) for r in group]
                if len({json_text(v) if v is not _MISSING else "\0missing" for v in vals}) > 1:
                    for i, v in enumerate(vals):
                        parts[i].append(f"{k}={'-' if v is _MISSING else format_value(v)}")
        labels = [f"{name} ({', '.join(p)})" if p else name for p in parts]
        counts: dict[str, int] = {}
        for r, lab in zip(group, labels):  # identical text for different values (0.1 vs "0.1"): number them
            counts[lab] = counts.get(lab, 0) + 1
            r.label = lab if labels.count(lab) == 1 else f"{lab} #{counts[lab]}"


def _central_reference(rows: list[Row]) -> Row | None:
    """The central row relative accuracy is measured against: the one with the most seeds, then
    the highest mean accuracy, then the first by configuration."""
    central = [r for r in rows if r.algorithm == CENTRAL]
    if not central:
        return None

    def key(r: Row) -> tuple[int, float, str]:
        accs = [x.values["accuracy"] for x in r.results if x.values["accuracy"] is not None]
        return (-len(accs), -(sum(accs) / len(accs)) if accs else math.inf, json_text([r.params, r.config]))

    return min(central, key=key)


def _mean_curve(results: list[Result], key: str) -> tuple[list[float], list[float | None]] | None:
    """Mean over seeds of ``curves[key]`` against ``curves.round``; None when no seed has it."""
    per_round: dict[float, list[float]] = {}
    found = False
    for res in results:
        curves = res.data.get("curves")
        if not isinstance(curves, dict):
            continue
        xs, ys = curves.get("round"), curves.get(key)
        if not isinstance(xs, list) or not isinstance(ys, list) or len(xs) != len(ys):
            continue
        for x, y in zip(xs, ys):
            try:
                xf, yf = number(x, "round"), number(y, key)
            except ValueError:
                continue
            if xf is None:
                continue
            per_round.setdefault(xf, [])
            if yf is not None:
                per_round[xf].append(yf)
                found = True
    if not found:
        return None
    rounds = sorted(per_round)
    return rounds, [summarize(per_round[x]).mean for x in rounds]


def _unique(values: Iterable[Any]) -> list[Any]:
    """The distinct non-None values, in first-seen order."""
    out: list[Any] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def _row_stats(row: Row, ref_acc: dict[str, float | None]) -> None:
    """Fill ``row.stats`` (relative accuracy from the reference accuracy of each seed) and ``row.curves``."""
    per_metric: dict[str, list[float | None]] = {m: [] for m in METRIC_NAMES}
    for res in row.results:
        vals = dict(res.values)
        if vals["relative_accuracy"] is None and vals["accuracy"] is not None:
            c = ref_acc.get(json_text(res.seed))
            if c:  # not None and not 0
                vals["relative_accuracy"] = vals["accuracy"] / c
        for m in METRIC_NAMES:
            per_metric[m].append(vals[m])
    row.stats = {m: summarize(v) for m, v in per_metric.items()}
    for key, _ in CURVES:
        curve = _mean_curve(row.results, key)
        if curve is not None:
            row.curves[key] = curve


def aggregate(results: list[Result]) -> list[SplitTable]:
    """Group results into split tables and configuration rows, and average them over seeds.

    Fills in relative accuracy from the central run, the per-metric mean/std and the mean learning
    curves. Tables are sorted by (name, fingerprint); rows are unranked, in configuration order,
    until :func:`hetbench.leaderboard.rank.rank`.

    Parameters
    ----------
    results : list[Result]
        The results (of any splits), e.g. ``load_results(folder).results``.

    Returns
    -------
    list[SplitTable]
        One table per (split name, fingerprint).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.load import example_result, parse_result
    >>> runs = [example_result(algorithm=a, seed=s, accuracy=acc)
    ...         for a, s, acc in [("central", 0, 100.0), ("fedavg", 0, 90.0), ("fedavg", 1, 70.0)]]
    >>> (table,) = aggregate([parse_result(r) for r in runs])
    >>> [(r.label, r.mean("accuracy"), r.mean("relative_accuracy")) for r in table.rows]
    [('central', 100.0, 1.0), ('fedavg', 80.0, 0.9)]
    >>> table.reference
    'central'
    """
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
        _labels(rows)
        ref = _central_reference(rows)
        ref_acc = {json_text(r.seed): r.values["accuracy"] for r in ref.results} if ref else {}
        for row in rows:
            _row_stats(row, ref_acc)
        datas = [res.data for row in rows for res in row.results]
        tables.append(SplitTable(
            name=name, fingerprint=fp, title=f"{name} ({fp[:8]})" if name_count[name] > 1 else name, rows=rows,
            group_by=_unique(d["split"].get("group_by") for d in datas),
            num_clients=_unique(d["split"].get("num_clients") for d in datas),
            models=_unique(d["config"].get("model") or (d.get("model") or {}).get("name") for d in datas),
            rounds=_unique(d["config"].get("rounds") for d in datas),
            reference=ref.label if ref else None,
        ))
    return tables
