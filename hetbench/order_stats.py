"""Percentiles from exact order statistics, the same bits with every numpy release and on every CPU.

``numpy.percentile`` of a float32 array has computed its interpolation at float32 or float64 precision
depending on the numpy release (NEP 50's scalar promotion), which moved published ISP pixels between
numpy 2.0 and 2.4. Here the two order statistics are selected exactly (``numpy.partition`` moves values,
it computes none), the position is exact integer arithmetic, and the one interpolation is a float64
``a + (b - a) t``: numpy's default ``linear`` method (Hyndman and Fan 1996, definition 7).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def percentile(values: np.ndarray, q: float) -> float:
    """The ``q``-th percentile of ``values`` by linear interpolation between order statistics.

    Parameters
    ----------
    values : numpy.ndarray
        Finite values of any real dtype, any shape (flattened); at least one.
    q : float
        Percentile in [0, 100].

    Returns
    -------
    float
        ``x[k] + (x[k+1] - x[k]) * f`` in float64, where ``x`` is sorted, ``k + f = (n - 1) q / 100``
        (computed exactly, as a fraction) and ``0 <= f < 1``.

    References
    ----------
    R. J. Hyndman and Y. Fan, "Sample Quantiles in Statistical Packages", The American Statistician
    50(4), 1996 (definition 7, numpy's ``linear``).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.order_stats import percentile
    >>> percentile(np.arange(101, dtype=np.float32), 99), percentile(np.array([1.0, 2.0]), 25)
    (99.0, 1.25)
    """
    flat = np.asarray(values).reshape(-1)
    if flat.size == 0:
        raise ValueError("percentile of no values")
    pos = Fraction(flat.size - 1) * Fraction(q) / 100
    k = int(pos)  # floor: pos >= 0
    frac = float(pos - k)
    if frac == 0.0 or k + 1 >= flat.size:
        return float(np.partition(flat, k)[k])
    part = np.partition(flat, (k, k + 1))
    a, b = float(part[k]), float(part[k + 1])
    return a + (b - a) * frac
