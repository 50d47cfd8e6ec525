"""The criteria on a trend over a grid (:mod:`hetbench.reproduce.criteria` holds the rest and the registry): a
measurement that falls or rises from point to point (:func:`monotone_decreasing`, :func:`monotone_increasing`)
and a power law over the grid (:func:`ratio_scaling`), each judged on its intervals at the criterion's level
(:func:`criterion_level`)."""

from __future__ import annotations

from typing import Any, Mapping

from hetbench.errors import HetbenchError
from hetbench.reproduce.measurement import CheckResult, Measurement
from hetbench.reproduce.statistics import (
    DEFAULT_LEVEL, Interval, json_number as _num, loglog_slope, spearman, t_interval, t_quantile,
)
from hetbench.reproduce.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, side_of


def criterion_level(criterion: Mapping[str, Any]) -> float:
    """The confidence level of a declared criterion's intervals: its ``level``, else 95%.

    Examples
    --------
    >>> from hetbench.reproduce.trend_criteria import criterion_level
    >>> criterion_level({"name": "greater_than", "threshold": 0}), criterion_level({"level": 0.99})
    (0.95, 0.99)
    """
    return float(criterion.get("level", DEFAULT_LEVEL))


def _monotone(m: Measurement, p: Mapping[str, Any], sign: int) -> CheckResult:
    """Shared by monotone_decreasing (sign -1) and monotone_increasing (sign +1)."""
    values = m.paired()  # (points, seeds)
    if values.shape[0] < 2:
        raise HetbenchError("a monotone criterion needs at least two grid points")
    tol, min_effect, level = float(p["tolerance"]), float(p["min_effect"]), criterion_level(p)
    labels = m.point_labels()
    steps, wrong, undecided = [], [], []
    for i in range(values.shape[0] - 1):
        ci = t_interval(values[i + 1] - values[i], level)
        # a step is right when its whole interval goes the wrong way by at most the tolerance
        verdict = side_of(ci, -sign * tol, sign)
        steps.append({"from": labels[i], "to": labels[i + 1], "change": ci.rounded(), "verdict": verdict})
        (wrong if verdict == NOT_REPRODUCED else undecided if verdict == INCONCLUSIVE else []).append(
            f"{labels[i]} -> {labels[i + 1]}")
    effect = t_interval(sign * (values[-1] - values[0]), level)
    effect_verdict = side_of(effect, min_effect, +1)
    trend = t_interval([sign * spearman(col) for col in values.T], level)
    trend_verdict = side_of(trend, 0.0, +1)
    numbers = {"level": level, "tolerance": _num(tol), "steps": steps, "effect": effect.rounded(),
               "min_effect": _num(min_effect), "effect_verdict": effect_verdict, "trend": trend.rounded(),
               "trend_statistic": "Spearman rank correlation with the grid order, per seed, signed so that "
                                  "the claimed direction is positive", "trend_verdict": trend_verdict}
    word = "decrease" if sign < 0 else "increase"
    span = f"{labels[0]} -> {labels[-1]}"
    pct = f"{level * 100:g}%"
    said = (f"the {word} over {span} is {effect.text()} ({pct} interval; minimum effect {min_effect:g}), the trend "
            f"(rank correlation) {trend.text(3)}")
    # why a check is not reproduced (any part is) or inconclusive (no part is, some part straddles)
    parts = {
        NOT_REPRODUCED: ((effect_verdict, f"the {word} is below the minimum effect"),
                         (trend_verdict, "the trend goes the other way"),
                         (NOT_REPRODUCED if wrong else None, f"{len(wrong)} of {len(steps)} steps go the wrong way by "
                                                             f"more than {tol:g} ({', '.join(wrong)})")),
        INCONCLUSIVE: ((effect_verdict, f"the {word}'s interval straddles the minimum effect"),
                       (trend_verdict, "the trend's interval straddles 0"),
                       (INCONCLUSIVE if undecided else None, f"{len(undecided)} of {len(steps)} steps' intervals "
                                                             f"straddle the tolerance {tol:g} ({', '.join(undecided)})")),
    }
    for verdict in (NOT_REPRODUCED, INCONCLUSIVE):
        why = [text for got, text in parts[verdict] if got == verdict]
        if why:
            return CheckResult(verdict, f"{said}: {'; '.join(why)}", numbers)
    return CheckResult(REPRODUCED, f"{said}; every step's interval is within the tolerance {tol:g} of the wrong way",
                       numbers)


