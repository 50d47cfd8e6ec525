"""The criterion language of claim definitions: a measurement in, a verdict and its numbers out.

A claim's yaml (``manifests/claims/<id>.yaml``) declares, before any run, one criterion per check::

    criterion: {name: monotone_decreasing, tolerance: 1.0, min_effect: 10}

Every criterion is a pure function ``(Measurement, params) -> CheckResult``. The verdict is one of
:data:`CHECK_VERDICTS` and follows from the measured numbers and the declared parameters only; the result
carries every number the decision used, so a reader can redo it by hand.

Statistics
----------
- **Paired.** A measurement holds one value per seed at each point, in the same seed order at every point
  (the runners train the methods or grid points they compare on the same split, seed and client
  sampling). A difference between two points is taken seed by seed.
- **Intervals.** A mean's uncertainty is its two-sided Student-t interval at the declared ``level``
  (default 95%): ``mean ± t(1 - (1 - level) / 2, n - 1) * sd / sqrt(n)`` (:func:`t_interval`). One value
  (a deterministic count) is its own interval.
- **Verdicts.** A check compares an interval with a declared margin: ``reproduced`` when the whole
  interval is on the claimed side of it, ``not reproduced`` when the whole interval is on the other side,
  ``inconclusive`` when it straddles the margin (more seeds or longer runs could decide it). A claim made
  of several checks is ``partially reproduced`` only when its checks disagree (:func:`combine`).

Criteria (:data:`CRITERIA`):

- ``greater_than`` / ``less_than``: one value; the margin is ``threshold ± min_effect``.
- ``every_greater_than``: ``greater_than`` at every point (every algorithm above a floor).
- ``monotone_decreasing`` / ``monotone_increasing``: a metric over an ordered grid, tested three ways:
  every step's paired change (a step may go the wrong way by at most ``tolerance``), the first-to-last
  change (at least ``min_effect``), and the trend over the whole curve (each seed's Spearman rank
  correlation of the metric with the grid order, averaged over seeds with its interval, beyond 0).
- ``within_relative``: values against published ones, ``|measured / published - 1| <= tolerance`` each.
- ``ratio_scaling``: the least-squares slope of log(value) on log(x), with its t interval, within
  ``[slope_min, slope_max]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from hetbench.errors import HetbenchError
from hetbench.registry import Registry
from hetbench.reproduce.measurement import CheckResult, Measurement
from hetbench.reproduce.statistics import (  # noqa: F401 (loglog_slope and spearman: part of this module's API)
    json_number as _num, loglog_slope, spearman, t_interval,
)
from hetbench.reproduce.trend_criteria import criterion_level, monotone_decreasing, monotone_increasing, ratio_scaling
from hetbench.reproduce.verdicts import (  # noqa: F401 (every verdict name: part of this module's API)
    CHECK_VERDICTS, INCONCLUSIVE, NO_VERDICT, NOT_REPRODUCED, NOT_RUN, PARTIAL, REPRODUCED, UNSETTLED_MARK, VERDICTS,
    combine, side_of,
)


def _beyond(m: Measurement, p: Mapping[str, Any], sign: int) -> CheckResult:
    if len(m.samples) != 1:
        raise HetbenchError("greater_than / less_than take a single value")
    threshold, min_effect, level = float(p["threshold"]), float(p.get("min_effect", 0.0)), criterion_level(p)
    ci = t_interval(m.samples[0], level)
    margin = threshold + sign * min_effect
    verdict = side_of(ci, margin, sign)
    numbers = {"value": ci.rounded(), "threshold": _num(threshold), "min_effect": _num(min_effect),
               "margin": _num(margin), "stderr": _num(m.stderrs()[0])}
    side = "above" if sign > 0 else "below"
    other = "below" if sign > 0 else "above"
    where = (f"the margin {margin:g} (threshold {threshold:g} {'+' if sign > 0 else '-'} minimum effect "
             f"{min_effect:g})" if min_effect else f"the threshold {threshold:g}")
    said = f"{ci.text()} ({level * 100:g}% interval, n = {ci.n})"
    if verdict == REPRODUCED:
        return CheckResult(REPRODUCED, f"{said} lies entirely {side} {where}", numbers)
    if verdict == NOT_REPRODUCED:
        return CheckResult(NOT_REPRODUCED, f"{said} lies entirely {other} {where}", numbers)
    return CheckResult(INCONCLUSIVE, f"{said} straddles {where}", numbers)


def greater_than(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """One value above ``threshold + min_effect`` (``min_effect`` default 0): its whole interval above it,
    ``reproduced``; its whole interval at or below it, ``not reproduced``; else ``inconclusive``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, greater_than
    >>> p = {"threshold": 0.0, "min_effect": 1.0}
    >>> [greater_than(Measurement([v]), p).verdict for v in ([3.0, 3.2, 3.1], [0.5, 1.7, 1.0], [0.5, 0.7, 0.6])]
    ['reproduced', 'inconclusive', 'not reproduced']
    """
    return _beyond(m, p, +1)


def less_than(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """One value below ``threshold - min_effect`` (:func:`greater_than` mirrored).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, less_than
    >>> less_than(Measurement([[0.4, 0.42, 0.41]]), {"threshold": 1.0, "min_effect": 0.2}).verdict
    'reproduced'
    >>> less_than(Measurement([[0.95, 0.97]]), {"threshold": 1.0, "min_effect": 0.2}).verdict
    'not reproduced'
    """
    return _beyond(m, p, -1)


def every_greater_than(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """Every point above ``threshold + min_effect``: :func:`greater_than` at each point of the measurement (an
    algorithm, a condition). ``reproduced`` when every point's whole interval is above the margin; ``not
    reproduced`` when some point's whole interval is at or below it; else ``inconclusive``. The numbers list
    each point's interval and verdict.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, every_greater_than
    >>> p = {"threshold": 10.0, "min_effect": 20.0}
    >>> every_greater_than(Measurement([[60, 62, 61], [45, 47, 46]], labels=["a", "b"]), p).verdict
    'reproduced'
    >>> r = every_greater_than(Measurement([[60, 62, 61], [12, 14, 13]], labels=["a", "b"]), p)
    >>> r.verdict, r.reason[-36:]
    ('not reproduced', 'lies entirely at or below it: b 13.0')
    """
    points = []
    for label, values in zip(m.point_labels(), m.samples):
        r = _beyond(Measurement([values]), p, +1)
        points.append({"point": label, "value": r.numbers["value"], "verdict": r.verdict})
    threshold, min_effect = float(p["threshold"]), float(p.get("min_effect", 0.0))
    margin = threshold + min_effect
    numbers = {"threshold": _num(threshold), "min_effect": _num(min_effect), "margin": _num(margin),
               "level": criterion_level(p), "points": points}
    below = [q for q in points if q["verdict"] == NOT_REPRODUCED]
    open_ = [q for q in points if q["verdict"] == INCONCLUSIVE]
    lowest = min(points, key=lambda q: q["value"]["mean"]) if points else None
    said = f"{len(points)} points against the margin {margin:g}"
    if below:
        names = ", ".join(f"{q['point']} {q['value']['mean']:.1f}" for q in below)
        return CheckResult(NOT_REPRODUCED, f"{said}: {len(below)} interval(s) lies entirely at or below it: {names}",
                           numbers)
    if open_:
        names = ", ".join(f"{q['point']} {q['value']['mean']:.1f}" for q in open_)
        return CheckResult(INCONCLUSIVE, f"{said}: {len(open_)} interval(s) straddle it: {names}", numbers)
    return CheckResult(REPRODUCED, f"{said}: every interval lies above it (lowest {lowest['point']} "
                                   f"{lowest['value']['mean']:.1f})", numbers)


def within_relative(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """Every mean within ``tolerance`` (a fraction: 0.02 is 2%; 0 is exact) of its published value:
    ``reproduced``; any outside: ``not reproduced`` (the numbers list each point). Meant for deterministic
    counts (parameters, FLOPs, data set sizes), which have no spread.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, within_relative
    >>> m = Measurement([[3.93e6], [0.99e6]], published=[3.92e6, 0.98e6])
    >>> within_relative(m, {"tolerance": 0.02}).verdict, within_relative(m, {"tolerance": 0.005}).verdict
    ('reproduced', 'not reproduced')
    """
    if m.published is None or len(m.published) != len(m.samples):
        raise HetbenchError("within_relative needs one published value per point")
    tol = float(p["tolerance"])
    rows, inside = [], 0
    for label, mean, pub in zip(m.point_labels(), m.means(), m.published):
        rel = (mean / pub - 1.0) if pub else (0.0 if mean == 0 else math.inf)
        ok = abs(rel) <= tol + 1e-12
        inside += ok
        rows.append({"point": label, "measured": _num(mean), "published": _num(pub), "relative_error": _num(rel),
                     "ok": bool(ok)})
    worst = max(abs(r["relative_error"]) for r in rows)
    numbers = {"points": rows, "tolerance": _num(tol), "within": inside, "of": len(rows), "worst_relative_error": _num(worst)}
    tol_text = "exactly" if tol == 0 else f"within {tol:.3g} ({tol * 100:.3g}%)"
    if inside == len(rows):
        return CheckResult(REPRODUCED, f"all {len(rows)} values {tol_text} of the published ones "
                                       f"(worst {worst * 100:.3g}%)", numbers)
    outside = [r["point"] for r in rows if not r["ok"]]
    return CheckResult(NOT_REPRODUCED, f"{len(outside)} of {len(rows)} values not {tol_text} of the published ones "
                                       f"({', '.join(outside)}; worst {worst * 100:.3g}%)", numbers)


@dataclass(frozen=True)
class Criterion:
    """A criterion function and the parameters its declaration must and may give."""

    fn: Callable[[Measurement, Mapping[str, Any]], CheckResult]
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


CRITERIA: Registry[Criterion] = Registry(
    "criterion",
    {
        "monotone_decreasing": Criterion(monotone_decreasing, ("tolerance", "min_effect"), ("level",)),
        "monotone_increasing": Criterion(monotone_increasing, ("tolerance", "min_effect"), ("level",)),
        "greater_than": Criterion(greater_than, ("threshold",), ("min_effect", "level")),
        "every_greater_than": Criterion(every_greater_than, ("threshold",), ("min_effect", "level")),
        "less_than": Criterion(less_than, ("threshold",), ("min_effect", "level")),
        "within_relative": Criterion(within_relative, ("tolerance",)),
        "ratio_scaling": Criterion(ratio_scaling, ("slope_min", "slope_max"), ("level",)),
    },
)
"""The criteria a claim may declare, by name."""

#: parameters that must not be negative
_NON_NEGATIVE = ("tolerance", "min_effect")


def check_criterion(spec: Any, where: str) -> dict[str, Any]:
    """Validate a declared criterion (``{name: ..., <params>}``); returns it as a plain dict.

    Raises
    ------
    HetbenchError
        Naming ``where``, for a criterion that is not a mapping, an unknown name (listing the valid ones),
        a missing or unknown parameter, or a value that is not a finite number in range.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import check_criterion
    >>> check_criterion({"name": "ratio_scaling", "slope_min": -1.2, "slope_max": -0.8}, "x.yaml")["name"]
    'ratio_scaling'
    >>> check_criterion({"name": "ratio_scaling", "slope_min": -1.2}, "x.yaml")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: criterion 'ratio_scaling' needs slope_max
    """
    if not isinstance(spec, Mapping) or "name" not in spec:
        raise HetbenchError(f"{where}: a criterion is a mapping with a 'name' (one of {', '.join(CRITERIA)})")
    name = spec["name"]
    if name not in CRITERIA:
        raise HetbenchError(f"{where}: unknown criterion '{name}'; choose one of: {', '.join(CRITERIA)}")
    c = CRITERIA[name]
    params = {k: v for k, v in spec.items() if k != "name"}
    for key in c.required:
        if key not in params:
            raise HetbenchError(f"{where}: criterion '{name}' needs {key}")
    for key, value in params.items():
        if key not in c.required + c.optional:
            raise HetbenchError(f"{where}: criterion '{name}' has no parameter '{key}' "
                                f"(it takes {', '.join(c.required + c.optional)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise HetbenchError(f"{where}: criterion '{name}': {key} must be a finite number (got {value!r})")
        if key in _NON_NEGATIVE and value < 0:
            raise HetbenchError(f"{where}: criterion '{name}': {key} must not be negative (got {value!r})")
        if key == "level" and not 0.5 <= value < 1:
            raise HetbenchError(f"{where}: criterion '{name}': level must be in [0.5, 1) (got {value!r})")
    if name == "ratio_scaling" and params["slope_min"] > params["slope_max"]:
        raise HetbenchError(f"{where}: criterion 'ratio_scaling': slope_min is above slope_max")
    return {"name": name, **params}


def evaluate(measurement: Measurement, criterion: Mapping[str, Any]) -> CheckResult:
    """Apply a declared (validated) criterion to a measurement. A measurement with ``not_run`` gets
    ``not run`` with its reason; one resting on runs that had not settled gets ``inconclusive`` (the
    criterion's numbers are kept, with what it would have said).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, evaluate
    >>> evaluate(Measurement([], not_run="no iNaturalist files"), {"name": "within_relative", "tolerance": 0}).verdict
    'not run'
    >>> r = evaluate(Measurement([[5.0, 6.0, 5.5]], unsettled=["fedavg-s0"]), {"name": "greater_than", "threshold": 0})
    >>> r.verdict, r.numbers["unsettled_verdict"]
    ('inconclusive', 'reproduced')
    """
    if measurement.not_run:
        return CheckResult(NOT_RUN, measurement.not_run)
    params = {k: v for k, v in criterion.items() if k != "name"}
    result = CRITERIA[criterion["name"]].fn(measurement, params)
    if measurement.unsettled:
        runs = measurement.unsettled
        listed = ", ".join(runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
        numbers = {**result.numbers, "unsettled": list(runs), "unsettled_verdict": result.verdict}
        return CheckResult(INCONCLUSIVE, f"{len(runs)} training run(s) had not settled ({listed}){UNSETTLED_MARK}"
                                         f"{result.reason}", numbers)
    return result


