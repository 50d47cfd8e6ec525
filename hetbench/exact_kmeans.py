"""K-means whose result is the same on every CPU: integer-exact arithmetic on a fixed-point grid.

Floating-point K-means (scikit-learn's, or any other calling BLAS) is not bit-reproducible across
machines: OpenBLAS picks another matrix kernel on an AVX2 and on an AVX-512 CPU, the kernels sum in
another order, the last bits of the distances differ, and a point near two centres can change
cluster; the Dirichlet split built on the clusters then differs too. Here every quantity K-means
compares is an integer held exactly in float64:

* the points are put on a fixed-point grid, ``q = rint(x * 2**s)`` with the power of two ``s``
  chosen so that ``|q| <= B = floor(sqrt((2**52 - 1) / (4 d)))``;
* the centres live on the same grid (the rounded mean of their members);
* a distance score ``||c||^2 - 2 q.c`` is then a sum of ``d`` products of integers below ``B**2``:
  below ``2**52`` in magnitude, so every partial sum is an exact float64 integer and the BLAS
  kernel's order of summation (or its use of FMA) cannot change it.

The seeding is greedy k-means++ (Arthur & Vassilvitskii 2007, with ``2 + floor(ln k)`` local trials
as scikit-learn does) drawn from a numpy generator, the iterations Lloyd's (or, for large inputs,
mini-batch updates, Sculley 2010); ties go to the lowest centre index. The grid step is
``max|x| / B`` relative: about ``1e-6`` of the data's range for 512-dimensional embeddings, far
below any difference K-means could resolve in float32.

Examples
--------
>>> import numpy as np
>>> from hetbench.exact_kmeans import exact_kmeans
>>> x = np.array([[0.0], [0.1], [5.0], [5.2], [5.1]])
>>> labels, centers, inertia = exact_kmeans(x, 2, seed=0)
>>> labels.tolist(), round(inertia, 3)
([1, 1, 0, 0, 0], 0.025)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

_CHUNK = 16_384  # rows per block of the distance pass


def grid_bound(d: int) -> int:
    """``B = floor(sqrt((2**52 - 1) / (4 d)))``: the largest grid value of a fitted point (module notes)."""
    return math.floor(math.sqrt((2.0**52 - 1) / (4.0 * max(int(d), 1))))


def grid_scale(x: np.ndarray) -> float:
    """The power of two ``2**s`` that puts ``x`` on the integer grid of the module notes.

    Parameters
    ----------
    x : numpy.ndarray
        ``(n, d)`` finite values.

    Examples
    --------
    >>> import numpy as np
    >>> grid_scale(np.ones((3, 4))) == 2.0 ** 23
    True
    """
    bound = grid_bound(x.shape[1])
    top = float(np.max(np.abs(x))) if x.size else 0.0
    if top == 0.0:
        return 1.0
    return 2.0 ** math.floor(math.log2(bound / top))


def to_grid(x: np.ndarray, scale: float) -> np.ndarray:
    """``rint(x * scale)`` as float64 (exact integers)."""
    return np.rint(np.asarray(x, dtype=np.float64) * scale)


def _scores(q: np.ndarray, c: np.ndarray, c_sq: np.ndarray) -> np.ndarray:
    """``||c||^2 - 2 q.c`` for every point and centre: exact integers (module notes)."""
    return c_sq[None, :] - 2.0 * (q @ c.T)


def assign(q: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre (lowest index on ties) and the exact squared distance to it, per point.

    Parameters
    ----------
    q, c : numpy.ndarray
        Points ``(n, d)`` and centres ``(k, d)`` on the grid (integer-valued float64).

    Examples
    --------
    >>> import numpy as np
    >>> labels, dist = assign(np.array([[0.0], [4.0], [2.0]]), np.array([[0.0], [4.0]]))
    >>> labels.tolist(), dist.tolist()
    ([0, 1, 0], [0.0, 0.0, 4.0])
    """
    c_sq = np.einsum("ij,ij->i", c, c)
    labels = np.empty(q.shape[0], dtype=np.int64)
    dist = np.empty(q.shape[0], dtype=np.float64)
    for start in range(0, q.shape[0], _CHUNK):
        block = q[start : start + _CHUNK]
        score = _scores(block, c, c_sq)
        lab = np.argmin(score, axis=1)
        labels[start : start + block.shape[0]] = lab
        q_sq = np.einsum("ij,ij->i", block, block)
        dist[start : start + block.shape[0]] = np.maximum(q_sq + score[np.arange(block.shape[0]), lab], 0.0)
    return labels, dist


def _sq_dist_to(q: np.ndarray, point: np.ndarray) -> np.ndarray:
    diff = q - point[None, :]
    return np.einsum("ij,ij->i", diff, diff)