def monotone_decreasing(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """The metric falls along the grid, step by step and over the whole curve.

    Parameters (declared)
    ---------------------
    tolerance : float
        How far one step may rise (in the metric's unit): a step is right when the whole interval of its
        paired change is below ``+tolerance``, wrong when the whole interval is above it.
    min_effect : float
        The smallest fall from the first to the last point that counts (paired, with its interval).
    level : float, default 0.95
        The confidence level of every interval.

    Verdict: ``reproduced`` when every step is right, the fall's interval is above ``min_effect`` and the
    trend's interval (each seed's rank correlation with the grid order) is above 0; ``not reproduced``
    when a step is wrong, the fall's interval is below ``min_effect`` or the trend's is below 0;
    ``inconclusive`` otherwise.

    Examples
    --------
    >>> from hetbench.reproduce.measurement import Measurement
    >>> from hetbench.reproduce.trend_criteria import monotone_decreasing
    >>> p = {"tolerance": 1.0, "min_effect": 10}
    >>> monotone_decreasing(Measurement([[95.0], [90.0], [70.0]]), p).verdict
    'reproduced'
    >>> monotone_decreasing(Measurement([[95.0], [99.0], [70.0]]), p).verdict
    'not reproduced'
    >>> monotone_decreasing(Measurement([[95, 94, 96], [90, 91, 89], [70, 90, 50]]), p).verdict
    'inconclusive'
    """
    return _monotone(m, p, -1)


def monotone_increasing(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """The metric rises along the grid (:func:`monotone_decreasing` mirrored).

    Examples
    --------
    >>> from hetbench.reproduce.measurement import Measurement
    >>> from hetbench.reproduce.trend_criteria import monotone_increasing
    >>> monotone_increasing(Measurement([[1.0], [2.0]]), {"tolerance": 0, "min_effect": 0.5}).verdict
    'reproduced'
    """
    return _monotone(m, p, +1)


def ratio_scaling(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """Power-law scaling: the log-log slope of the means over ``x``, with its t interval (``n - 2`` degrees
    of freedom), against ``[slope_min, slope_max]``: the whole interval inside, ``reproduced``; the whole
    interval outside, ``not reproduced``; else ``inconclusive``.

    Examples
    --------
    >>> from hetbench.reproduce.measurement import Measurement
    >>> from hetbench.reproduce.trend_criteria import ratio_scaling
    >>> m = Measurement([[1000], [310], [105], [32], [9.8]], x=[1, 3, 10, 30, 100])
    >>> ratio_scaling(m, {"slope_min": -1.1, "slope_max": -0.9}).verdict
    'reproduced'
    >>> ratio_scaling(m, {"slope_min": -0.6, "slope_max": -0.4}).verdict
    'not reproduced'
    >>> ratio_scaling(Measurement([[1000], [105], [9]], x=[1, 10, 100]), {"slope_min": -1.1, "slope_max": -0.9}).verdict
    'inconclusive'
    """
    if m.x is None or len(m.x) < 2:
        raise HetbenchError("ratio_scaling needs a grid x of at least two points")
    means = m.means()
    if min(means) <= 0 or min(m.x) <= 0:
        return CheckResult(NOT_REPRODUCED, "a value or grid point is not positive: no power law",
                           {"values": [_num(v) for v in means]})
    lo, hi, level = float(p["slope_min"]), float(p["slope_max"]), criterion_level(p)
    slope, se, r2 = loglog_slope(m.x, means)
    n = len(means)
    half = t_quantile(1 - (1 - level) / 2, n - 2) * se if n > 2 else 0.0
    ci = Interval(slope, slope - half, slope + half, n, level)
    numbers = {"slope": ci.rounded(), "slope_stderr": _num(se), "r2": _num(r2), "slope_min": _num(lo),
               "slope_max": _num(hi)}
    said = f"log-log slope {ci.text(3)} ({level * 100:g}% interval, R² {r2:.3f})"
    if lo <= ci.low and ci.high <= hi:
        return CheckResult(REPRODUCED, f"{said} lies within [{lo:g}, {hi:g}]", numbers)
    if ci.high < lo or ci.low > hi:
        return CheckResult(NOT_REPRODUCED, f"{said} lies outside [{lo:g}, {hi:g}]", numbers)
    return CheckResult(INCONCLUSIVE, f"{said} straddles an end of [{lo:g}, {hi:g}]", numbers)
