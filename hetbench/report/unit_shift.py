"""Class-conditional feature shift of many units (clients, devices, domains) at linear cost.

:func:`hetbench.report.feature_shift.conditional_shift` compares one unit with the rest pair by pair of
rows; doing that for every client of a large split is quadratic. :func:`unit_shifts` gives both distances
for every unit from per-(class, unit) sums, in one streamed pass over the rows:

* the **Fréchet distance** (Heusel et al. 2017, eq. 6) between the Gaussian fit of a unit's rows of
  class c and that of every other row of class c, from their sums and scatter matrices (the class's minus
  the unit's);
* the **unbiased squared MMD** (Gretton et al. 2012, eq. 3, MMD^2_u) between a unit's rows of class c and
  every other row of class c, with the kernel ``k(x, y) = phi(x) . phi(y)`` of :data:`FOURIER` random Fourier
  features of the Gaussian kernel ``exp(-|x - y|^2 / h)`` (Rahimi & Recht 2007): with feature sums the
  U-statistic is ``(|S_a|^2 - sum |phi(a)|^2) / (n (n - 1))`` for each side and ``S_a . S_b / (n m)``
  across, so no pair of rows is formed and no row is sampled. ``phi`` is fixed by the seed, so the kernel
  is one positive-definite kernel and the estimate's expectation is exactly 0 when the unit's rows and the
  rest come from one distribution. ``h`` is the median squared distance between rows (the median
  heuristic, Gretton et al. 2012, sec. 8).

Per unit, the class values are averaged with the unit's class counts as weights (FedBN's sense of
feature shift, P(x | y) differing between clients; Li et al. 2021, sec. 3). A class is compared when the
unit and the rest each hold two rows of it or more. Cost: O(n (d^2 + F)) time, O(units x classes x
(d^2 + F)) memory for the sums of the (class, unit) pairs that have rows.

References
----------
.. [1] A. Rahimi, B. Recht, "Random Features for Large-Scale Kernel Machines", NeurIPS 2007, Algorithm 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hetbench.report.feature_shift import median_bandwidth

#: random Fourier features of the MMD's kernel (half cosines, half sines)
FOURIER = 256
#: rows whose features are computed at once (bounds the memory of the pass)
CHUNK = 8192


@dataclass(frozen=True)
class UnitShifts:
    """Every unit's feature shift.

    Attributes
    ----------
    frechet, mmd2 : numpy.ndarray
        (units,) class-count-weighted means; NaN where no class could be compared.
    rows : numpy.ndarray
        (units,) the unit's rows.
    classes_compared : numpy.ndarray
        (units,) classes that entered the means.
    """

    frechet: np.ndarray
    mmd2: np.ndarray
    rows: np.ndarray
    classes_compared: np.ndarray

    def weighted_mean(self, field: str) -> float:
        """Row-weighted mean of ``frechet`` or ``mmd2`` over the units where it is defined (NaN if none)."""
        values = getattr(self, field)
        ok = np.isfinite(values) & (self.rows > 0)
        if not ok.any():
            return float("nan")
        return float((values[ok] * self.rows[ok]).sum() / self.rows[ok].sum())


def fourier_features(x: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """``phi(x) = sqrt(2 / F) [cos(x W), sin(x W)]`` for the (d, F / 2) frequencies ``W``: ``phi(x) . phi(y)``
    is the mean of ``cos(w . (x - y))`` over the frequencies, which is ``exp(-|x - y|^2 / h)`` in expectation
    when ``W ~ N(0, 2 / h)`` (Rahimi & Recht 2007).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.unit_shift import fourier_features
    >>> w = np.random.default_rng(0).normal(0.0, 1.0, (2, 20000))     # h = 2
    >>> phi = fourier_features(np.array([[0.0, 0.0], [1.0, 1.0]]), w)
    >>> bool(abs(phi[0] @ phi[1] - np.exp(-2 / 2)) < 0.02), round(float(phi[0] @ phi[0]), 6)  # |x - y|^2 = 2
    (True, 1.0)
    """
    proj = x @ frequencies
    return np.hstack([np.cos(proj), np.sin(proj)]) * np.sqrt(1.0 / frequencies.shape[1])


def _batched_frechet(mu_a, cov_a, mu_b, cov_b) -> np.ndarray:
    """Fréchet distances of stacked Gaussians ((k, d) means, (k, d, d) covariances), clipped at 0."""
    values, vectors = np.linalg.eigh(cov_a)
    root = (vectors * np.sqrt(np.clip(values, 0.0, None))[:, None, :]) @ np.swapaxes(vectors, 1, 2)
    cross = np.linalg.eigvalsh(root @ cov_b @ root)
    diff = mu_a - mu_b
    trace = np.trace(cov_a, axis1=1, axis2=2) + np.trace(cov_b, axis1=1, axis2=2)
    out = (diff * diff).sum(axis=1) + trace - 2.0 * np.sqrt(np.clip(cross, 0.0, None)).sum(axis=1)
    return np.maximum(out, 0.0)


class _PairSums:
    """Sums per (class, unit) pair of one assignment of rows to units, accumulated chunk by chunk."""

    def __init__(self, lab: np.ndarray, unit: np.ndarray, width: int) -> None:
        pairs, self.key = np.unique(np.stack([lab, unit]), axis=1, return_inverse=True)  # class-then-unit order
        self.key = self.key.reshape(-1)
        self.pair_class, self.pair_unit = pairs[0], pairs[1].astype(np.int64)
        self.sums = np.zeros((pairs.shape[1], width))

    def add(self, rows: slice, block: np.ndarray) -> None:
        kid = self.key[rows]
        order = np.argsort(kid, kind="stable")
        kid = kid[order]
        cut = np.flatnonzero(np.r_[True, kid[1:] != kid[:-1]])
        self.sums[kid[cut]] += np.add.reduceat(block[order], cut, axis=0)  # distinct pairs: each added once


def _shifts(p: _PairSums, f: int, d: int, num_units: int, unit: np.ndarray) -> UnitShifts:
    """The distances of every pair against the rest of its class, averaged per unit (module notes)."""
    iu = np.triu_indices(d)
    counts = np.bincount(p.key, minlength=len(p.pair_class)).astype(np.float64)
    s_phi, q, s_x = p.sums[:, :f], p.sums[:, f], p.sums[:, f + 1:f + 1 + d]
    s_xx = np.zeros((len(counts), d, d))
    s_xx[:, iu[0], iu[1]] = p.sums[:, f + 1 + d:]
    s_xx[:, iu[1], iu[0]] = p.sums[:, f + 1 + d:]
    new_class = np.r_[True, p.pair_class[1:] != p.pair_class[:-1]]
    class_first, of_class = np.flatnonzero(new_class), np.cumsum(new_class) - 1
    # the class totals, over its pairs, minus each pair: the rest of its class
    n, m, r_phi, r_q, r_x, r_xx = counts, *(np.add.reduceat(a, class_first, axis=0)[of_class] - a
                                            for a in (counts, s_phi, q, s_x, s_xx))
    ok = (n >= 2) & (m >= 2)
    n, m = n[ok], m[ok]
    s_phi, q, s_x, s_xx, r_phi, r_q, r_x, r_xx = (a[ok] for a in (s_phi, q, s_x, s_xx, r_phi, r_q, r_x, r_xx))
    within_a = ((s_phi * s_phi).sum(axis=1) - q) / (n * (n - 1))
    within_r = ((r_phi * r_phi).sum(axis=1) - r_q) / (m * (m - 1))
    mmd2 = within_a + within_r - 2.0 * (s_phi * r_phi).sum(axis=1) / (n * m)
    mu_a, mu_r = s_x / n[:, None], r_x / m[:, None]
    cov_a = (s_xx - n[:, None, None] * mu_a[:, :, None] * mu_a[:, None, :]) / (n - 1)[:, None, None]
    cov_r = (r_xx - m[:, None, None] * mu_r[:, :, None] * mu_r[:, None, :]) / (m - 1)[:, None, None]
    frechet = _batched_frechet(mu_a, cov_a, mu_r, cov_r)
    owner = p.pair_unit[ok]
    weight = np.bincount(owner, weights=n, minlength=num_units)[:num_units]
    with np.errstate(invalid="ignore", divide="ignore"):
        mmd_unit = np.where(weight > 0, np.bincount(owner, weights=n * mmd2, minlength=num_units)[:num_units] / weight, np.nan)
        fr_unit = np.where(weight > 0, np.bincount(owner, weights=n * frechet, minlength=num_units)[:num_units] / weight, np.nan)
    rows = np.bincount(unit, minlength=num_units)[:num_units].astype(np.int64)
    compared = np.bincount(owner, minlength=num_units)[:num_units].astype(np.int64)
    return UnitShifts(fr_unit, mmd_unit, rows, compared)


def many_unit_shifts(features: np.ndarray, labels: np.ndarray, assignments: list[tuple[np.ndarray, int]], *,
                     seed: int = 0, bandwidth: float | None = None, fourier: int = FOURIER) -> list[UnitShifts]:
    """:func:`unit_shifts` for several assignments of the rows to units (clients, their IID reference,
    devices, ...) in one pass: every row's random features are computed once.

    Parameters
    ----------
    features, labels, seed, bandwidth, fourier
        As for :func:`unit_shifts`.
    assignments : list of (numpy.ndarray, int)
        ``(unit_of_row, num_units)`` of each assignment.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.unit_shift import many_unit_shifts, unit_shifts
    >>> rng = np.random.default_rng(0)
    >>> x, labels = rng.normal(size=(300, 3)), rng.integers(0, 2, 300)
    >>> a, b = rng.integers(0, 4, 300), rng.integers(0, 2, 300)
    >>> both = many_unit_shifts(x, labels, [(a, 4), (b, 2)])
    >>> np.array_equal(both[1].mmd2, unit_shifts(x, labels, b, 2).mmd2)
    True
    """
    x = np.asarray(features, np.float64)
    lab = np.asarray(labels)
    units = [np.asarray(u, np.int64) for u, _ in assignments]
    if x.ndim != 2 or len(x) != len(lab) or any(len(u) != len(x) for u in units):
        raise ValueError(f"features {x.shape}, labels {lab.shape} and units {[u.shape for u in units]} disagree")
    if len(x) == 0:
        return [UnitShifts(np.full(k, np.nan), np.full(k, np.nan), np.zeros(k, np.int64), np.zeros(k, np.int64))
                for _, k in assignments]
    d = x.shape[1]
    h = median_bandwidth(x, seed) if bandwidth is None else float(bandwidth)
    frequencies = np.random.default_rng(seed).normal(0.0, np.sqrt(2.0 / h), (d, fourier // 2))
    f = 2 * frequencies.shape[1]
    iu = np.triu_indices(d)
    width = f + 1 + d + len(iu[0])
    sums = [_PairSums(lab, u, width) for u in units]
    for a in range(0, len(x), CHUNK):
        rows = slice(a, a + CHUNK)
        xc = x[rows]
        # one reduction over [phi, |phi|^2, x, the upper triangle of x x^T] per assignment and chunk
        block = np.empty((len(xc), width))
        block[:, :f] = fourier_features(xc, frequencies)
        block[:, f] = (block[:, :f] ** 2).sum(axis=1)
        block[:, f + 1:f + 1 + d] = xc
        np.multiply(xc[:, iu[0]], xc[:, iu[1]], out=block[:, f + 1 + d:])
        for p in sums:
            p.add(rows, block)
    return [_shifts(p, f, d, k, u) for p, u, (_, k) in zip(sums, units, assignments)]


def unit_shifts(features: np.ndarray, labels: np.ndarray, unit_of_row: np.ndarray, num_units: int, *,
                seed: int = 0, bandwidth: float | None = None, fourier: int = FOURIER) -> UnitShifts:
    """Every unit's class-conditional Fréchet distance and unbiased MMD^2 against the rest (module notes).

    Parameters
    ----------
    features : numpy.ndarray
        (n, d) features of every row (standardised: the distances are in its units).
    labels : numpy.ndarray
        (n,) class of every row.
    unit_of_row : numpy.ndarray
        (n,) unit index of every row, in [0, num_units).
    num_units : int
        How many units (units without rows get NaN).
    seed : int
        Seed of the random Fourier features.
    bandwidth : float, optional
        The Gaussian kernel's ``h``; default the :func:`~hetbench.report.feature_shift.median_bandwidth`
        of ``features``.
    fourier : int
        Random Fourier features (even).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.unit_shift import unit_shifts
    >>> rng = np.random.default_rng(0)
    >>> labels, units = np.repeat([0, 1], 600), np.tile(np.arange(6), 200)
    >>> x = rng.normal(size=(1200, 4)) + (units == 2)[:, None] * 1.5     # unit 2's images look different
    >>> s = unit_shifts(x, labels, units, 6)
    >>> int(np.argmax(s.mmd2)), int(np.argmax(s.frechet)), bool(s.mmd2[2] > 5 * np.delete(s.mmd2, 2).max())
    (2, 2, True)
    >>> s.rows.tolist(), s.classes_compared.tolist()
    ([200, 200, 200, 200, 200, 200], [2, 2, 2, 2, 2, 2])
    """
    return many_unit_shifts(features, labels, [(unit_of_row, num_units)], seed=seed, bandwidth=bandwidth,
                            fourier=fourier)[0]


def iid_units(labels: np.ndarray, unit_of_row: np.ndarray, seed: int = 0) -> np.ndarray:
    """The units shuffled among the rows of each class: every unit keeps its class counts, its rows are
    random. :func:`unit_shifts` on them is what "no feature shift" reads on this data (the IID reference).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.unit_shift import iid_units
    >>> labels, units = np.array([0, 0, 0, 1, 1]), np.array([0, 1, 1, 0, 1])
    >>> shuffled = iid_units(labels, units)
    >>> [sorted(shuffled[labels == c].tolist()) for c in (0, 1)]
    [[0, 1, 1], [0, 1]]
    """
    unit = np.asarray(unit_of_row).copy()
    lab = np.asarray(labels)
    rng = np.random.default_rng(seed)
    order = np.argsort(lab, kind="stable")
    bounds = np.flatnonzero(np.r_[True, lab[order][1:] != lab[order][:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        rows = order[a:b]
        unit[rows] = unit[rng.permutation(rows)]
    return unit


__all__ = ["UnitShifts", "unit_shifts", "many_unit_shifts", "iid_units", "fourier_features", "FOURIER"]
