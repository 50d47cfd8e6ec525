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
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.registry import Registry

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
PARTIAL = "partially reproduced"
NOT_RUN = "not run"
CHECK_VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
"""Every verdict one check can get."""
VERDICTS = (REPRODUCED, PARTIAL, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
"""Every verdict a claim can get (``partially reproduced``: its checks disagree)."""

#: what joins an unsettled check's reason to what its numbers alone say (hetbench.reproduce.docs splits on it)
UNSETTLED_MARK = "; settled, the numbers would say: "

#: the confidence level of every interval unless a criterion declares ``level``
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A mean and its two-sided t interval (``low`` and ``high`` equal the mean for one value).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import t_interval
    >>> t_interval([1.0, 2.0, 3.0, 4.0, 5.0]).rounded()
    {'mean': 3, 'low': 1.03676, 'high': 4.96324, 'n': 5, 'level': 0.95}
    """

    mean: float
    low: float
    high: float
    n: int
    level: float

    def rounded(self) -> dict[str, Any]:
        return {"mean": _num(self.mean), "low": _num(self.low), "high": _num(self.high), "n": self.n,
                "level": self.level}

    def text(self, digits: int = 4) -> str:
        if self.n < 2 or self.low == self.high:
            return f"{self.mean:.{digits}g}"
        return f"{self.mean:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"


def t_quantile(p: float, df: int) -> float:
    """The Student-t quantile ``t(p, df)`` (scipy's ``t.ppf``).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import t_quantile
    >>> round(t_quantile(0.975, 4), 4), round(t_quantile(0.975, 1000), 3)
    (2.7764, 1.962)
    """
    from scipy.stats import t

    return float(t.ppf(p, df))


def t_interval(values: Sequence[float], level: float = DEFAULT_LEVEL) -> Interval:
    """The mean of ``values`` and its two-sided Student-t interval at ``level``.

    Parameters
    ----------
    values : sequence of float
        Independent values (one per seed, or per seed's paired difference); one value is its own interval.
    level : float
        The confidence level, in (0, 1).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import t_interval
    >>> t_interval([2.0, 2.0, 2.0]).text(), t_interval([7.5]).text()
    ('2', '7.5')
    >>> t_interval([0.0, 1.0]).text(3)
    '0.5 [-5.85, 6.85]'
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise HetbenchError("an interval needs at least one value")
    mean = float(v.mean())
    if v.size == 1:
        return Interval(mean, mean, mean, 1, level)
    half = t_quantile(1 - (1 - level) / 2, v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)
    return Interval(mean, mean - half, mean + half, int(v.size), level)


def side_of(interval: Interval, margin: float, sign: int) -> str:
    """Where an interval lies against a margin, for a claim that the value is above it (``sign`` +1) or
    below it (-1): ``reproduced`` (entirely on the claimed side; touching the margin counts as not past
    it), ``not reproduced`` (entirely on the other side) or ``inconclusive`` (it straddles the margin).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Interval, side_of
    >>> [side_of(Interval(m, m - 1, m + 1, 5, 0.95), 0.0, +1) for m in (3.0, 0.5, -3.0)]
    ['reproduced', 'inconclusive', 'not reproduced']
    """
    low, high = (interval.low, interval.high) if sign > 0 else (-interval.high, -interval.low)
    edge = sign * margin
    if low > edge:
        return REPRODUCED
    if high <= edge:
        return NOT_REPRODUCED
    return INCONCLUSIVE


@dataclass
class Measurement:
    """What a claim's runner measured for one check.

    Parameters
    ----------
    samples : list of list of float
        One list per point (per grid value ``x``, or one point for a scalar): the value of every seed, in
        the same seed order at every point (one value for a deterministic count).
    x : list of float, optional
        The grid, in the order the claim states it (e.g. alpha from 100 down to 0.05).
    published : list of float, optional
        The paper's values at the same points (``within_relative``).
    unit : str
        What the values are (``accuracy (%)``, ``parameters``).
    labels : list of str, optional
        A name per point, for tables (``rho=0.2``); default: ``x`` or the point's index.
    not_run : str, optional
        Why nothing was measured (missing data): the check's verdict is ``not run`` with this reason.
    unsettled : list of str, optional
        The training runs behind these values whose accuracy was still moving when they stopped: the check
        is ``inconclusive`` whatever the numbers (:func:`evaluate`).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement
    >>> m = Measurement([[90.0, 92.0], [80.0, 84.0]], x=[1.0, 0.1], unit="accuracy (%)")
    >>> m.means(), m.stderrs()
    ([91.0, 82.0], [1.0, 2.0])
    >>> m.intervals()[0].text()
    '91 [78.29, 103.7]'
    """

    samples: list[list[float]]
    x: list[float] | None = None
    published: list[float] | None = None
    unit: str = ""
    labels: list[str] | None = None
    not_run: str | None = None
    unsettled: list[str] | None = None

    def means(self) -> list[float]:
        return [float(np.mean(s)) for s in self.samples]

    def stderrs(self) -> list[float]:
        return [float(np.std(s, ddof=1) / math.sqrt(len(s))) if len(s) > 1 else 0.0 for s in self.samples]

    def intervals(self, level: float = DEFAULT_LEVEL) -> list[Interval]:
        return [t_interval(s, level) for s in self.samples]

    def point_labels(self) -> list[str]:
        if self.labels:
            return list(self.labels)
        return [f"{v:g}" for v in self.x] if self.x else [str(i) for i in range(len(self.samples))]

    def paired(self) -> np.ndarray:
        """The samples as a (points, seeds) array; every point must have the same number of seeds."""
        lengths = {len(s) for s in self.samples}
        if len(lengths) != 1:
            raise HetbenchError(f"the points have different numbers of seeds ({sorted(lengths)}): paired "
                                "comparisons need one value per seed at every point")
        return np.asarray(self.samples, dtype=float)

    def as_dict(self, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
        out: dict[str, Any] = {"unit": self.unit, "points": []}
        if self.not_run:
            return {"unit": self.unit, "not_run": self.not_run}
        if self.unsettled:
            out["unsettled"] = list(self.unsettled)
        for i, (label, s, se, ci) in enumerate(zip(self.point_labels(), self.samples, self.stderrs(),
                                                    self.intervals(level))):
            point: dict[str, Any] = {"label": label, "samples": [_num(v) for v in s], "mean": _num(ci.mean),
                                     "stderr": _num(se), "low": _num(ci.low), "high": _num(ci.high), "n": len(s)}
            if self.x is not None:
                point["x"] = _num(self.x[i])
            if self.published is not None:
                point["published"] = _num(self.published[i])
            out["points"].append(point)
        return out


@dataclass
class CheckResult:
    """A criterion's decision: the verdict, one sentence saying why, and the numbers it used."""

    verdict: str
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)


def _num(v: float) -> float | int:
    """A number as JSON shows it: integers stay integers, floats get 6 significant digits."""
    if isinstance(v, (int, np.integer)) or (isinstance(v, float) and v.is_integer() and abs(v) < 2**53):
        return int(v)
    return float(f"{float(v):.6g}")


def _level(p: Mapping[str, Any]) -> float:
    return float(p.get("level", DEFAULT_LEVEL))


def spearman(values: Sequence[float]) -> float:
    """Spearman's rank correlation of ``values`` with their position (0, 1, 2, ...); ties get average
    ranks; 0 for a constant sequence.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import spearman
    >>> [round(spearman(v), 6) for v in ([1, 2, 3], [3, 2, 1], [1, 3, 2, 4], [5, 5, 5])]
    [1.0, -1.0, 0.8, 0.0]
    """
    from scipy.stats import rankdata

    v = np.asarray(values, dtype=float)
    if v.size < 2 or np.all(v == v[0]):
        return 0.0
    r = rankdata(v)
    pos = np.arange(v.size, dtype=float)
    return float(np.corrcoef(pos, r)[0, 1])


def _monotone(m: Measurement, p: Mapping[str, Any], sign: int) -> CheckResult:
    """Shared by monotone_decreasing (sign -1) and monotone_increasing (sign +1)."""
    values = m.paired()  # (points, seeds)
    if values.shape[0] < 2:
        raise HetbenchError("a monotone criterion needs at least two grid points")
    tol, min_effect, level = float(p["tolerance"]), float(p["min_effect"]), _level(p)
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
    if effect_verdict == NOT_REPRODUCED or trend_verdict == NOT_REPRODUCED or wrong:
        why = []
        if effect_verdict == NOT_REPRODUCED:
            why.append(f"the {word} is below the minimum effect")
        if trend_verdict == NOT_REPRODUCED:
            why.append("the trend goes the other way")
        if wrong:
            why.append(f"{len(wrong)} of {len(steps)} steps go the wrong way by more than {tol:g} ({', '.join(wrong)})")
        return CheckResult(NOT_REPRODUCED, f"{said}: {'; '.join(why)}", numbers)
    if effect_verdict == REPRODUCED and trend_verdict == REPRODUCED and not undecided:
        return CheckResult(REPRODUCED, f"{said}; every step's interval is within the tolerance {tol:g} of "
                                       f"the wrong way", numbers)
    why = []
    if effect_verdict == INCONCLUSIVE:
        why.append(f"the {word}'s interval straddles the minimum effect")
    if trend_verdict == INCONCLUSIVE:
        why.append("the trend's interval straddles 0")
    if undecided:
        why.append(f"{len(undecided)} of {len(steps)} steps' intervals straddle the tolerance {tol:g} "
                   f"({', '.join(undecided)})")
    return CheckResult(INCONCLUSIVE, f"{said}: {'; '.join(why)}", numbers)


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
    >>> from hetbench.reproduce.criteria import Measurement, monotone_decreasing
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
    >>> from hetbench.reproduce.criteria import Measurement, monotone_increasing
    >>> monotone_increasing(Measurement([[1.0], [2.0]]), {"tolerance": 0, "min_effect": 0.5}).verdict
    'reproduced'
    """
    return _monotone(m, p, +1)


def _beyond(m: Measurement, p: Mapping[str, Any], sign: int) -> CheckResult:
    if len(m.samples) != 1:
        raise HetbenchError("greater_than / less_than take a single value")
    threshold, min_effect, level = float(p["threshold"]), float(p.get("min_effect", 0.0)), _level(p)
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


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares slope of log(y) on log(x), its standard error and R^2.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import loglog_slope
    >>> [round(v, 6) for v in loglog_slope([1, 10, 100], [1000, 100, 10])]
    [-1.0, 0.0, 1.0]
    """
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    A = np.vstack([lx, np.ones_like(lx)]).T
    coef, *_ = np.linalg.lstsq(A, ly, rcond=None)
    resid = ly - A @ coef
    n = len(lx)
    ss_tot = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    se = math.sqrt(float(np.sum(resid**2)) / (n - 2) / float(np.sum((lx - lx.mean()) ** 2))) if n > 2 else 0.0
    return float(coef[0]), se, r2


def ratio_scaling(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """Power-law scaling: the log-log slope of the means over ``x``, with its t interval (``n - 2`` degrees
    of freedom), against ``[slope_min, slope_max]``: the whole interval inside, ``reproduced``; the whole
    interval outside, ``not reproduced``; else ``inconclusive``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, ratio_scaling
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
    lo, hi, level = float(p["slope_min"]), float(p["slope_max"]), _level(p)
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


def combine(verdicts: Sequence[str]) -> str:
    """A claim's verdict from its checks' verdicts. Checks not run are left out; when some checks are
    ``reproduced`` and others ``not reproduced``, the claim is ``partially reproduced``; else any
    ``inconclusive`` check makes it ``inconclusive``; else all agree and that is the verdict; nothing run:
    ``not run``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import combine
    >>> combine(["reproduced", "not run"]), combine(["reproduced", "not reproduced"]), combine(["not run"])
    ('reproduced', 'partially reproduced', 'not run')
    >>> combine(["reproduced", "inconclusive"]), combine(["not reproduced", "not reproduced"])
    ('inconclusive', 'not reproduced')
    """
    run = [v for v in verdicts if v != NOT_RUN]
    if not run:
        return NOT_RUN
    if REPRODUCED in run and NOT_REPRODUCED in run:
        return PARTIAL
    if INCONCLUSIVE in run:
        return INCONCLUSIVE
    return run[0]