def kmeans_plus_plus(q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Greedy k-means++ seeding on grid points: ``(k, d)`` centres chosen among the points.

    Each new centre is the best (lowest potential) of ``2 + floor(ln k)`` candidates drawn with
    probability proportional to the squared distance to the nearest centre so far.

    Examples
    --------
    >>> import numpy as np
    >>> q = np.array([[0.0], [1.0], [100.0], [101.0]])
    >>> sorted(kmeans_plus_plus(q, 2, np.random.default_rng(0)).ravel().tolist())[0] < 50
    True
    """
    n = q.shape[0]
    trials = 2 + int(math.log(k))
    centers = np.empty((k, q.shape[1]), dtype=np.float64)
    first = int(rng.integers(n))
    centers[0] = q[first]
    closest = _sq_dist_to(q, centers[0])
    for i in range(1, k):
        total = float(np.sum(closest))
        if total <= 0.0:  # fewer distinct points than centres: repeat points
            centers[i:] = q[rng.integers(n, size=k - i)]
            break
        cum = np.cumsum(closest)
        picks = np.minimum(np.searchsorted(cum, rng.random(trials) * cum[-1], side="right"), n - 1)
        best, best_pot, best_dist = -1, math.inf, closest
        for p in picks.tolist():
            cand = np.minimum(closest, _sq_dist_to(q, q[p]))
            pot = float(np.sum(cand))
            if pot < best_pot:
                best, best_pot, best_dist = p, pot, cand
        centers[i] = q[best]
        closest = best_dist
    return centers


def _mean_on_grid(q: np.ndarray, labels: np.ndarray, k: int, old: np.ndarray) -> np.ndarray:
    """Rounded mean of every cluster's members (the old centre for an empty cluster)."""
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    sums = np.zeros((k, q.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, q)  # integer sums below 2**53: exact in any order
    out = old.copy()
    full = counts > 0
    out[full] = np.rint(sums[full] / counts[full, None])
    return out


def _relocate_empty(q: np.ndarray, labels: np.ndarray, dist: np.ndarray, centers: np.ndarray) -> bool:
    """Move every empty cluster's centre onto the farthest point (ties: lowest index); True if any moved."""
    k = centers.shape[0]
    empty = np.flatnonzero(np.bincount(labels, minlength=k) == 0)
    if empty.size == 0:
        return False
    far = np.lexsort((np.arange(dist.size), -dist))[: empty.size]
    centers[empty[: far.size]] = q[far]
    return True


def lloyd(q: np.ndarray, centers: np.ndarray, max_iter: int, on_step: Callable[[float], None] | None = None):
    """Lloyd iterations on grid points until no label changes (or ``max_iter``): labels, centres, distances."""
    k = centers.shape[0]
    labels, dist = assign(q, centers)
    for _ in range(max_iter):
        if _relocate_empty(q, labels, dist, centers):
            labels, dist = assign(q, centers)
        new = _mean_on_grid(q, labels, k, centers)
        new_labels, new_dist = assign(q, new)
        centers = new
        if on_step is not None:
            on_step(float(np.sum(new_dist)))
        if np.array_equal(new_labels, labels):
            labels, dist = new_labels, new_dist
            break
        labels, dist = new_labels, new_dist
    return labels, centers, dist


def minibatch(q: np.ndarray, centers: np.ndarray, rng: np.random.Generator, batch: int, steps: int,
              on_step: Callable[[float], None] | None = None) -> np.ndarray:
    """Mini-batch updates (Sculley 2010, per-centre learning rate ``1 / count``) on grid points:
    each step moves a centre to the rounded weighted mean of its old position (weight: points seen)
    and its members in the batch. Returns the centres."""
    k = centers.shape[0]
    seen = np.zeros(k, dtype=np.float64)
    for _ in range(steps):
        rows = np.sort(rng.choice(q.shape[0], size=batch, replace=False))
        part = q[rows]
        lab, dist = assign(part, centers)
        counts = np.bincount(lab, minlength=k).astype(np.float64)
        sums = np.zeros_like(centers)
        np.add.at(sums, lab, part)
        moved = counts > 0
        total = seen[moved] + counts[moved]
        centers = centers.copy()
        centers[moved] = np.rint((centers[moved] * seen[moved, None] + sums[moved]) / total[:, None])
        seen[moved] = total
        if on_step is not None:
            on_step(float(np.sum(dist)) / batch)
    return centers


@dataclass(frozen=True)
class KMeansFit:
    """A fitted clustering: the grid scale and the centres on the grid.

    :meth:`predict` puts new points on the same grid, clipped to ``1.5 B`` (module notes: the
    distance scores stay exact integers up to there; a point beyond is far outside the fitted data
    and is still assigned by one fixed rule), and returns the nearest centre of each.
    """

    scale: float
    grid_centers: np.ndarray

    @property
    def centers(self) -> np.ndarray:
        """The centres in the units of the data (float32)."""
        return (self.grid_centers / self.scale).astype(np.float32)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Nearest centre of every row of ``x`` (int64, lowest index on ties)."""
        x = np.asarray(x, dtype=np.float64)
        limit = 1.5 * grid_bound(x.shape[1])
        return assign(np.clip(to_grid(x, self.scale), -limit, limit), self.grid_centers)[0]


def exact_kmeans(
    x: np.ndarray, k: int, seed: int, method: str = "lloyd", max_iter: int = 300, batch_size: int = 2048,
    on_step: Callable[[float], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Seeded K-means, identical on every CPU (module notes).

    Parameters
    ----------
    x : numpy.ndarray
        ``(n, d)`` finite points.
    k : int
        Clusters (``1 <= k <= n``).
    seed : int
        Seed of the k-means++ draws and the mini-batches.
    method : {"lloyd", "minibatch"}
        Full Lloyd iterations, or ten epochs of mini-batch steps followed by Lloyd iterations from
        the mini-batch centres until no label changes (at most 10).
    max_iter : int
        At most this many Lloyd iterations.
    batch_size : int
        Mini-batch size.
    on_step : callable, optional
        Called after every iteration (step) with the inertia (batch inertia per point), on the grid.

    Returns
    -------
    (labels, fit, inertia)
        Labels int64 (not renumbered), the :class:`KMeansFit` (centres, grid) and the exact inertia
        of the labels for those centres, in the units of ``x`` squared (computed on the grid).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(0, 1, (50, 2)), rng.normal(20, 1, (50, 2))])
    >>> a = exact_kmeans(x, 2, seed=3)
    >>> b = exact_kmeans(x, 2, seed=3, method="minibatch", batch_size=16, max_iter=2)
    >>> sorted(np.bincount(a[0]).tolist()), np.array_equal(a[0], b[0]) or np.array_equal(a[0], 1 - b[0])
    ([50, 50], True)
    """
    x = np.asarray(x, dtype=np.float64)
    scale = grid_scale(x)
    q = to_grid(x, scale)
    rng = np.random.default_rng(int(seed) % (2**32))
    centers = kmeans_plus_plus(q, int(k), rng)
    if method == "minibatch":
        batch = min(int(batch_size), q.shape[0])
        centers = minibatch(q, centers, rng, batch, max(1, 10 * q.shape[0] // batch), on_step)
        max_iter = min(int(max_iter), 10)
    labels, centers, dist = lloyd(q, centers, int(max_iter), on_step)
    inertia = float(np.sum(dist)) / (scale * scale)
    return labels, KMeansFit(scale, centers), inertia


__all__ = ["exact_kmeans", "KMeansFit", "grid_bound", "assign", "grid_scale", "to_grid", "kmeans_plus_plus", "lloyd", "minibatch"]


@dataclass(frozen=True)
class GridPCA:
    """A principal-component projection that is the same on every CPU (up to the eigen-solver).

    The covariance is summed exactly (points on a ``2**16`` grid, float64 products summed per block
    of ``2**20`` rows, blocks added as int64); the eigenvectors (LAPACK ``eigh``, largest first) get
    the sign that makes their largest entry positive and are rounded to a ``2**-20`` grid; the
    projection of grid points onto them is again a sum of exact integer products. Only the
    eigen-solver is floating point: its last-bit differences between CPUs move a rounded entry only
    when it lies within about ``1e-16`` of a rounding boundary, or when two eigenvalues are equal to
    about that precision.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(200, 6)) * [5, 4, 3, 2, 1, 0.5]
    >>> p = GridPCA.fit(x, 2)
    >>> p.transform(x).shape, abs(float(np.corrcoef(p.transform(x)[:, 0], x[:, 0])[0, 1])) > 0.9
    ((200, 2), True)
    """

    scale: float
    components: np.ndarray  # (d, dim) integers: the eigenvectors times 2**20

    @classmethod
    def fit(cls, z: np.ndarray, dim: int) -> "GridPCA":
        """Fit ``dim`` components to ``z`` (n, d), whose columns are already centred."""
        z = np.asarray(z, dtype=np.float64)
        top = float(np.max(np.abs(z))) if z.size else 0.0
        scale = 2.0 ** math.floor(math.log2(2**16 / top)) if top > 0 else 1.0
        q = np.rint(z * scale)
        cov = np.zeros((z.shape[1], z.shape[1]), dtype=np.int64)
        for start in range(0, q.shape[0], 2**20):  # |q| <= 2**16: a block's sums stay below 2**52
            block = q[start : start + 2**20]
            cov += (block.T @ block).astype(np.int64)
        _, vectors = np.linalg.eigh(cov.astype(np.float64))
        vectors = vectors[:, ::-1][:, : int(dim)]
        flip = np.sign(vectors[np.argmax(np.abs(vectors), axis=0), np.arange(vectors.shape[1])])
        return cls(scale, np.rint(vectors * flip[None, :] * 2.0**20))

    def transform(self, z: np.ndarray) -> np.ndarray:
        """Project ``z`` (n, d) onto the components: (n, dim) float32."""
        q = np.clip(np.rint(np.asarray(z, dtype=np.float64) * self.scale), -(2.0**17), 2.0**17)
        return ((q @ self.components) / (self.scale * 2.0**20)).astype(np.float32)


__all__ += ["GridPCA"]
