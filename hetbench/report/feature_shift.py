"""Feature shift: how far a client's (or a group's) feature distribution lies from everyone else's.

Label heterogeneity (EMD, Jensen-Shannon) cannot see a device, domain or place split: there every client
may hold the same classes while its images look different. This module measures the difference in the
*features*, on embeddings of the rows (any fixed embedder), with two distances:

* the **Fréchet distance** of Gaussian fits, as FID computes it on Inception features
  (Heusel et al. 2017, eq. 6): ``|mu1 - mu2|^2 + tr(C1 + C2 - 2 (C1 C2)^(1/2))``;
* the **unbiased squared MMD** (Gretton et al. 2012, eq. 3) with the Gaussian kernel
  ``k(x, y) = exp(-|x - y|^2 / h)``, ``h`` the median squared distance between rows (the median heuristic,
  Gretton et al. 2012, sec. 8): its expectation is exactly 0 when the two samples come from one
  distribution, whatever their sizes, so a split that does not shift features reads near 0 (it can be
  slightly negative). A bounded kernel keeps the estimate's variance small on the few dozen rows a client
  holds of a class (KID's cubic polynomial kernel, Bińkowski et al. 2018, was tried: on 8 x 8 pixel
  embeddings its IID values scattered over +/- 0.4 where the Gaussian kernel's stay within +/- 0.005).

Both are **class-conditional** by default: a client's rows of class c are compared with the other
clients' rows of class c, and the per-class distances are averaged with the client's class counts as
weights. That is feature shift in the sense of FedBN (Li et al. 2021): P(x | y) differing between
clients. A label-only split (Dirichlet over labels) then stays at its IID value, where an unconditional
distance would grow with the label skew (classes look different).

This module is the pairwise estimator of one unit against the rest; the report measures every client at
once, with its IID reference, in :mod:`hetbench.report.unit_shift`, which gives the same Fréchet distance
and, with enough random features, the same MMD^2 (``tests/report/test_feature_report.py``).

References
----------
.. [1] M. Heusel et al., "GANs Trained by a Two Time-Scale Update Rule Converge to a Local Nash
   Equilibrium", NeurIPS 2017, eq. 6 (the Fréchet distance of FID).
.. [2] A. Gretton et al., "A Kernel Two-Sample Test", JMLR 13, 2012, Lemma 6 / eq. 3 (unbiased MMD^2).
.. [3] M. Bińkowski et al., "Demystifying MMD GANs", ICLR 2018, section 3 (KID's polynomial kernel, not used).
.. [4] X. Li et al., "FedBN: Federated Learning on Non-IID Features via Local Batch Normalization",
   ICLR 2021, section 3 (feature shift: P(x | y) varies across clients).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: at most this many reference rows per comparison (a seeded sample): the MMD's cost is quadratic
MAX_REFERENCE = 2000
#: rows of the seeded sample whose median squared distance is the kernel's bandwidth
BANDWIDTH_SAMPLE = 1000


def gaussian_kernel(x: np.ndarray, y: np.ndarray, bandwidth: float) -> np.ndarray:
    """``exp(-|x_i - y_j|^2 / bandwidth)`` for every pair of rows.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import gaussian_kernel
    >>> gaussian_kernel(np.zeros((1, 2)), np.array([[0.0, 0.0], [1.0, 1.0]]), 2.0).round(4).tolist()
    [[1.0, 0.3679]]
    """
    d2 = (x * x).sum(axis=1)[:, None] + (y * y).sum(axis=1)[None, :] - 2.0 * (x @ y.T)
    return np.exp(-np.maximum(d2, 0.0) / bandwidth)


def median_bandwidth(features: np.ndarray, seed: int = 0, rows: int = BANDWIDTH_SAMPLE) -> float:
    """The median squared distance between the rows of a seeded sample of at most ``rows`` rows (1.0 when
    every row is the same): the Gaussian kernel's bandwidth ``h``.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import median_bandwidth
    >>> x = np.random.default_rng(0).normal(size=(3000, 8))
    >>> round(median_bandwidth(x), 1)  # |x - y|^2 is 2 chi^2(8) here: its median is 14.7
    14.3
    """
    x = _sample(features)
    if len(x) > rows:
        x = x[np.sort(np.random.default_rng(seed).choice(len(x), rows, replace=False))]
    sq = (x * x).sum(axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (x @ x.T)
    h = float(np.median(np.maximum(d2[np.triu_indices(len(x), 1)], 0.0)))
    return h if h > 0 else 1.0


def frechet_from_moments(mu_a: np.ndarray, cov_a: np.ndarray, mu_b: np.ndarray, cov_b: np.ndarray) -> float:
    """The Fréchet distance of two Gaussians given by their means and covariances (clipped at 0).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import frechet_from_moments
    >>> round(frechet_from_moments(np.zeros(2), np.eye(2), np.ones(2), 4 * np.eye(2)), 6)  # 2 + 2 * (2 - 1)^2
    4.0
    """
    root = _psd_sqrt(cov_a)
    cross = np.linalg.eigvalsh(root @ cov_b @ root)
    diff = mu_a - mu_b
    value = diff @ diff + np.trace(cov_a) + np.trace(cov_b) - 2.0 * np.sqrt(np.clip(cross, 0.0, None)).sum()
    return max(float(value), 0.0)


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
    return frechet_from_moments(x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False)), y.mean(axis=0),
                                np.atleast_2d(np.cov(y, rowvar=False)))


def mmd2_unbiased(x: np.ndarray, y: np.ndarray, bandwidth: float | None = None) -> float:
    """Unbiased squared MMD with the Gaussian kernel ``exp(-|x - y|^2 / h)``.

    Parameters
    ----------
    x, y : numpy.ndarray
        (n, d) and (m, d) samples, n, m >= 2.
    bandwidth : float, optional
        ``h``; default the :func:`median_bandwidth` of the two samples pooled.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_shift import mmd2_unbiased
    >>> rng = np.random.default_rng(0)
    >>> same = [mmd2_unbiased(rng.normal(size=(50, 4)), rng.normal(size=(60, 4))) for _ in range(200)]
    >>> bool(abs(np.mean(same)) < 0.002), mmd2_unbiased(rng.normal(size=(50, 4)), rng.normal(1.0, 1.0, (60, 4))) > 0.2
    (True, True)
    """
    x, y = _sample(x), _sample(y)
    h = median_bandwidth(np.vstack([x, y])) if bandwidth is None else float(bandwidth)
    n, m = len(x), len(y)
    kxx, kyy, kxy = gaussian_kernel(x, x, h), gaussian_kernel(y, y, h), gaussian_kernel(x, y, h)
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
                      conditional: bool = True, seed: int = 0, max_reference: int = MAX_REFERENCE,
                      bandwidth: float | None = None) -> Shift:
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
    bandwidth : float, optional
        The kernel's ``h``; default the :func:`median_bandwidth` of ``embedding``.

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
    h = median_bandwidth(emb, seed) if bandwidth is None else float(bandwidth)
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
        mmd += w * mmd2_unbiased(emb[a], emb[b], h)
        weight += w
        compared += 1
    if weight == 0:
        return Shift(float("nan"), float("nan"), int(inside.sum()), 0)
    return Shift(frechet / weight, mmd / weight, int(inside.sum()), compared)


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
