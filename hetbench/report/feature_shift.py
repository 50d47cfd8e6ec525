"""Feature shift: how far a client's (or a group's) feature distribution lies from everyone else's.

Label heterogeneity (EMD, Jensen-Shannon) cannot see a device, domain or place split: there every client
may hold the same classes while its images look different. This module measures the difference in the
*features*, on embeddings of the rows (any fixed embedder), with two distances:

* the **Fréchet distance** of Gaussian fits, as FID computes it on Inception features
  (Heusel et al. 2017, eq. 6): ``|mu1 - mu2|^2 + tr(C1 + C2 - 2 (C1 C2)^(1/2))``;
* the **unbiased squared MMD** (Gretton et al. 2012, eq. 3) with the cubic polynomial kernel
  ``k(x, y) = (x . y / d + 1)^3`` of the Kernel Inception Distance (Bińkowski et al. 2018, sec. 3): its
  expectation is exactly 0 when the two samples come from one distribution, whatever their sizes, so a
  split that does not shift features reads near 0 (it can be slightly negative).

Both are **class-conditional** by default: a client's rows of class c are compared with the other
clients' rows of class c, and the per-class distances are averaged with the client's class counts as
weights. That is feature shift in the sense of FedBN (Li et al. 2021): P(x | y) differing between
clients. A label-only split (Dirichlet over labels) then stays at its IID value, where an unconditional
distance would grow with the label skew (classes look different). :func:`iid_reference` gives the
value the same clients would have under a random, IID assignment of the rows.

References
----------
.. [1] M. Heusel et al., "GANs Trained by a Two Time-Scale Update Rule Converge to a Local Nash
   Equilibrium", NeurIPS 2017, eq. 6 (the Fréchet distance of FID).
.. [2] A. Gretton et al., "A Kernel Two-Sample Test", JMLR 13, 2012, Lemma 6 / eq. 3 (unbiased MMD^2).
.. [3] M. Bińkowski et al., "Demystifying MMD GANs", ICLR 2018, section 3 (KID's polynomial kernel).
.. [4] X. Li et al., "FedBN: Federated Learning on Non-IID Features via Local Batch Normalization",
   ICLR 2021, section 3 (feature shift: P(x | y) varies across clients).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: at most this many reference rows per comparison (a seeded sample): the MMD's cost is quadratic
MAX_REFERENCE = 2000


def frechet_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Fréchet distance between Gaussian fits of two samples (rows are observations).

    ``|mu_x - mu_y|^2 + tr(C_x) + tr(C_y) - 2 tr((C_x^(1/2) C_y C_x^(1/2))^(1/2))``: the last trace equals
    ``tr((C_x C_y)^(1/2))`` and is taken from the eigenvalues of a symmetric matrix, which stays real.

    Parameters
    ----------
    x, y : numpy.ndarray
        (n, d) and (m, d) samples, n, m >= 2.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import frechet_distance
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(0.0, 1.0, (20000, 2))
    >>> round(frechet_distance(a, a), 6), round(frechet_distance(a, a * 2.0 + 3.0), 1)  # 2 * 3^2 + 2 * (2 - 1)^2
    (0.0, 20.0)
    """
    x, y = _sample(x), _sample(y)
    mu = x.mean(axis=0) - y.mean(axis=0)
    cx, cy = np.atleast_2d(np.cov(x, rowvar=False)), np.atleast_2d(np.cov(y, rowvar=False))
    root_x = _psd_sqrt(cx)
    cross = np.linalg.eigvalsh(root_x @ cy @ root_x)
    value = float(mu @ mu + np.trace(cx) + np.trace(cy) - 2.0 * np.sqrt(np.clip(cross, 0.0, None)).sum())
    return max(value, 0.0)


