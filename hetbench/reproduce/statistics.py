"""The statistics of claim verdicts: Student-t intervals, rank correlation and log-log slopes.

Every interval is two-sided at a stated level (default 95%); one value, a deterministic count, is its own
interval. Pure numpy (and scipy's t quantiles); :mod:`hetbench.reproduce.criteria` decides verdicts from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from hetbench.errors import HetbenchError

#: the confidence level of every interval unless a criterion declares ``level``
DEFAULT_LEVEL = 0.95


def json_number(v: float) -> float | int:
    """A number as JSON shows it: integers stay integers, floats get 6 significant digits."""
    if isinstance(v, (int, np.integer)) or (isinstance(v, float) and v.is_integer() and abs(v) < 2**53):
        return int(v)
    return float(f"{float(v):.6g}")



@dataclass(frozen=True)
class Interval:
    """A mean and its two-sided t interval (``low`` and ``high`` equal the mean for one value).

    Examples
    --------
    >>> from hetbench.reproduce.statistics import t_interval
    >>> t_interval([1.0, 2.0, 3.0, 4.0, 5.0]).rounded()
    {'mean': 3, 'low': 1.03676, 'high': 4.96324, 'n': 5, 'level': 0.95}
    """

    mean: float
    low: float
    high: float
    n: int
    level: float

    def rounded(self) -> dict[str, Any]:
        return {"mean": json_number(self.mean), "low": json_number(self.low), "high": json_number(self.high), "n": self.n,
                "level": self.level}

    def text(self, digits: int = 4) -> str:
        if self.n < 2 or self.low == self.high:
            return f"{self.mean:.{digits}g}"
        return f"{self.mean:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"


def t_quantile(p: float, df: int) -> float:
    """The Student-t quantile ``t(p, df)`` (scipy's ``t.ppf``).

    Examples
    --------
    >>> from hetbench.reproduce.statistics import t_quantile
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
    >>> from hetbench.reproduce.statistics import t_interval
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


def spearman(values: Sequence[float]) -> float:
    """Spearman's rank correlation of ``values`` with their position (0, 1, 2, ...); ties get average
    ranks; 0 for a constant sequence.

    Examples
    --------
    >>> from hetbench.reproduce.statistics import spearman
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


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares slope of log(y) on log(x), its standard error and R^2.

    Examples
    --------
    >>> from hetbench.reproduce.statistics import loglog_slope
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
