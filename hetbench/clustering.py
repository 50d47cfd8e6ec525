"""Clustering helpers for the embedding partitioner (pure numpy / scikit-learn).

* :func:`zeta` - the clustering similarity of Borazjani et al. (Eq. 4), i.e. the Rand index,
  computed exactly from the contingency table.
* :func:`kmeans_fit` / :func:`kmeans` - seeded K-means (Lloyd for small inputs, mini-batch for large
  ones), integer-exact so that it gives the same clusters on every CPU
  (:mod:`hetbench.exact_kmeans`), with deterministic cluster numbering.
* :func:`standardise`, :func:`pca` - the preprocessing applied before K-means.
"""

from __future__ import annotations

import numpy as np

from hetbench.errors import HetbenchError

KMEANS_METHODS = ("auto", "lloyd", "minibatch")
#: above this many points ``method="auto"`` switches from full Lloyd to mini-batch K-means
MINIBATCH_THRESHOLD = 20_000
MINIBATCH_BATCH_SIZE = 2048


# ---- clustering similarity --------------------------------------------------------------------
def _pairs(x: np.ndarray) -> int:
    """sum over x of C(x, 2), exactly, in int64 (x <= 1e6 gives < 5e11 per term)."""
    x = np.asarray(x, dtype=np.int64)
    return int(np.sum(x * (x - 1) // 2, dtype=np.int64))


def zeta(a, b) -> float:
    """Borazjani et al.'s clustering similarity zeta (Eq. 4), which is the Rand index.

    Eq. 4 sums the agreement indicator over *ordered* pairs (d, d'), d != d', and divides by
    2 * C(n, 2); every unordered pair is counted twice above and below, so this equals the fraction of
    unordered pairs of distinct samples on which the clusterings agree (together in both, or apart in
    both). Computed from the contingency table in O(n + k1 * k2):

        agree = C(n,2) + 2 * sum_ij C(n_ij,2) - sum_i C(a_i,2) - sum_j C(b_j,2)

    Labels may be any hashable numpy-comparable values (ints, strings). ``n < 2`` gives 1.0.
    """
    a = np.asarray(a).ravel()
    b = np.asarray(b).ravel()
    if a.size != b.size:
        raise ValueError(f"clusterings have different lengths ({a.size} and {b.size})")
    n = int(a.size)
    if n < 2:
        return 1.0
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    ia = ia.ravel().astype(np.int64)
    ib = ib.ravel().astype(np.int64)
    kb = int(ib.max()) + 1
    ka = int(ia.max()) + 1
    # sparse contingency table: only the occupied cells (at most min(n, ka*kb) of them)
    cells = np.bincount(ia * kb + ib, minlength=ka * kb) if ka * kb <= 4 * n + 1024 else np.unique(
        ia * kb + ib, return_counts=True
    )[1]
    together_both = _pairs(cells)
    together_a = _pairs(np.bincount(ia, minlength=ka))
    together_b = _pairs(np.bincount(ib, minlength=kb))
    total = n * (n - 1) // 2
    agree = total + 2 * together_both - together_a - together_b
    return float(agree) / float(total)


# ---- preprocessing ----------------------------------------------------------------------------
def standardise(x: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance per column (float32); constant columns become all zeros."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise HetbenchError(f"embeddings must be a 2-D array (got shape {x.shape})")
    x64 = x.astype(np.float64, copy=False)
    mean = x64.mean(axis=0) if x.shape[0] else np.zeros(x.shape[1])
    std = x64.std(axis=0) if x.shape[0] else np.ones(x.shape[1])
    scale = np.where(std > 0, std, 1.0)
    out = (x64 - mean) / scale
    out[:, ~(std > 0)] = 0.0
    return out.astype(np.float32)


def pca(x: np.ndarray, dim: int, seed: int = 0) -> np.ndarray:
    """Project onto the top ``dim`` principal components (float32).

    Randomized SVD when ``dim < min(n, d)``; otherwise an exact SVD keeping ``min(n, d)``
    components. ``dim >= d`` returns the input unchanged (a rotation does not change K-means).
    """
    from sklearn.decomposition import PCA

    dim = int(dim)
    if dim < 1:
        raise HetbenchError(f"`pca_dim` must be at least 1 (got {dim})")
    x = np.asarray(x, dtype=np.float32)
    n, d = x.shape
    if dim >= d:
        return x
    if dim < min(n, d):
        model = PCA(n_components=dim, svd_solver="randomized", random_state=int(seed))
    else:
        model = PCA(n_components=min(n, d), svd_solver="full")
    return model.fit_transform(x).astype(np.float32)


# ---- K-means ----------------------------------------------------------------------------------
def relabel_by_size(labels: np.ndarray, k: int) -> np.ndarray:
    """Permutation ``perm`` (old id -> new id): clusters by size descending, ties by smallest member
    index; empty clusters last, in their old order."""
    n = labels.size
    sizes = np.bincount(labels, minlength=k)
    first = np.full(k, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n, dtype=np.int64))
    order = np.lexsort((np.arange(k), first, -sizes))  # new id -> old id
    perm = np.empty(k, dtype=np.int64)
    perm[order] = np.arange(k)
    return perm


def kmeans_fit(
    x: np.ndarray, k: int, seed: int, method: str = "auto", quiet: bool | None = None
) -> tuple[np.ndarray, "KMeansFit", float]:
    """Seeded K-means, the same on every CPU: (labels int64, :class:`~hetbench.exact_kmeans.KMeansFit`,
    inertia float).

    The arithmetic is integer-exact on a fixed-point grid (:mod:`hetbench.exact_kmeans`), so the
    labels do not depend on which BLAS kernel the CPU selects. ``method="lloyd"`` is greedy
    k-means++ seeding and Lloyd iterations (at most 300) until no label changes; ``"minibatch"``
    is ten epochs of mini-batches of 2048 (Sculley 2010) then Lloyd iterations (at most 10);
    ``"auto"`` picks mini-batch above 20,000 points. Clusters are renumbered by size (largest
    first, ties by smallest member index), and the fit's centres follow that numbering.

    Unless ``quiet`` (None: as :func:`hetbench.progress.show_progress` says), a progress bar counts
    iterations (mini-batch steps) up to the cap and shows the latest inertia; it completes when the
    fit converges earlier.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.clustering import kmeans_fit
    >>> x = np.array([[0.0], [0.1], [5.0], [5.2], [5.1]], np.float32)
    >>> labels, fit, inertia = kmeans_fit(x, 2, seed=0)
    >>> labels.tolist(), fit.predict(np.array([[4.0], [-1.0]])).tolist()
    ([1, 1, 0, 0, 0], [0, 1])
    """
    from hetbench.exact_kmeans import KMeansFit, exact_kmeans
    from hetbench.progress import is_quiet, progress_bar

    if method not in KMEANS_METHODS:
        raise HetbenchError(f"unknown k-means method '{method}'; choose one of: {', '.join(KMEANS_METHODS)}")
    x = np.asarray(x)
    if x.ndim != 2:
        raise HetbenchError(f"embeddings must be a 2-D array (got shape {x.shape})")
    n = x.shape[0]
    k = int(k)
    if k < 1:
        raise HetbenchError(f"`clusters` must be at least 1 (got {k})")
    if k > n:
        raise HetbenchError(f"more clusters ({k}) than samples ({n})")
    if not np.all(np.isfinite(x)):
        raise HetbenchError("embeddings contain NaN or infinite values")
    if method == "auto":
        method = "minibatch" if n > MINIBATCH_THRESHOLD else "lloyd"
    batch = min(MINIBATCH_BATCH_SIZE, n)
    cap, unit = ((max(1, 10 * n // batch) + 10, "step") if method == "minibatch" else (300, "iteration"))
    shown = not is_quiet(quiet)
    with progress_bar(f"k-means: {k} clusters ({method})", cap, quiet=not shown, unit=unit) as bar:
        labels, fit, inertia = exact_kmeans(
            x, k, int(seed), method=method, batch_size=batch,
            on_step=(lambda v: bar.update(advance=1, status=f"inertia {v:.4g}")) if shown else None)
        bar.finish()  # converged before the cap: the bar ends full
    perm = relabel_by_size(labels, k)
    grid = np.empty_like(fit.grid_centers)
    grid[perm] = fit.grid_centers
    return perm[labels], KMeansFit(fit.scale, grid), inertia


def kmeans(
    x: np.ndarray, k: int, seed: int, method: str = "auto", quiet: bool | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Seeded K-means (:func:`kmeans_fit`): (labels int64, centers float32 (k, d), inertia float).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.clustering import kmeans
    >>> x = np.array([[0.0], [0.1], [5.0], [5.2], [5.1]], np.float32)
    >>> labels, centers, inertia = kmeans(x, 2, seed=0)
    >>> labels.tolist(), [round(float(c), 2) for c in centers.ravel()]
    ([1, 1, 0, 0, 0], [5.1, 0.05])
    """
    labels, fit, inertia = kmeans_fit(x, k, seed, method, quiet)
    return labels, fit.centers, inertia
