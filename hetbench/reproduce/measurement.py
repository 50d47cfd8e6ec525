"""What a claim's runner measured (:class:`Measurement`) and what a criterion decided (:class:`CheckResult`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.reproduce.statistics import DEFAULT_LEVEL, Interval, json_number as _num, t_interval

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
    >>> from hetbench.reproduce.measurement import Measurement
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
