"""Whether a training run had settled when it stopped: the trend of its last evaluations.

A claim that trains declares, before anything runs, how settled its runs must be::

    settle: {evaluations: 4, max_change: 3.0}

A run has settled when the least-squares line through its last ``evaluations`` test accuracies (percent,
against the round) changes by at most ``max_change`` points over the rounds they span: still rising (or
falling) faster than that, its last-k accuracy is a point on the way, not where training goes, and a
verdict resting on it is ``inconclusive`` (:func:`hetbench.reproduce.criteria.evaluate`). Every run of a
claim is checked (:func:`settling_report`) and the record lists each one's fitted change.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hetbench.errors import HetbenchError


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


def settling_report(runs: Path, settle: Mapping[str, Any]) -> dict[str, Any]:
    """Every training run a claim wrote under ``runs`` (its results JSON files) against ``settle``.

    Returns
    -------
    dict
        ``{"evaluations", "max_change", "runs": {relative path: run_settling(...)}, "unsettled": [paths]}``;
        empty ``runs`` when the claim trained nothing.
    """
    report: dict[str, Any] = {**settle, "runs": {}, "unsettled": []}
    if not runs.is_dir():
        return report
    for path in sorted(runs.rglob("*.json")):
        doc = json.loads(path.read_text())
        if "curves" not in doc:
            continue
        name = path.relative_to(runs).as_posix()
        report["runs"][name] = run_settling(doc, settle)
        if not report["runs"][name]["settled"]:
            report["unsettled"].append(name)
    return report