def mmd2_unbiased(x: np.ndarray, y: np.ndarray) -> float:
    """Unbiased squared MMD with KID's kernel ``(x . y / d + 1)^3``.

    Parameters
    ----------
    x, y : numpy.ndarray
        (n, d) and (m, d) samples, n, m >= 2.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import mmd2_unbiased
    >>> rng = np.random.default_rng(0)
    >>> same = [mmd2_unbiased(rng.normal(size=(50, 4)), rng.normal(size=(60, 4))) for _ in range(200)]
    >>> bool(abs(np.mean(same)) < 0.01), mmd2_unbiased(rng.normal(size=(50, 4)), rng.normal(1.0, 1.0, (60, 4))) > 0.5
    (True, True)
    """
    x, y = _sample(x), _sample(y)
    d = x.shape[1]
    n, m = len(x), len(y)
    kxx = (x @ x.T / d + 1.0) ** 3
    kyy = (y @ y.T / d + 1.0) ** 3
    kxy = (x @ y.T / d + 1.0) ** 3
    within_x = (kxx.sum() - np.trace(kxx)) / (n * (n - 1))
    within_y = (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
    return float(within_x + within_y - 2.0 * kxy.mean())


@dataclass(frozen=True)
class Shift:
    """One unit's (a client's or a group's) feature shift against the rest: both distances, the rows
    they rest on, and how many of its classes could be compared (two rows or more on each side)."""

    frechet: float
    mmd2: float
    rows: int
    classes_compared: int


def conditional_shift(embedding: np.ndarray, labels: np.ndarray, member: np.ndarray, *,
                      conditional: bool = True, seed: int = 0, max_reference: int = MAX_REFERENCE) -> Shift:
    """The feature shift of the rows where ``member`` is true against all other rows.

    Parameters
    ----------
    embedding : numpy.ndarray
        (n, d) features of every row.
    labels : numpy.ndarray
        (n,) class of every row.
    member : numpy.ndarray
        (n,) bool: the unit's rows.
    conditional : bool
        Compare class by class (default) and average with the unit's class counts as weights; False
        compares the unit's rows with the rest as they are.
    seed, max_reference : int
        The rest is sampled down to ``max_reference`` rows per comparison with this seed.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import conditional_shift
    >>> rng = np.random.default_rng(1)
    >>> labels = np.repeat([0, 1], 200)
    >>> emb = rng.normal(size=(400, 3)) + labels[:, None] * 4.0   # classes far apart
    >>> skewed = (labels == 0) & (np.arange(400) % 2 == 0)          # a client of class 0 only
    >>> s, u = conditional_shift(emb, labels, skewed), conditional_shift(emb, labels, skewed, conditional=False)
    >>> abs(s.mmd2) < 0.01 * u.mmd2, s.classes_compared  # within its class the client looks like the rest
    (True, 1)
    """
    emb = np.asarray(embedding, np.float64)
    lab = np.asarray(labels)
    inside = np.asarray(member, bool)
    rng = np.random.default_rng(seed)
    strata = np.unique(lab[inside]) if conditional else [None]
    frechet = mmd = weight = 0.0
    compared = 0
    for c in strata:
        mine = inside if c is None else inside & (lab == c)
        rest = ~inside if c is None else ~inside & (lab == c)
        a, b = np.flatnonzero(mine), np.flatnonzero(rest)
        if len(a) < 2 or len(b) < 2:
            continue
        if len(b) > max_reference:
            b = np.sort(rng.choice(b, max_reference, replace=False))
        if len(a) > max_reference:
            a = np.sort(rng.choice(a, max_reference, replace=False))
        w = float(np.count_nonzero(mine))
        frechet += w * frechet_distance(emb[a], emb[b])
        mmd += w * mmd2_unbiased(emb[a], emb[b])
        weight += w
        compared += 1
    if weight == 0:
        return Shift(float("nan"), float("nan"), int(inside.sum()), 0)
    return Shift(frechet / weight, mmd / weight, int(inside.sum()), compared)


def iid_reference(embedding: np.ndarray, labels: np.ndarray, unit_of_row: np.ndarray, *, seed: int = 0,
                  conditional: bool = True) -> float:
    """The row-weighted mean MMD^2 of the units if the rows were dealt to them at random (same sizes,
    stratified by class when ``conditional``): what "no feature shift" reads on this data.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import iid_reference
    >>> rng = np.random.default_rng(0)
    >>> emb, labels = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
    >>> abs(iid_reference(emb, labels, np.arange(300) % 4)) < 0.05
    True
    """
    unit = np.asarray(unit_of_row).copy()
    lab = np.asarray(labels)
    rng = np.random.default_rng(seed)
    if conditional:  # shuffle units within each class: the label mix of every unit is kept
        for c in np.unique(lab):
            rows = np.flatnonzero(lab == c)
            unit[rows] = unit[rng.permutation(rows)]
    else:
        unit = unit[rng.permutation(len(unit))]
    shifts = [conditional_shift(embedding, lab, unit == u, conditional=conditional, seed=seed) for u in np.unique(unit)]
    return weighted_mean(shifts, "mmd2")


def weighted_mean(shifts: list[Shift], field: str) -> float:
    """Row-weighted mean of ``field`` over the shifts that could be computed (NaN when none could)."""
    pairs = [(getattr(s, field), s.rows) for s in shifts if np.isfinite(getattr(s, field))]
    total = sum(r for _, r in pairs)
    return float(sum(v * r for v, r in pairs) / total) if total else float("nan")


def standardise(embedding: np.ndarray) -> np.ndarray:
    """Each feature centred and scaled to unit variance over all rows (constant features left at 0), so
    that the distances do not depend on the embedder's units.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import standardise
    >>> standardise(np.array([[1.0, 5.0], [3.0, 5.0]])).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    e = np.asarray(embedding, np.float64)
    sd = e.std(axis=0)
    return (e - e.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def _sample(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or len(a) < 2:
        raise ValueError(f"a feature-shift sample needs (n >= 2, d) rows, got shape {a.shape}")
    return a


def _psd_sqrt(c: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh(c)
    return (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
