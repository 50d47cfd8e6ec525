"""Embedding-based Dirichlet split (Borazjani et al., "embedding-based non-IID", section III).

Each sample is embedded (by :func:`hetbench.embed.embed_table`), the embeddings are standardised
(and optionally reduced with PCA), clustered with K-means into ``clusters`` groups, and the
label-Dirichlet of :class:`~hetbench.partitioners.dirichlet.DirichletPartitioner` (either scheme) is
applied with the *cluster id* in place of the class label. ``alpha`` small gives clients few
clusters; ``alpha`` large gives every client nearly the population's cluster mix.

The K-means seed is the first integer drawn from the partition's generator, so the whole split
(clusters included) is fixed by the recipe and the seed. After :meth:`partition` the cluster id of
every row is in ``last_clusters[split]`` so the builder can add a ``cluster`` column.

Embedder specs are resolved by ``hetbench.embed``. As a fallback for when that module is not
available, a spec ``"column:NAME"`` is read here directly: NAME must be a column of fixed-length
numeric lists (or a scalar numeric column, giving 1-D embeddings).
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.clustering import KMEANS_METHODS, kmeans, pca, standardise
from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, default_client_names
from hetbench.partitioners._alloc import assign_from_counts
from hetbench.partitioners.base import Partitioner
from hetbench.partitioners.dirichlet import SCHEMES, DirichletPartitioner


def read_embedding_column(table, split: str, name: str) -> np.ndarray:
    """A column of fixed-length numeric lists (or numbers) as an (n, d) float32 array."""
    import pyarrow as pa

    from hetbench.table import arrow_column

    col = arrow_column(table.splits[split], name)
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    n = len(col)
    if col.null_count:
        raise HetbenchError(f"embedding column '{name}' has {col.null_count} missing values")
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or pa.types.is_fixed_size_list(col.type):
        if pa.types.is_fixed_size_list(col.type):
            d = col.type.list_size
        else:
            lengths = np.asarray(col.value_lengths())
            d = int(lengths[0]) if n else 0
            if n and np.any(lengths != d):
                raise HetbenchError(f"embedding column '{name}' has vectors of different lengths")
        values = col.flatten()
        if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
            raise HetbenchError(f"embedding column '{name}' must hold numbers (got {values.type})")
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(n, d)
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(n, 1)
    raise HetbenchError(f"embedding column '{name}' must hold numeric vectors (got {col.type})")


def compute_embeddings(table, split: str, spec: str, layer: str | None = None) -> np.ndarray:
    """``hetbench.embed.embed_table(table, split, spec, layer)``; ``column:NAME`` read here if that
    module is missing."""
    try:
        from hetbench.embed import embed_table
    except ImportError:
        if isinstance(spec, str) and spec.startswith("column:"):
            return read_embedding_column(table, split, spec[len("column:") :])
        raise HetbenchError(
            f"embedder '{spec}' needs hetbench.embed, which is not available; use 'column:NAME'"
        ) from None
    return np.asarray(embed_table(table, split, spec, layer=layer), dtype=np.float32)


def embedding_cache_key(table, split: str, spec: str, layer: str | None) -> str:
    """Names a cached embedding: input fingerprint, split, embedder, layer and hetbench version."""
    import hashlib

    from hetbench import __version__

    return hashlib.sha256(f"{table.fingerprint}|{split}|{spec}|{layer}|{__version__}".encode()).hexdigest()[:20]


def embed_rows(table, split: str, spec: str, layer: str | None = None, cache_dir=None) -> np.ndarray:
    """One embedding row per row of ``split``; a clear error if the embedder returns another shape.
    With ``cache_dir``, an embedding saved there under the same key is loaded instead of computed."""
    n = table.num_rows(split)
    cached = None
    if cache_dir is not None:
        from pathlib import Path

        path = Path(cache_dir) / f"{embedding_cache_key(table, split, spec, layer)}.npy"
        if path.is_file():
            cached = np.load(path)
    x = cached if cached is not None else compute_embeddings(table, split, spec, layer)
    if x.ndim != 2 or x.shape[0] != n:
        raise HetbenchError(f"embedder '{spec}' gave an array of shape {x.shape} for {n} rows of split '{split}'")
    return x


class EmbeddingPartitioner(Partitioner):
    """Dirichlet over K-means clusters of sample embeddings; see the module docstring."""

    name = "embedding"

    def __init__(
        self,
        num_clients: int = 10,
        alpha: float = 0.1,
        clusters: int = 10,
        scheme: str = "client",
        embedder: str = "task",
        pca_dim: int | None = None,
        min_size: int = 0,
        kmeans: str = "auto",
        layer: str | None = None,
    ) -> None:
        # the Dirichlet partitioner validates num_clients, alpha, scheme and min_size
        self._dirichlet = DirichletPartitioner(num_clients, alpha, scheme, min_size=min_size)
        if int(clusters) < 1:
            raise HetbenchError(f"--clusters must be at least 1 (got {clusters})")
        if pca_dim is not None and int(pca_dim) < 1:
            raise HetbenchError(f"--pca-dim must be at least 1 (got {pca_dim})")
        if kmeans not in KMEANS_METHODS:
            raise HetbenchError(f"unknown --kmeans '{kmeans}'; choose one of: {', '.join(KMEANS_METHODS)}")
        if not isinstance(embedder, str) or not embedder:
            raise HetbenchError("--embedder must be a non-empty string")
        self.num_clients = int(num_clients)
        self.alpha = self._dirichlet.alpha
        self.clusters = int(clusters)
        self.scheme = scheme
        self.embedder = embedder
        self.pca_dim = None if pca_dim is None else int(pca_dim)
        self.min_size = int(min_size)
        self.kmeans = kmeans
        self.layer = layer
        #: a folder of cached embeddings (``<key>.npy``) to reuse; not part of the recipe
        self.cache_dir = None
        #: split -> float32 embedding per row (before standardising), filled by :meth:`partition`
        self.last_embedding: dict[str, np.ndarray] = {}
        #: the fit of the partitioned split: column means, scales, PCA, K-means centres
        self._fit: tuple | None = None
        #: split -> int64 cluster id per row, filled by :meth:`partition`
        self.last_clusters: dict[str, np.ndarray] = {}
        #: split -> exact K-means inertia of the last clustering
        self.last_inertia: dict[str, float] = {}

    def params(self) -> dict:
        return {
            "num_clients": self.num_clients,
            "alpha": "inf" if math.isinf(self.alpha) else self.alpha,
            "clusters": self.clusters,
            "scheme": self.scheme,
            "embedder": self.embedder,
            "pca_dim": self.pca_dim,
            "min_size": self.min_size,
            "kmeans": self.kmeans,
            "layer": self.layer,
        }

    def _embed(self, table, split: str) -> np.ndarray:
        x = embed_rows(table, split, self.embedder, self.layer, self.cache_dir)
        self.last_embedding[split] = x
        return x

    def cluster_labels(self, table, split: str, rng_seed: int) -> np.ndarray:
        """Cluster id (int64, 0 = largest cluster) of every row of ``split``: embed, standardise,
        optional PCA, K-means with seed ``rng_seed``. The fit is kept for :meth:`predict_clusters`."""
        n = table.num_rows(split)
        if self.clusters > n:
            raise HetbenchError(f"more clusters ({self.clusters}) than samples ({n}) in split '{split}'")
        x = self._embed(table, split)
        mean = x.mean(axis=0, dtype=np.float64).astype(np.float32)
        scale = x.std(axis=0, dtype=np.float64).astype(np.float32)
        scale[scale == 0] = 1.0
        z = (x - mean) / scale
        reducer = None
        if self.pca_dim is not None and self.pca_dim < min(z.shape):
            from sklearn.decomposition import PCA

            reducer = PCA(n_components=self.pca_dim, svd_solver="randomized", random_state=rng_seed).fit(z)
            z = reducer.transform(z).astype(np.float32)
        labels, centers, inertia = kmeans(z, self.clusters, seed=rng_seed, method=self.kmeans)
        self._fit = (mean, scale, reducer, centers)
        self.last_inertia[split] = inertia
        return labels

    def predict_clusters(self, table, split: str) -> np.ndarray:
        """Cluster ids of another split (e.g. a test split) under the partitioned split's fit:
        the same standardisation and PCA, the nearest of the same K-means centres."""
        if self._fit is None:
            raise HetbenchError("partition a split before predicting clusters of another")
        mean, scale, reducer, centers = self._fit
        z = (self._embed(table, split) - mean) / scale
        if reducer is not None:
            z = reducer.transform(z).astype(np.float32)
        d = (z * z).sum(1)[:, None] - 2.0 * z @ centers.T + (centers * centers).sum(1)[None, :]
        return np.argmin(d, axis=1).astype(np.int64)

    def _assign(self, table, split, rng):
        kseed = int(rng.integers(0, 2**31 - 1))
        cluster_ids = self.cluster_labels(table, split, kseed)
        self.last_clusters[split] = cluster_ids
        counts = self._dirichlet.client_counts(cluster_ids, self.clusters, rng)
        assignment, reason = assign_from_counts(cluster_ids, counts, rng, DropReason.CLASS_UNASSIGNED)
        return assignment, reason, self.num_clients, default_client_names(self.num_clients)


__all__ = ["EmbeddingPartitioner", "compute_embeddings", "embed_rows", "embedding_cache_key", "read_embedding_column", "SCHEMES"]
