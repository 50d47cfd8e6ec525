"""A result's per-evaluation statistics as the leaderboard reads them, whatever the document's schema.

Schema 2 documents carry them (``final.best``: ``{metric: {"value", "round"}}``, ``final.last_k``:
``{"k", "rounds", metric: value}``, each with ``group_accuracy`` and, with ``--train-groups``,
``group_drop`` per test group); for schema 1 documents they are computed from the curves with the
producer's own function (:func:`hetbench.train.result_stats.curve_statistics`), k = 3 (their default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from hetbench.leaderboard.metrics import PER_EVALUATION, STATISTICS
from hetbench.train.result_stats import curve_statistics
from hetbench.train.results import DEFAULT_LAST_K

#: a statistic's key in a document's ``final`` (None: ``final`` itself)
STAT_KEYS = {"last-k": "last_k", "best": "best", "final": None}


def number(x: Any, where: str) -> float | None:
    """A result's number as a finite float.

    Parameters
    ----------
    x : Any
        The JSON value.
    where : str
        Its key, for the error message.

    Returns
    -------
    float or None
        ``float(x)``; None for null, NaN and infinities.

    Raises
    ------
    ValueError
        When ``x`` is neither null nor a number (a malformed result).

    Examples
    --------
    >>> from hetbench.leaderboard.statistics import number
    >>> number(3, "final.accuracy"), number(None, "final.accuracy"), number(float("nan"), "final.accuracy")
    (3.0, None, None)
    >>> number("high", "final.accuracy")
    Traceback (most recent call last):
    ...
    ValueError: final.accuracy is not a number
    """
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{where} is not a number")
    x = float(x)
    return x if math.isfinite(x) else None


def stat_value(entry: Any, where: str) -> float | None:
    """A ``final.best`` entry (``{"value", "round"}`` or null) or a ``final.last_k`` number, as a float.

    Parameters
    ----------
    entry : Any
        The JSON value.
    where : str
        Its key, for the error message.

    Returns
    -------
    float or None
        The value; None for null and non-finite numbers.

    Raises
    ------
    ValueError
        When the value is not a number (a malformed result).

    Examples
    --------
    >>> from hetbench.leaderboard.statistics import stat_value
    >>> stat_value({"value": 58.0, "round": 3}, "final.best.accuracy"), stat_value(36.5, "final.last_k.accuracy")
    (58.0, 36.5)
    """
    if isinstance(entry, dict):
        return number(entry.get("value"), f"{where}.value")
    return number(entry, where)


def read_statistics(data: dict, version: int) -> tuple[dict, dict, int | None]:
    """A result's statistics: schema 2 reads ``final.best`` / ``final.last_k``, schema 1 computes them.

    Parameters
    ----------
    data : dict
        The result document (``final`` and ``config`` already checked to be objects).
    version : int
        Its ``schema_version``.

    Returns
    -------
    tuple[dict, dict, int or None]
        ``{statistic: {metric: value}}`` for ``"last-k"`` and ``"best"`` (the per-evaluation metrics);
        ``{statistic: {group: {"accuracy", "drop"}}}`` for all three statistics (``"final"`` from
        ``groups``); and the k the mean of the last k used.

    Raises
    ------
    ValueError
        When a schema-2 document lacks ``final.best`` / ``final.last_k`` or a value is not a number.

    Examples
    --------
    >>> from hetbench.leaderboard.statistics import read_statistics
    >>> v1 = {"config": {"seed": 0}, "final": {"accuracy": 18.0},
    ...       "curves": {"round": [1, 2, 3, 4], "accuracy": [30.0, 58.0, 40.0, 18.0],
    ...                  "group_accuracy": {"a": [30.0, 58.0, 40.0, 18.0]}},
    ...       "groups": {"a": {"accuracy": 18.0, "num_test": 9}}}
    >>> stats, groups, k = read_statistics(v1, 1)
    >>> stats["last-k"]["accuracy"], stats["best"]["accuracy"], groups["final"]["a"], k
    (38.666667, 58.0, {'accuracy': 18.0, 'drop': None}, 3)
    """
    final = data["final"]
    groups = data.get("groups") if isinstance(data.get("groups"), dict) else {}
    groups = {str(g): v for g, v in groups.items() if isinstance(v, dict)}
    if version >= 2:
        stats = {}
        for key in ("best", "last_k"):
            if not isinstance(final.get(key), dict):
                raise ValueError(f"missing 'final.{key}'")
            stats[key] = final[key]
    else:
        curves = data.get("curves") if isinstance(data.get("curves"), dict) else {}
        if not isinstance(curves.get("round", []), list) or not isinstance(curves.get("group_accuracy", {}), dict):
            raise ValueError("'curves' is malformed")
        k = data["config"].get("last_k", DEFAULT_LAST_K)
        k = k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else DEFAULT_LAST_K
        try:
            stats = curve_statistics(curves, groups, None, k)
        except (TypeError, ValueError, AttributeError):
            raise ValueError("'curves' is malformed") from None
    statistics: dict[str, dict[str, float | None]] = {}
    group_values: dict[str, dict[str, dict[str, float | None]]] = {
        "final": {g: {"accuracy": number(v.get("accuracy"), f"groups.{g}.accuracy"),
                      "drop": number(v.get("drop"), f"groups.{g}.drop")} for g, v in sorted(groups.items())}}
    for statistic in STATISTICS:
        key = STAT_KEYS[statistic]
        if key is None:
            continue
        block = stats[key]
        statistics[statistic] = {m: stat_value(block.get(m), f"final.{key}.{m}") for m in PER_EVALUATION}
        per_group = {}
        for field_name, out_name in (("group_accuracy", "accuracy"), ("group_drop", "drop")):
            entries = block.get(field_name) or {}
            if not isinstance(entries, dict):
                raise ValueError(f"'final.{key}.{field_name}' is not an object")
            for g, entry in entries.items():
                per_group.setdefault(str(g), {"accuracy": None, "drop": None})[out_name] = stat_value(
                    entry, f"final.{key}.{field_name}.{g}")
        group_values[statistic] = dict(sorted(per_group.items()))
    k = stats["last_k"].get("k")
    return statistics, group_values, k if isinstance(k, int) and not isinstance(k, bool) else None


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
    >>> from hetbench.leaderboard.statistics import Stat
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
    >>> from hetbench.leaderboard.statistics import summarize
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
