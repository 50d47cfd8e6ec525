"""Whether a training run had settled when it stopped: the trend of its last test accuracies.

The rule ``hetbench reproduce`` decides its claims by and ``hetbench leaderboard`` marks its rows with: a run
(or the seed-mean of a configuration's runs) has settled when the least-squares line through its last
``evaluations`` test accuracies (percent, against the round) changes by at most ``max_change`` points over the
rounds they span. Still rising (or falling) faster than that, its last-k accuracy is a point on the way, not
where training goes. A run that diverged (a final test loss that is not finite, or a last-k accuracy within
:data:`CHANCE_MARGIN` points of chance) is never settled.

Pure functions of results documents (``docs/output-contract.md``); no torch.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from hetbench.errors import HetbenchError

#: the leaderboard's rule when none is given: the line through the last 4 evaluations moves at most 3 points
#: (the rule most of ``hetbench reproduce``'s claims declare)
DEFAULT_SETTLE: dict[str, Any] = {"evaluations": 4, "max_change": 3.0}

#: accuracy points above chance (100 / classes) within which a run's last-k accuracy counts as at chance
CHANCE_MARGIN = 2.0


def settle_rule(evaluations: Any, max_change: Any, where: str = "the settling rule's ") -> dict[str, Any]:
    """A settling rule ``{"evaluations", "max_change"}``, checked: an integer of at least 3 evaluations (a line
    needs them to show a trend) and a finite, non-negative change in points. ``where`` starts each message.

    Examples
    --------
    >>> from hetbench.train.settling import settle_rule
    >>> settle_rule(4, 3)
    {'evaluations': 4, 'max_change': 3.0}
    >>> settle_rule(2, 3)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: the settling rule's evaluations must be an integer of at least 3 (got 2)
    """
    if isinstance(evaluations, bool) or not isinstance(evaluations, int) or evaluations < 3:
        raise HetbenchError(f"{where}evaluations must be an integer of at least 3 (got {evaluations!r})")
    if isinstance(max_change, bool) or not isinstance(max_change, (int, float)) or not math.isfinite(max_change) \
            or max_change < 0:
        raise HetbenchError(f"{where}max_change must be a non-negative number (got {max_change!r})")
    return {"evaluations": evaluations, "max_change": float(max_change)}


def diverged(doc: Mapping[str, Any]) -> str | None:
    """Why a results document's run diverged (None: it did not): a final test loss that is null (JSON's NaN
    or infinity) or not finite, or a last-k accuracy within :data:`CHANCE_MARGIN` points of chance.

    Examples
    --------
    >>> from hetbench.train.settling import diverged
    >>> diverged({"split": {"num_classes": 10}, "final": {"loss": 2.3, "last_k": {"accuracy": 11.0}}})
    'at chance (11.0% for 10 classes)'
    >>> diverged({"split": {"num_classes": 10}, "final": {"loss": float("nan"), "last_k": {"accuracy": 40.0}}})
    'a test loss of nan'
    >>> diverged({"split": {"num_classes": 10}, "final": {"loss": 0.3, "last_k": {"accuracy": 91.0}}}) is None
    True
    """
    final = doc.get("final")
    if not isinstance(final, Mapping):  # no final evaluation recorded: nothing to judge
        return None
    loss = final.get("loss", 0.0)  # absent: not recorded (null: the trainer's NaN or infinity)
    if loss is None or not math.isfinite(float(loss)):
        return f"a test loss of {loss}"
    classes = int((doc.get("split") or {}).get("num_classes") or 0)
    acc = (final.get("last_k") or {}).get("accuracy", final.get("accuracy"))
    if classes > 1 and acc is not None and float(acc) <= 100.0 / classes + CHANCE_MARGIN:
        return f"at chance ({float(acc):.1f}% for {classes} classes)"
    return None


def fitted_change(rounds: Sequence[float], accuracy: Sequence[float]) -> float:
    """The change of the least-squares line through ``(rounds, accuracy)`` from the first round to the
    last (its slope times the span), in the accuracy's unit; 0 for fewer than two points.

    Examples
    --------
    >>> from hetbench.train.settling import fitted_change
    >>> round(fitted_change([10, 12, 14, 16], [50.0, 52.0, 54.0, 56.0]), 6)
    6.0
    >>> round(fitted_change([10, 12, 14, 16], [60.0, 58.0, 59.0, 59.0]), 6)
    -0.6
    """
    x, y = np.asarray(rounds, dtype=float), np.asarray(accuracy, dtype=float)
    if x.size < 2 or np.ptp(x) == 0:
        return 0.0
    slope = float(np.polyfit(x, y, 1)[0])
    return slope * float(np.ptp(x))


def run_settling(doc: Mapping[str, Any], settle: Mapping[str, Any]) -> dict[str, Any]:
    """One training results document against a ``settle`` declaration: the rounds read, the fitted change
    over them and whether it is within ``max_change``. A run with fewer evaluations than asked has not
    shown that it settled.

    Examples
    --------
    >>> from hetbench.train.settling import run_settling
    >>> doc = {"curves": {"round": [2, 4, 6, 8, 10], "accuracy": [30.0, 50.0, 60.0, 61.0, 60.5]}}
    >>> run_settling(doc, {"evaluations": 3, "max_change": 2.0})
    {'rounds': [6, 8, 10], 'change': 0.5, 'settled': True}
    >>> run_settling(doc, {"evaluations": 4, "max_change": 2.0})["settled"]
    False
    """
    rounds, acc = doc["curves"]["round"], doc["curves"]["accuracy"]
    n = int(settle["evaluations"])
    pairs = [(r, a) for r, a in zip(rounds, acc) if a is not None and math.isfinite(a)][-n:]
    if len(pairs) < n:
        return {"rounds": [int(r) for r, _ in pairs], "change": None, "settled": False}
    change = fitted_change([r for r, _ in pairs], [a for _, a in pairs])
    return {"rounds": [int(r) for r, _ in pairs], "change": round(change, 4),
            "settled": bool(abs(change) <= float(settle["max_change"]) + 1e-9)}


def seed_mean_curve(docs: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """The mean test accuracy over ``docs`` at every round all of them evaluated (finite values only).

    Examples
    --------
    >>> from hetbench.train.settling import seed_mean_curve
    >>> seed_mean_curve([{"curves": {"round": [2, 4], "accuracy": [50.0, 60.0]}},
    ...                  {"curves": {"round": [2, 4], "accuracy": [40.0, 64.0]}}])
    {'round': [2, 4], 'accuracy': [45.0, 62.0]}
    """
    tables = [{int(r): float(a) for r, a in zip(d["curves"]["round"], d["curves"]["accuracy"])
               if a is not None and math.isfinite(a)} for d in docs]
    common = sorted(set.intersection(*(set(t) for t in tables))) if tables else []
    return {"round": common, "accuracy": [float(np.mean([t[r] for t in tables])) for r in common]}


def _accuracy_curve(doc: Mapping[str, Any]) -> dict[str, list]:
    """A document's (round, accuracy) pairs that are numbers; empty when it has no such curve."""
    curves = doc.get("curves") if isinstance(doc, Mapping) else None
    rounds, acc = (curves.get("round"), curves.get("accuracy")) if isinstance(curves, Mapping) else (None, None)
    if not isinstance(rounds, list) or not isinstance(acc, list):
        return {"round": [], "accuracy": []}
    pairs = [(r, a) for r, a in zip(rounds, acc) if isinstance(r, (int, float)) and isinstance(a, (int, float))
             and not isinstance(r, bool) and not isinstance(a, bool) and math.isfinite(r) and math.isfinite(a)]
    return {"round": [r for r, _ in pairs], "accuracy": [float(a) for _, a in pairs]}


