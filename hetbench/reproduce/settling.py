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
import re
from pathlib import Path
from typing import Any, Mapping

from hetbench.errors import HetbenchError
from hetbench.train.settling import (  # the rule itself: shared with the leaderboard
    CHANCE_MARGIN,
    diverged,
    fitted_change,
    run_settling,
    seed_mean_curve,
    settle_rule,
)


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
    return settle_rule(spec["evaluations"], spec["max_change"], f"{where}: settle.")


def condition_of(name: str) -> str:
    """The condition of a results file: its path without the seed (runs that differ only by seed).

    Examples
    --------
    >>> from hetbench.reproduce.settling import condition_of
    >>> condition_of("mnist5k-a0.05-n20-s0/fedavg-server_lr0.3162-s3.json")
    'mnist5k-a0.05-n20-s0/fedavg-server_lr0.3162'
    """
    return re.sub(r"-s\d+\.json$", "", name)


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


__all__ = ["CHANCE_MARGIN", "check_settle", "condition_of", "diverged", "fitted_change", "run_settling",
           "seed_mean_curve", "settling_report"]
