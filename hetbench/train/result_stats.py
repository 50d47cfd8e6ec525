"""The statistics a training run's curves give, written into its results document and read back by the
leaderboard: the best value of each metric and its round, the mean of the last k evaluations, the pooled
accuracy of several groups, and the leave-one-group-out / cross-group protocol's curves.

Pure Python over the results document's lists (no torch), so the leaderboard reads them without the trainer.
"""

from __future__ import annotations

import math
from typing import Any

from hetbench.train.results import DEFAULT_LAST_K, DIGITS, EVAL_METRICS, LOWER_IS_BETTER, PROTOCOL_METRICS


def _finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else None (null, NaN, not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def best_of(rounds: list, values: list, lower_is_better: bool = False) -> dict[str, Any] | None:
    """The best value of a curve and the first evaluated round that reached it.

    Parameters
    ----------
    rounds : list of int
        The evaluated rounds.
    values : list of float or None
        The curve, one value per evaluated round (nulls are skipped).
    lower_is_better : bool
        Best = lowest (loss, variance, drops); else highest (accuracies).

    Returns
    -------
    dict or None
        ``{"value": v, "round": r}``; None when the curve has no finite value.

    Examples
    --------
    >>> from hetbench.train.result_stats import best_of
    >>> best_of([1, 2, 3, 4], [50.0, 80.0, 80.0, 60.0])  # ties: the earliest round
    {'value': 80.0, 'round': 2}
    >>> best_of([1, 2], [0.9, 0.4], lower_is_better=True), best_of([1], [None])
    ({'value': 0.4, 'round': 2}, None)
    """
    best: dict[str, Any] | None = None
    for r, v in zip(rounds, values):
        v = _finite(v)
        if v is None:
            continue
        if best is None or (v < best["value"] if lower_is_better else v > best["value"]):
            best = {"value": v, "round": int(r)}
    return best


def mean_last(values: list, k: int) -> float | None:
    """Mean of the last ``k`` evaluations of a curve (fewer when it has fewer), nulls skipped.

    Parameters
    ----------
    values : list of float or None
        The curve, one value per evaluation.
    k : int
        How many evaluations, counted from the last.

    Returns
    -------
    float or None
        The mean, rounded to :data:`DIGITS` decimals; None when those evaluations have no finite value.

    Examples
    --------
    >>> from hetbench.train.result_stats import mean_last
    >>> mean_last([10.0, 58.0, 40.0, 18.0], 3), mean_last([70.0], 3), mean_last([None, None], 2)
    (38.666667, 70.0, None)
    """
    window = [v for v in (_finite(x) for x in values[max(len(values) - int(k), 0):]) if v is not None]
    return round(math.fsum(window) / len(window), DIGITS) if window else None


def pooled_accuracy(accuracies: list, counts: list) -> float | None:
    """Accuracy of several groups' test rows pooled: their accuracies weighted by their test rows.

    Parameters
    ----------
    accuracies : list of float or None
        Each group's accuracy (percent).
    counts : list of int
        Each group's number of test rows; groups without rows or accuracy are left out.

    Returns
    -------
    float or None
        The pooled accuracy (percent, :data:`DIGITS` decimals); None when no group is left.

    Examples
    --------
    >>> from hetbench.train.result_stats import pooled_accuracy
    >>> pooled_accuracy([90.0, 60.0], [300, 100]), pooled_accuracy([50.0], [0])
    (82.5, None)
    """
    pairs = [(a, n) for a, n in zip((_finite(a) for a in accuracies), counts) if a is not None and n > 0]
    total = sum(n for _, n in pairs)
    return round(math.fsum(a * n for a, n in pairs) / total, DIGITS) if total else None


def _group_split(groups: dict[str, dict], train_groups: Any) -> tuple[list[str], list[str]]:
    """(trained-on groups, unseen groups) among the ``groups`` entries that have test rows."""
    trained = {str(g) for g in train_groups}
    with_rows = [g for g in sorted(groups) if int(groups[g].get("num_test") or 0) > 0]
    return [g for g in with_rows if g in trained], [g for g in with_rows if g not in trained]


def protocol_curves(group_curves: dict[str, list], groups: dict[str, dict], train_groups: Any) -> dict[str, Any]:
    """Per evaluation: trained-on accuracy, unseen accuracy, mean drop, and every group's drop.

    The trained-on accuracy is the pooled accuracy of the test rows of the groups in ``train_groups``;
    the unseen accuracy that of the other groups; a group's drop is the trained-on accuracy minus the
    group's accuracy (points, positive = worse than on the trained-on groups); the mean drop is the
    unweighted mean of the unseen groups' drops (HeteroSwitch Fig. 3: train on the baseline ISP, test
    on each variant). Groups without test rows are left out.

    Parameters
    ----------
    group_curves : dict[str, list]
        ``curves.group_accuracy``: each group's accuracy per evaluation.
    groups : dict[str, dict]
        The document's ``groups`` (their ``num_test`` weigh the pooling).
    train_groups : sequence of str
        ``config.train_groups``.

    Returns
    -------
    dict
        ``{"trained_on_accuracy": [...], "unseen_accuracy": [...], "mean_drop": [...], "group_drop": {g: [...]}}``.

    Examples
    --------
    >>> from hetbench.train.result_stats import protocol_curves
    >>> groups = {"base": {"num_test": 100}, "v1": {"num_test": 100}, "v2": {"num_test": 300}}
    >>> c = protocol_curves({"base": [50.0, 90.0], "v1": [40.0, 80.0], "v2": [50.0, 60.0]}, groups, ["base"])
    >>> c["unseen_accuracy"], c["group_drop"]["v2"], c["mean_drop"]
    ([47.5, 65.0], [0.0, 30.0], [5.0, 20.0])
    """
    trained, unseen = _group_split(groups, train_groups)
    n = max((len(v) for v in group_curves.values()), default=0)
    counts = {g: int(groups[g]["num_test"]) for g in trained + unseen}

    def at(g: str, i: int) -> float | None:
        curve = group_curves.get(g) or []
        return _finite(curve[i]) if i < len(curve) else None

    out: dict[str, Any] = {"trained_on_accuracy": [], "unseen_accuracy": [], "mean_drop": [],
                           "group_drop": {g: [] for g in trained + unseen}}
    for i in range(n):
        base = pooled_accuracy([at(g, i) for g in trained], [counts[g] for g in trained])
        out["trained_on_accuracy"].append(base)
        out["unseen_accuracy"].append(pooled_accuracy([at(g, i) for g in unseen], [counts[g] for g in unseen]))
        drops = {}
        for g in trained + unseen:
            a = at(g, i)
            drops[g] = round(base - a, DIGITS) if base is not None and a is not None else None
            out["group_drop"][g].append(drops[g])
        unseen_drops = [drops[g] for g in unseen if drops[g] is not None]
        out["mean_drop"].append(round(math.fsum(unseen_drops) / len(unseen_drops), DIGITS) if unseen_drops else None)
    return out


def group_protocol(groups: dict[str, dict], train_groups: Any) -> tuple[dict[str, dict], dict[str, Any]]:
    """The ``groups`` entries with ``trained_on`` and ``drop``, and the ``final`` fields of a group protocol.

    Parameters
    ----------
    groups : dict[str, dict]
        ``{group: {"accuracy", "num_test"}}`` of the last evaluation.
    train_groups : sequence of str
        ``config.train_groups`` (the groups whose clients trained).

    Returns
    -------
    tuple[dict, dict]
        The groups, each with ``trained_on`` (bool) and ``drop`` (trained-on pooled accuracy minus the
        group's, in points; null without test rows or without trained-on test rows), and
        ``{"trained_on_accuracy", "unseen_accuracy", "mean_drop"}`` (see :func:`protocol_curves`).

    Examples
    --------
    >>> from hetbench.train.result_stats import group_protocol
    >>> groups = {"base": {"accuracy": 90.0, "num_test": 100}, "dark": {"accuracy": 70.5, "num_test": 50}}
    >>> out, final = group_protocol(groups, ["base"])
    >>> out["dark"], final
    ({'accuracy': 70.5, 'num_test': 50, 'trained_on': False, 'drop': 19.5}, {'mean_drop': 19.5, 'trained_on_accuracy': 90.0, 'unseen_accuracy': 70.5})
    """
    trained = {str(g) for g in train_groups}
    curves = protocol_curves({g: [v.get("accuracy")] for g, v in groups.items()}, groups, train_groups)
    out = {}
    for g, v in sorted(groups.items()):
        drop = curves["group_drop"].get(g)
        out[g] = {**v, "trained_on": g in trained, "drop": drop[0] if drop else None}
    final = {k: (curves[k][0] if curves[k] else None) for k in sorted(PROTOCOL_METRICS)}
    return out, final


def curve_statistics(curves: dict[str, Any], groups: dict[str, dict], train_groups: Any = None,
                     last_k: int = DEFAULT_LAST_K) -> dict[str, dict]:
    """Every metric's best evaluation and the mean of its last ``last_k`` evaluations.

    The metrics are :data:`EVAL_METRICS`, each group's accuracy and, with ``train_groups``, the
    :func:`protocol_curves` (trained-on and unseen accuracy, mean drop, each group's drop). Best =
    highest for accuracies, lowest for loss, variance and drops, at the first round that reached it.
    With fewer than ``last_k`` evaluations the mean is over all of them (``k`` says how many).

    Parameters
    ----------
    curves : dict
        The document's ``curves`` (``round``, a list per metric, ``group_accuracy``).
    groups : dict[str, dict]
        The document's ``groups`` (groups without test rows get null statistics).
    train_groups : sequence of str, optional
        ``config.train_groups``; None: no protocol metrics.
    last_k : int
        k of the mean of the last k evaluations.

    Returns
    -------
    dict
        ``{"best": {metric: {"value", "round"} or None, "group_accuracy": {g: ...}, ...},
        "last_k": {"k": k, "rounds": [...], metric: value or None, "group_accuracy": {g: ...}, ...}}``.

    Examples
    --------
    >>> from hetbench.train.result_stats import curve_statistics
    >>> curves = {"round": [2, 4, 6, 8], "accuracy": [30.0, 58.0, 40.0, 18.0], "loss": [2.0, 1.1, 1.3, 2.2],
    ...           "group_accuracy": {"a": [30.0, 58.0, 40.0, 18.0]}}
    >>> s = curve_statistics(curves, {"a": {"num_test": 10}}, last_k=3)
    >>> s["best"]["accuracy"], s["best"]["loss"], s["last_k"]["k"], s["last_k"]["rounds"], s["last_k"]["accuracy"]
    ({'value': 58.0, 'round': 4}, {'value': 1.1, 'round': 4}, 3, [4, 6, 8], 38.666667)
    """
    rounds = [int(r) for r in curves.get("round") or []]
    n = len(rounds)
    k = min(int(last_k), n)

    def usable(values: Any) -> list:
        return values if isinstance(values, list) and len(values) == n else [None] * n

    series: dict[str, list] = {m: usable(curves.get(m)) for m in EVAL_METRICS}
    group_curves = curves.get("group_accuracy") if isinstance(curves.get("group_accuracy"), dict) else {}
    has_rows = {g for g, v in groups.items() if int(v.get("num_test") or 0) > 0}
    per_group = {"group_accuracy": {g: usable(group_curves.get(g)) if g in has_rows else [None] * n
                                    for g in sorted(groups)}}
    if train_groups is not None:
        pc = protocol_curves({g: usable(group_curves.get(g)) for g in groups}, groups, train_groups)
        series.update({m: pc[m] for m in PROTOCOL_METRICS})
        per_group["group_drop"] = {g: pc["group_drop"].get(g, [None] * n) for g in sorted(groups)}
    best: dict[str, Any] = {m: best_of(rounds, v, m in LOWER_IS_BETTER) for m, v in series.items()}
    last: dict[str, Any] = {"k": k, "rounds": rounds[n - k:] if k else []}
    last.update({m: mean_last(v, k) for m, v in series.items()})
    for key, by_group in per_group.items():
        best[key] = {g: best_of(rounds, v, key in LOWER_IS_BETTER) for g, v in by_group.items()}
        last[key] = {g: mean_last(v, k) for g, v in by_group.items()}
    return {"best": best, "last_k": last}