def settling_of(docs: Sequence[Mapping[str, Any]], settle: Mapping[str, Any] = DEFAULT_SETTLE) -> dict[str, Any]:
    """Whether the runs of one configuration (its seeds) had settled: :func:`run_settling` of their seed-mean
    curve (:func:`seed_mean_curve`), never settled when one of them diverged (:func:`diverged`).

    Parameters
    ----------
    docs : Sequence[Mapping]
        The results documents of the configuration's seeds.
    settle : Mapping
        ``{"evaluations": E, "max_change": points}``.

    Returns
    -------
    dict
        ``{"rounds", "change", "settled"}`` and, when a run diverged, ``"diverged"``: why (the first one's).

    Examples
    --------
    >>> from hetbench.train.settling import settling_of
    >>> docs = [{"curves": {"round": [2, 4, 6, 8], "accuracy": [50.0 + s, 60.0, 61.0, 61.5]}} for s in (0, 2)]
    >>> settling_of(docs, {"evaluations": 3, "max_change": 3.0})
    {'rounds': [4, 6, 8], 'change': 1.5, 'settled': True}
    >>> settling_of(docs, {"evaluations": 4, "max_change": 3.0})["settled"]
    False
    """
    judged = run_settling({"curves": seed_mean_curve([{"curves": _accuracy_curve(d)} for d in docs])}, settle)
    why = next((w for w in map(diverged, docs) if w is not None), None)
    if why is not None:
        judged = {**judged, "settled": False, "diverged": why}
    return judged


__all__ = ["CHANCE_MARGIN", "DEFAULT_SETTLE", "diverged", "settle_rule", "fitted_change", "run_settling", "seed_mean_curve",
           "settling_of"]
