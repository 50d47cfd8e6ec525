"""Clustering helpers for the embedding partitioner (pure numpy / scikit-learn).

* :func:`zeta` - the clustering similarity of Borazjani et al. (Eq. 4), i.e. the Rand index,
  computed exactly from the contingency table.
* :func:`kmeans` - seeded K-means (Lloyd for small inputs, mini-batch for large ones) whose labels
  and inertia are always exact for the returned centres, with deterministic cluster numbering.
* :func:`standardise`, :func:`pca` - the preprocessing applied before K-means.
"""

from __future__ import annotations

import io

import numpy as np

from hetbench.errors import HetbenchError

KMEANS_METHODS = ("auto", "lloyd", "minibatch")
#: above this many points ``method="auto"`` switches from full Lloyd to mini-batch K-means
MINIBATCH_THRESHOLD = 20_000
MINIBATCH_BATCH_SIZE = 2048
MINIBATCH_N_INIT = 3
_CHUNK = 65_536  # rows per block in the exact assignment pass


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
        raise HetbenchError(f"--pca-dim must be at least 1 (got {dim})")
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
def assign_to_centers(x: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, float]:
    """Nearest centre per point (int64, ties to the lowest index) and the exact inertia (float64).

    Works in row blocks so memory stays at ``_CHUNK * k`` distances.
    """
    x = np.asarray(x, dtype=np.float32)
    c = np.asarray(centers, dtype=np.float32)
    c_sq = np.einsum("ij,ij->i", c, c, dtype=np.float64)
    labels = np.empty(x.shape[0], dtype=np.int64)
    inertia = 0.0
    for start in range(0, x.shape[0], _CHUNK):
        block = x[start : start + _CHUNK]
        # ||c||^2 - 2 x.c ranks the centres (||x||^2 is constant per row)
        score = c_sq[None, :] - 2.0 * (block @ c.T).astype(np.float64)
        lab = np.argmin(score, axis=1)
        labels[start : start + block.shape[0]] = lab
        # exact: the float64 difference to the chosen centre (the expanded form cancels in float32)
        for a in range(0, block.shape[0], 4096):  # 4096 x d float64 at a time
            diff = block[a : a + 4096].astype(np.float64) - c[lab[a : a + 4096]].astype(np.float64)
            inertia += float(np.einsum("ij,ij->", diff, diff))
    return labels, inertia


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


class _VerboseLines(io.TextIOBase):
    """A stdout for scikit-learn's verbose Lloyd fit: each ``Iteration i, inertia v.`` line advances ``bar``;
    every other line is dropped."""

    def __init__(self, bar) -> None:
        self._bar, self._buf = bar, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buf += text
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            if line.startswith("Iteration "):
                inertia = line.rpartition("inertia ")[2].rstrip(".")
                self._bar.update(advance=1, status=f"inertia {float(inertia):.4g}" if _is_float(inertia) else None)
        return len(text)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _reporting_minibatch():
    """``MiniBatchKMeans`` that calls ``self._on_step(batch inertia)`` after every step (the same fit)."""
    from sklearn.cluster import MiniBatchKMeans

    class ReportingMiniBatchKMeans(MiniBatchKMeans):
        _on_step = None

        def _mini_batch_convergence(self, step, n_steps, n_samples, centers_squared_diff, batch_inertia):
            stop = super()._mini_batch_convergence(step, n_steps, n_samples, centers_squared_diff, batch_inertia)
            if self._on_step is not None:
                self._on_step(float(batch_inertia) / self._batch_size)
            return stop

    return ReportingMiniBatchKMeans


def kmeans(
    x: np.ndarray, k: int, seed: int, method: str = "auto", quiet: bool | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Seeded K-means: (labels int64, centers float32 (k, d), inertia float).

    ``method="lloyd"`` is scikit-learn's ``KMeans`` (k-means++, one init); ``"minibatch"`` is
    ``MiniBatchKMeans`` (k-means++, ``n_init=3``, batch 2048); ``"auto"`` picks mini-batch above
    20,000 points. Either way the result ends with one exact assignment pass over all points, so
    labels and inertia are exact for the returned centres, and clusters are renumbered by size
    (largest first, ties by smallest member index). No standardisation is done here.

    Unless ``quiet`` (None: as :func:`hetbench.progress.show_progress` says), a progress bar counts
    Lloyd iterations or mini-batch steps up to scikit-learn's cap (300 iterations; 100 epochs of
    mini-batches) and shows the latest inertia; it completes when the fit converges earlier. The bar
    only reads what the fit reports (Lloyd's verbose lines, the mini-batch convergence check), so
    the clustering is the same with or without it.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.clustering import kmeans
    >>> x = np.array([[0.0], [0.1], [5.0], [5.2], [5.1]], np.float32)
    >>> labels, centers, inertia = kmeans(x, 2, seed=0)
    >>> labels.tolist(), [round(float(c), 2) for c in centers.ravel()]
    ([1, 1, 0, 0, 0], [5.1, 0.05])
    """
    from sklearn.cluster import KMeans, MiniBatchKMeans

    if method not in KMEANS_METHODS:
        raise HetbenchError(f"unknown k-means method '{method}'; choose one of: {', '.join(KMEANS_METHODS)}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise HetbenchError(f"embeddings must be a 2-D array (got shape {x.shape})")
    n = x.shape[0]
    k = int(k)
    if k < 1:
        raise HetbenchError(f"--clusters must be at least 1 (got {k})")
    if k > n:
        raise HetbenchError(f"more clusters ({k}) than samples ({n})")
    if not np.all(np.isfinite(x)):
        raise HetbenchError("embeddings contain NaN or infinite values")
    seed = int(seed) % (2**32)
    if method == "auto":
        method = "minibatch" if n > MINIBATCH_THRESHOLD else "lloyd"
    import warnings

    from hetbench.progress import is_quiet, progress_bar

    shown = not is_quiet(quiet)
    with warnings.catch_warnings():
        # fewer distinct points than k: sklearn warns and returns duplicate centres; that is fine
        warnings.simplefilter("ignore")
        if method == "minibatch":
            batch = min(MINIBATCH_BATCH_SIZE, n)
            model = (_reporting_minibatch() if shown else MiniBatchKMeans)(
                n_clusters=k,
                init="k-means++",
                n_init=MINIBATCH_N_INIT,
                batch_size=batch,
                random_state=seed,
            )
            cap, unit = (model.max_iter * n) // batch, "step"
        else:
            model = KMeans(n_clusters=k, init="k-means++", n_init=1, algorithm="lloyd", random_state=seed,
                           verbose=int(shown))
            cap, unit = model.max_iter, "iteration"
        with progress_bar(f"k-means: {k} clusters ({method})", cap, quiet=not shown, unit=unit) as bar:
            if shown and method == "minibatch":
                model._on_step = lambda inertia: bar.update(advance=1, status=f"batch inertia {inertia:.4g}")
                model.fit(x)
            elif shown:
                import contextlib

                with contextlib.redirect_stdout(_VerboseLines(bar)):  # Lloyd reports each iteration in print()
                    model.fit(x)
            else:
                model.fit(x)
            bar.finish()  # converged before the cap: the bar ends full
    centers = np.asarray(model.cluster_centers_, dtype=np.float32)
    labels, inertia = assign_to_centers(x, centers)
    perm = relabel_by_size(labels, k)
    new_centers = np.empty_like(centers)
    new_centers[perm] = centers
    return perm[labels], new_centers, inertia
