"""Whether a claim's training had settled when it stopped: the trend of its last evaluations.

A claim that trains declares how settled its runs must be::

    settle: {evaluations: 4, max_change: 3.0}

The runs of a claim come in conditions: runs that differ only by their seed (``<split name>-<fingerprint>/<algorithm and
options>-s<seed>.json``). A condition has settled when the least-squares line through the seed-mean of its
last ``evaluations`` test accuracies (percent, against the round) changes by at most ``max_change`` points
over the rounds they span: still rising (or falling) faster than that, its last-k accuracy is a point on
the way, not where training goes, and a verdict resting on it is ``inconclusive``
(:func:`hetbench.reproduce.criteria.evaluate`).

A run that diverged is never settled: its final test loss is not finite, or its mean of the last k
accuracies is within :data:`CHANCE_MARGIN` points of chance (100 / classes), where a flat curve only says
that nothing was learnt (:func:`diverged`). Its condition is reported as diverged and counts as unsettled.
Only the runs a claim's numbers rest on are judged: a runner keeps its tuning runs elsewhere.

Why the seed-mean, not each run: a single run's accuracy swings around its trend from one evaluation to
the next (label-skewed clients pull the model their way in turn: a standard deviation of 3-4 points at
Dirichlet alpha 0.05 with 5 of 20 clients a round), and a line fitted to E evaluations carries about
sqrt(12 / E) times that swing as noise, so a flat run fails a bound of a few points about as often as it
passes. The mean over the seeds is the expected learning curve, whose trend is what biases a last-k
accuracy; averaging n seeds divides the swing by sqrt(n), and the spread between seeds is what the
claim's t intervals already carry. Every run is still listed with its own fitted change
(:func:`settling_report`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hetbench.errors import HetbenchError


#: accuracy points above chance (100 / classes) within which a run's last-k accuracy counts as at chance
CHANCE_MARGIN = 2.0


def diverged(doc: Mapping[str, Any]) -> str | None:
    """Why a results document's run diverged (None: it did not): a final test loss that is not finite, or
    a last-k accuracy within :data:`CHANCE_MARGIN` points of chance.

    Examples
    --------
    >>> from hetbench.reproduce.settling import diverged
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
    loss = final.get("loss")
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
    >>> from hetbench.reproduce.settling import fitted_change
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


def check_settle(spec: Any, where: str) -> dict[str, Any]:
    """Validate a claim's ``settle`` declaration: ``evaluations`` (an integer of at least 3) and
    ``max_change`` (a non-negative number of accuracy points).

    Examples
    --------
    >>> from hetbench.reproduce.settling import check_settle
    >>> check_settle({"evaluations": 4, "max_change": 3}, "x.yaml")
    {'evaluations': 4, 'max_change': 3.0}
    >>> check_settle({"evaluations": 2, "max_change": 3}, "x.yaml")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: settle.evaluations must be an integer of at least 3 (got 2)
    """
    if not isinstance(spec, Mapping) or sorted(spec) != ["evaluations", "max_change"]:
        raise HetbenchError(f"{where}: 'settle' must be a mapping of evaluations and max_change")
    n, change = spec["evaluations"], spec["max_change"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 3:
        raise HetbenchError(f"{where}: settle.evaluations must be an integer of at least 3 (got {n!r})")
    if isinstance(change, bool) or not isinstance(change, (int, float)) or not math.isfinite(change) or change < 0:
        raise HetbenchError(f"{where}: settle.max_change must be a non-negative number (got {change!r})")
    return {"evaluations": n, "max_change": float(change)}


def run_settling(doc: Mapping[str, Any], settle: Mapping[str, Any]) -> dict[str, Any]:
    """One training results document against a ``settle`` declaration: the rounds read, the fitted change
    over them and whether it is within ``max_change``. A run with fewer evaluations than asked has not
    shown that it settled.

    Examples
    --------
    >>> from hetbench.reproduce.settling import run_settling
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


def condition_of(name: str) -> str:
    """The condition of a results file: its path without the seed (runs that differ only by seed).

    Examples
    --------
    >>> from hetbench.reproduce.settling import condition_of
    >>> condition_of("mnist5k-a0.05-n20-s0/fedavg-server_lr0.3162-s3.json")
    'mnist5k-a0.05-n20-s0/fedavg-server_lr0.3162'
    """
    return re.sub(r"-s\d+\.json$", "", name)


def seed_mean_curve(docs: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """The mean test accuracy over ``docs`` at every round all of them evaluated (finite values only).

    Examples
    --------
    >>> from hetbench.reproduce.settling import seed_mean_curve
    >>> seed_mean_curve([{"curves": {"round": [2, 4], "accuracy": [50.0, 60.0]}},
    ...                  {"curves": {"round": [2, 4], "accuracy": [40.0, 64.0]}}])
    {'round': [2, 4], 'accuracy': [45.0, 62.0]}
    """
    tables = [{int(r): float(a) for r, a in zip(d["curves"]["round"], d["curves"]["accuracy"])
               if a is not None and math.isfinite(a)} for d in docs]
    common = sorted(set.intersection(*(set(t) for t in tables))) if tables else []
    return {"round": common, "accuracy": [float(np.mean([t[r] for t in tables])) for r in common]}


def settling_report(runs: Path, settle: Mapping[str, Any]) -> dict[str, Any]:
    """Every training run a claim wrote under ``runs`` (its results JSON files) against ``settle``, by
    condition (:func:`condition_of`): a condition is judged on its seed-mean curve (:func:`seed_mean_curve`).

    Returns
    -------
    dict
        ``{"evaluations", "max_change", "conditions": {condition: {"runs": n, **run_settling(seed mean)}},
        "runs": {relative path: {"condition", "rounds", "change"}}, "unsettled": [paths of the runs of
        unsettled conditions], "diverged": {path: why}}``; empty ``runs`` when the claim trained nothing.
    """
    report: dict[str, Any] = {**settle, "conditions": {}, "runs": {}, "unsettled": [], "diverged": {}}
    if not runs.is_dir():
        return report
    groups: dict[str, list[tuple[str, dict]]] = {}
    for path in sorted(runs.rglob("*.json")):
        doc = json.loads(path.read_text())
        if "curves" not in doc:
            continue
        name = path.relative_to(runs).as_posix()
        groups.setdefault(condition_of(name), []).append((name, doc))
    for condition, members in sorted(groups.items()):
        judged = run_settling({"curves": seed_mean_curve([d for _, d in members])}, settle)
        why = {name: diverged(doc) for name, doc in members}
        why = {name: w for name, w in why.items() if w is not None}
        if why:  # a diverged run is never settled, whatever its curve does
            judged = {**judged, "settled": False, "diverged": len(why)}
            report["diverged"].update(why)
        report["conditions"][condition] = {"runs": len(members), **judged}
        for name, doc in members:
            own = run_settling(doc, settle)
            report["runs"][name] = {"condition": condition, "rounds": own["rounds"], "change": own["change"]}
            if not judged["settled"]:
                report["unsettled"].append(name)
    report["unsettled"].sort()
    return report
