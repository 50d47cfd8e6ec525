"""The criterion language of claim definitions: a measurement in, a verdict and its numbers out.

A claim's yaml (``manifests/claims/<id>.yaml``) declares, before any run, one criterion per check::

    criterion: {name: monotone_decreasing, tolerance: 1.0, sigmas: 2, min_effect: 10}

Every criterion is a pure function ``(Measurement, params) -> CheckResult``. The verdict is one of
:data:`VERDICTS` and follows from the measured numbers and the declared parameters only; the result
carries every number the decision used, so a reader can redo it by hand.

Uncertainty is the spread over seeds: a point's standard error is ``std(ddof=1) / sqrt(n)`` (0 with one
seed or a deterministic count), and ``sigmas`` standard errors are allowed for noise wherever a criterion
compares two numbers.

Criteria (:data:`CRITERIA`):

- ``monotone_decreasing`` / ``monotone_increasing``: a metric over an ordered grid; each step may go the
  wrong way by at most ``tolerance + sigmas * se(step)``; the first-to-last change must reach ``min_effect``.
- ``greater_than`` / ``less_than``: one value against ``threshold``; it must clear it by ``min_effect``
  beyond ``sigmas`` standard errors.
- ``within_relative``: values against published ones, ``|measured / published - 1| <= tolerance`` each.
- ``ratio_scaling``: the least-squares slope of log(value) on log(x) within ``[slope_min, slope_max]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.registry import Registry

REPRODUCED = "reproduced"
PARTIAL = "partially reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, PARTIAL, NOT_REPRODUCED, NOT_RUN)
"""Every verdict a check or a claim can get."""


@dataclass
class Measurement:
    """What a claim's runner measured for one check.

    Parameters
    ----------
    samples : list of list of float
        One list per point (per grid value ``x``, or one point for a scalar): the value of every seed
        (one value for a deterministic count).
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

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement
    >>> m = Measurement([[90.0, 92.0], [80.0, 84.0]], x=[1.0, 0.1], unit="accuracy (%)")
    >>> m.means(), m.stderrs()
    ([91.0, 82.0], [1.0, 2.0])
    """

    samples: list[list[float]]
    x: list[float] | None = None
    published: list[float] | None = None
    unit: str = ""
    labels: list[str] | None = None
    not_run: str | None = None

    def means(self) -> list[float]:
        return [float(np.mean(s)) for s in self.samples]

    def stderrs(self) -> list[float]:
        return [float(np.std(s, ddof=1) / math.sqrt(len(s))) if len(s) > 1 else 0.0 for s in self.samples]

    def point_labels(self) -> list[str]:
        if self.labels:
            return list(self.labels)
        return [f"{v:g}" for v in self.x] if self.x else [str(i) for i in range(len(self.samples))]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"unit": self.unit, "points": []}
        if self.not_run:
            return {"unit": self.unit, "not_run": self.not_run}
        for i, (label, s, mean, se) in enumerate(zip(self.point_labels(), self.samples, self.means(), self.stderrs())):
            point: dict[str, Any] = {"label": label, "samples": [_num(v) for v in s], "mean": _num(mean),
                                     "stderr": _num(se), "n": len(s)}
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


def _monotone(m: Measurement, p: Mapping[str, Any], sign: int) -> CheckResult:
    """Shared by monotone_decreasing (sign -1) and monotone_increasing (sign +1)."""
    means, ses = m.means(), m.stderrs()
    if len(means) < 2:
        raise HetbenchError("a monotone criterion needs at least two grid points")
    tol, sigmas, min_effect = float(p["tolerance"]), float(p.get("sigmas", 2.0)), float(p["min_effect"])
    labels = m.point_labels()
    steps, violations = [], []
    for i in range(len(means) - 1):
        change = means[i + 1] - means[i]
        wrong_way = -sign * change  # > 0: the metric moved against the expected direction
        allowed = tol + sigmas * math.hypot(ses[i], ses[i + 1])
        steps.append({"from": labels[i], "to": labels[i + 1], "change": _num(change), "allowed_wrong_way": _num(allowed),
                      "ok": bool(wrong_way <= allowed)})
        if wrong_way > allowed:
            violations.append(f"{labels[i]} -> {labels[i + 1]}")
    effect = sign * (means[-1] - means[0])
    numbers = {"steps": steps, "effect": _num(effect), "min_effect": _num(min_effect), "violations": len(violations)}
    word = "decrease" if sign < 0 else "increase"
    span = f"{labels[0]} -> {labels[-1]}"
    if effect < min_effect:
        return CheckResult(NOT_REPRODUCED, f"the {word} over {span} is {effect:.4g}, below the minimum effect "
                                           f"{min_effect:g}", numbers)
    if violations:
        return CheckResult(PARTIAL, f"the {word} over {span} is {effect:.4g} (>= {min_effect:g}) but "
                                    f"{len(violations)} of {len(steps)} steps go the wrong way beyond the allowed noise "
                                    f"({', '.join(violations)})", numbers)
    return CheckResult(REPRODUCED, f"no step goes the wrong way beyond its allowance (tolerance + noise) and the "
                                   f"{word} over {span} is {effect:.4g} (>= {min_effect:g})", numbers)


def monotone_decreasing(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """The metric falls along the grid.

    Parameters (declared)
    ---------------------
    tolerance : float
        How far one step may rise (in the metric's unit) besides noise.
    sigmas : float, default 2
        Standard errors of a step (from the seeds' spread) also allowed.
    min_effect : float
        The smallest fall from the first to the last point that counts.

    Verdict: ``reproduced`` when every step is within the allowance and the fall reaches ``min_effect``;
    ``partially reproduced`` when the fall reaches it but some step rises beyond the allowance;
    ``not reproduced`` when the fall is below ``min_effect``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, monotone_decreasing
    >>> p = {"tolerance": 1.0, "sigmas": 2, "min_effect": 10}
    >>> monotone_decreasing(Measurement([[95.0], [90.0], [70.0]]), p).verdict
    'reproduced'
    >>> monotone_decreasing(Measurement([[95.0], [99.0], [70.0]]), p).verdict
    'partially reproduced'
    >>> monotone_decreasing(Measurement([[95.0], [94.0], [93.0]]), p).verdict
    'not reproduced'
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
    mean, se = m.means()[0], m.stderrs()[0]
    threshold, min_effect, sigmas = float(p["threshold"]), float(p.get("min_effect", 0.0)), float(p.get("sigmas", 2.0))
    margin = sign * (mean - threshold)  # > 0: on the expected side
    guarded = margin - sigmas * se
    numbers = {"value": _num(mean), "stderr": _num(se), "threshold": _num(threshold), "margin": _num(margin),
               "margin_minus_noise": _num(guarded), "min_effect": _num(min_effect)}
    side = "above" if sign > 0 else "below"
    where = side if margin >= 0 else ("below" if sign > 0 else "above")
    said = (f"{mean:.4g} ± {se:.2g} (s.e.) is {abs(margin):.4g} {where} the threshold {threshold:g}; "
            f"less {sigmas:g} s.e. the margin is {guarded:.4g}")
    if guarded >= min_effect and guarded > 0:
        return CheckResult(REPRODUCED, f"{said}, at least the minimum effect {min_effect:g}", numbers)
    if margin > 0:
        return CheckResult(PARTIAL, f"{said}, short of the minimum effect {min_effect:g}", numbers)
    return CheckResult(NOT_REPRODUCED, f"{said}: the value is not {side} the threshold", numbers)


def greater_than(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """One value above ``threshold`` by at least ``min_effect`` (default 0) beyond ``sigmas`` (default 2)
    standard errors: ``reproduced``; above it but not by that much: ``partially reproduced``; else
    ``not reproduced``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, greater_than
    >>> p = {"threshold": 0.0, "min_effect": 1.0}
    >>> [greater_than(Measurement([v]), p).verdict for v in ([3.0, 3.2], [0.5, 0.7], [-1.0, -1.2])]
    ['reproduced', 'partially reproduced', 'not reproduced']
    """
    return _beyond(m, p, +1)


def less_than(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """One value below ``threshold`` by at least ``min_effect`` beyond ``sigmas`` standard errors
    (:func:`greater_than` mirrored).

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, less_than
    >>> less_than(Measurement([[0.4, 0.42]]), {"threshold": 1.0, "min_effect": 0.2}).verdict
    'reproduced'
    >>> less_than(Measurement([[0.95, 0.97]]), {"threshold": 1.0, "min_effect": 0.2}).verdict
    'partially reproduced'
    """
    return _beyond(m, p, -1)


def within_relative(m: Measurement, p: Mapping[str, Any]) -> CheckResult:
    """Every mean within ``tolerance`` (a fraction: 0.02 is 2%; 0 is exact) of its published value:
    ``reproduced``; some but not all: ``partially reproduced``; none: ``not reproduced``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, within_relative
    >>> m = Measurement([[3.93e6], [0.99e6]], published=[3.92e6, 0.98e6])
    >>> within_relative(m, {"tolerance": 0.02}).verdict, within_relative(m, {"tolerance": 0.005}).verdict
    ('reproduced', 'partially reproduced')
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
    if inside:
        return CheckResult(PARTIAL, f"{inside} of {len(rows)} values {tol_text} of the published ones "
                                    f"(worst {worst * 100:.3g}%)", numbers)
    return CheckResult(NOT_REPRODUCED, f"no value {tol_text} of the published one (worst {worst * 100:.3g}%)",
                       numbers)


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
    """Power-law scaling: the log-log slope of the means over ``x`` within ``[slope_min, slope_max]``:
    ``reproduced``; outside it but with the sign of its middle (the direction holds): ``partially
    reproduced``; else ``not reproduced``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, ratio_scaling
    >>> m = Measurement([[1000], [105], [9]], x=[1, 10, 100])
    >>> ratio_scaling(m, {"slope_min": -1.1, "slope_max": -0.9}).verdict
    'reproduced'
    >>> ratio_scaling(m, {"slope_min": -0.6, "slope_max": -0.4}).verdict
    'partially reproduced'
    """
    if m.x is None or len(m.x) < 2:
        raise HetbenchError("ratio_scaling needs a grid x of at least two points")
    means = m.means()
    if min(means) <= 0 or min(m.x) <= 0:
        return CheckResult(NOT_REPRODUCED, "a value or grid point is not positive: no power law",
                           {"values": [_num(v) for v in means]})
    lo, hi = float(p["slope_min"]), float(p["slope_max"])
    slope, se, r2 = loglog_slope(m.x, means)
    numbers = {"slope": _num(slope), "slope_stderr": _num(se), "r2": _num(r2), "slope_min": _num(lo),
               "slope_max": _num(hi)}
    said = f"log-log slope {slope:.3f} (± {se:.2g}, R² {r2:.3f})"
    if lo <= slope <= hi:
        return CheckResult(REPRODUCED, f"{said} is within [{lo:g}, {hi:g}]", numbers)
    if math.copysign(1, slope) == math.copysign(1, (lo + hi) / 2) and slope != 0:
        return CheckResult(PARTIAL, f"{said} is outside [{lo:g}, {hi:g}] but has the expected sign", numbers)
    return CheckResult(NOT_REPRODUCED, f"{said} is outside [{lo:g}, {hi:g}] and of the wrong sign", numbers)


@dataclass(frozen=True)
class Criterion:
    """A criterion function and the parameters its declaration must and may give."""

    fn: Callable[[Measurement, Mapping[str, Any]], CheckResult]
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


CRITERIA: Registry[Criterion] = Registry(
    "criterion",
    {
        "monotone_decreasing": Criterion(monotone_decreasing, ("tolerance", "min_effect"), ("sigmas",)),
        "monotone_increasing": Criterion(monotone_increasing, ("tolerance", "min_effect"), ("sigmas",)),
        "greater_than": Criterion(greater_than, ("threshold",), ("min_effect", "sigmas")),
        "less_than": Criterion(less_than, ("threshold",), ("min_effect", "sigmas")),
        "within_relative": Criterion(within_relative, ("tolerance",)),
        "ratio_scaling": Criterion(ratio_scaling, ("slope_min", "slope_max")),
    },
)
"""The criteria a claim may declare, by name."""

#: parameters that must not be negative
_NON_NEGATIVE = ("tolerance", "min_effect", "sigmas")


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
    if name == "ratio_scaling" and params["slope_min"] > params["slope_max"]:
        raise HetbenchError(f"{where}: criterion 'ratio_scaling': slope_min is above slope_max")
    return {"name": name, **params}


def evaluate(measurement: Measurement, criterion: Mapping[str, Any]) -> CheckResult:
    """Apply a declared (validated) criterion to a measurement; a measurement with ``not_run`` gets
    ``not run`` with its reason.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import Measurement, evaluate
    >>> evaluate(Measurement([], not_run="no iNaturalist files"), {"name": "within_relative", "tolerance": 0}).verdict
    'not run'
    """
    if measurement.not_run:
        return CheckResult(NOT_RUN, measurement.not_run)
    params = {k: v for k, v in criterion.items() if k != "name"}
    return CRITERIA[criterion["name"]].fn(measurement, params)


def combine(verdicts: Sequence[str]) -> str:
    """A claim's verdict from its checks' verdicts: checks not run are left out; all reproduced:
    ``reproduced``; none reproduced or partially: ``not reproduced``; else ``partially reproduced``;
    nothing run: ``not run``.

    Examples
    --------
    >>> from hetbench.reproduce.criteria import combine
    >>> combine(["reproduced", "not run"]), combine(["reproduced", "not reproduced"]), combine(["not run"])
    ('reproduced', 'partially reproduced', 'not run')
    """
    run = [v for v in verdicts if v != NOT_RUN]
    if not run:
        return NOT_RUN
    if all(v == REPRODUCED for v in run):
        return REPRODUCED
    if all(v == NOT_REPRODUCED for v in run):
        return NOT_REPRODUCED
    return PARTIAL
