"""Embedding-based Dirichlet split (Borazjani et al., "embedding-based non-IID", section III).

Each sample is embedded (by :func:`hetbench.embed.embed_table`), the embeddings are standardised
(and optionally reduced with PCA), clustered with K-means into ``clusters`` groups, and the
label-Dirichlet of :class:`~hetbench.partitioners.dirichlet.DirichletPartitioner` (either scheme) is
applied with the *cluster id* in place of the class label. ``alpha`` small gives clients few
clusters; ``alpha`` large gives every client nearly the population's cluster mix.

The K-means seed is the first integer drawn from the partition's generator, so the whole split
(clusters included) is fixed by the recipe and the seed. After :meth:`EmbeddingPartitioner.partition`
the cluster id of every row is in ``last_clusters[split]``;
:meth:`EmbeddingPartitioner.derive_columns` adds it to the split as a ``cluster`` column (so
``hetbench verify`` re-derives it) and :func:`hetbench.report.embedding.embedding_extras` reports it,
with its plots. The embeddings themselves are stored in the folder
(:mod:`hetbench.publish.embeddings`), and ``hetbench verify`` re-derives the split from them
(:attr:`EmbeddingPartitioner.stored_embeddings`): everything after the embedding is the same on
every CPU, the embedding itself (a trained network) may not be.

The standardisation and PCA are *fitted* on the partitioned split and applied unchanged to other
splits (:meth:`EmbeddingPartitioner.predict_clusters`), so they are kept here rather than using the
stateless :func:`hetbench.clustering.standardise` / :func:`hetbench.clustering.pca` (which compute
in float64 and would change the published clusters).
"""

from __future__ import annotations

import copy
import math

import numpy as np

from hetbench.clustering import KMEANS_METHODS, kmeans_fit
from hetbench.embed import embed_table
from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, default_client_names
from hetbench.partitioners._alloc import assign_from_counts
from hetbench.partitioners.base import Partitioner
from hetbench.partitioners.dirichlet import SCHEMES, DirichletPartitioner


def embed_rows(table, split: str, spec: str, layer: str | None = None, engine=None,
               stored: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """One embedding row per row of ``split`` (:func:`hetbench.embed.embed_table`; its progress bars show inside
    :func:`hetbench.progress.show_progress`).

    Parameters
    ----------
    table : SampleTable
        The source table.
    split : str
        The split to embed.
    spec, layer : str
        The embedder spec and layer (:mod:`hetbench.embed`).
    engine : EngineSpec, optional
        What computes the embedding (:func:`hetbench.embed.embed_table`); not part of the recipe.
    stored : dict, optional
        Split -> an embedding already made (stored in a build: :mod:`hetbench.publish.embeddings`);
        the split's is used instead of embedding again.

    Examples
    --------
    >>> from hetbench.partitioners.embedding import embed_rows
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> t.splits["train"] = t.splits["train"].select(range(4))
    >>> t.labels["train"] = t.labels["train"][:4]
    >>> embed_rows(t, "train", "pixels:4").shape
    (4, 48)
    """
    n = table.num_rows(split)
    x = (stored or {}).get(split)
    if x is None:
        # quiet=None: the embedder's bars show when the command's do (hetbench.progress.show_progress)
        x = np.asarray(embed_table(table, split, spec, layer=layer, engine=engine, quiet=None), dtype=np.float32)
    if x.ndim != 2 or x.shape[0] != n:
        raise HetbenchError(f"embedder '{spec}' gave an array of shape {x.shape} for {n} rows of split '{split}'")
    return x


class EmbeddingPartitioner(Partitioner):
    """Dirichlet over K-means clusters of sample embeddings (Borazjani et al.).

    The rows of the partitioned split are embedded, standardised (every column to zero mean and
    unit variance), optionally projected onto ``pca_dim`` principal components, and clustered with
    seeded K-means into ``clusters`` groups, numbered by size. The clusters then play the part of
    the labels in a label-Dirichlet split: with ``scheme="client"`` each client ``n`` draws

    .. math:: \\mathbf{q}_n \\sim \\mathrm{Dir}(\\alpha \\mathbf{p}),

    ``p`` the clusters' shares of the population and ``q_{n,c}`` the share of client ``n``'s data
    drawn from cluster ``c`` (Borazjani et al., sec. II-B.3 with clusters for classes, sec. III);
    ``scheme="class"`` draws each cluster's shares over clients from ``Dir(alpha 1_N)`` instead.

    Parameters
    ----------
    num_clients : int
        Number of clients.
    alpha : float
        Dirichlet concentration: small gives clients few clusters, ``inf`` the population's mix.
    clusters : int
        K-means clusters (at most the number of rows).
    scheme : {"client", "class"}
        The Dirichlet scheme (:class:`~hetbench.partitioners.dirichlet.DirichletPartitioner`).
    embedder : str
        Embedder spec (:mod:`hetbench.embed`): ``task[:EPOCHS]`` (a small CNN trained on the
        labels, the paper's "network trained on the task of interest"), ``pixels[:S]``, ``hog``,
        ``color-hist``, ``column:NAME``, ``torchscript:PATH``, ``onnx:PATH``, ``torch:MODULE:FACTORY``.
    pca_dim : int, optional
        Reduce the standardised embeddings to this many principal components first.
    min_size : int
        ``scheme="class"``: fewest training rows per client, met by a deterministic repair.
    holdout_fraction : float, optional
        With ``min_size``: the ``client`` test policy's ``--test-fraction``, as for
        :class:`~hetbench.partitioners.dirichlet.DirichletPartitioner` (recorded only when it counts).
    kmeans : {"auto", "lloyd", "minibatch"}
        K-means variant (:func:`hetbench.clustering.kmeans`).
    layer : str, optional
        With ``torch:MODULE:FACTORY`` (or ``onnx:``): the layer (output) that is the embedding.

    Attributes
    ----------
    last_clusters, last_embedding : dict
        Per partitioned split: the cluster id (int64, 0 = largest) and the embedding of every row.
    stored_embeddings : dict or None
        Split -> embedding to use instead of embedding (``hetbench verify`` sets the folder's stored
        ones; :meth:`reuse_embeddings_of` a rebuilt build's); not part of the recipe.
    engine : EngineSpec or None
        What computes the embeddings (``--engine ray``: batches as Ray tasks); not part of the recipe.

    References
    ----------
    .. [1] K. Borazjani, P. Abdisarabshali, N. Khosravan and S. Hosseinalipour, "Redefining non-IID
       Data in Federated Learning for Computer Vision Tasks: Migrating from Labels to Embeddings for
       Task-Specific Data Distributions", arXiv preprint, 2025, sections II-B.3 and III.
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Measuring the Effects of Non-Identical Data
       Distribution for Federated Visual Classification", arXiv:1909.06335, 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.partitioners import EmbeddingPartitioner
    >>> from hetbench.sources import load_table
    >>> table = load_table("builtin:digits")
    >>> p = EmbeddingPartitioner(num_clients=5, alpha=0.1, clusters=4, embedder="pixels:4")
    >>> part = p.partition(table, seed=0)
    >>> part.num_clients, int(part.client_sizes().sum()), np.bincount(p.last_clusters["train"]).size
    (5, 1797, 4)
    """

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
        holdout_fraction: float | None = None,
    ) -> None:
        # the Dirichlet partitioner validates num_clients, alpha, scheme, min_size and holdout_fraction
        self._dirichlet = DirichletPartitioner(num_clients, alpha, scheme, min_size=min_size,
                                               holdout_fraction=holdout_fraction)
        if int(clusters) < 1:
            raise HetbenchError(f"`clusters` must be at least 1 (got {clusters})")
        if pca_dim is not None and int(pca_dim) < 1:
            raise HetbenchError(f"`pca_dim` must be at least 1 (got {pca_dim})")
        if kmeans not in KMEANS_METHODS:
            raise HetbenchError(f"unknown `kmeans` '{kmeans}'; choose one of: {', '.join(KMEANS_METHODS)}")
        if not isinstance(embedder, str) or not embedder:
            raise HetbenchError("`embedder` must be a non-empty string")
        self.num_clients = int(num_clients)
        self.alpha = self._dirichlet.alpha
        self.clusters = int(clusters)
        self.scheme = scheme
        self.embedder = embedder
        self.pca_dim = None if pca_dim is None else int(pca_dim)
        self.min_size = int(min_size)
        self.kmeans = kmeans
        self.layer = layer
        #: split -> embedding to use instead of embedding again; not part of the recipe
        self.stored_embeddings: dict[str, np.ndarray] | None = None
        #: a build whose stored embeddings are reused when they match (:meth:`reuse_embeddings_of`)
        self._reuse_from = None
        #: what computes the embeddings (:class:`hetbench.engines.EngineSpec`, ``--engine``); not part
        #: of the recipe (the embeddings are the same whatever computes them)
        self.engine = None
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
            # only when set: recipes without it stay as they were
            **{k: v for k, v in self._dirichlet.params().items() if k == "holdout_fraction"},
        }

    def holding_out(self, fraction: float) -> "EmbeddingPartitioner":
        inner = self._dirichlet.holding_out(fraction)
        if inner is self._dirichlet:
            return self
        out = copy.copy(self)
        out._dirichlet = inner
        return out

    def reuse_embeddings_of(self, out) -> None:
        """Reuse the embeddings stored in the build at ``out`` when they were made from the same
        source, embedder, layer and model file (:func:`hetbench.embed.cache.reusable_embeddings`).

        Rebuilding over an existing build (``--out`` with ``--overwrite``) then skips embedding again.

        Examples
        --------
        >>> from hetbench.partitioners import EmbeddingPartitioner
        >>> p = EmbeddingPartitioner(embedder="hog")
        >>> p.reuse_embeddings_of("no-such-build")
        >>> p.stored_embeddings is None
        True
        """
        self._reuse_from = out

    def _embed(self, table, split: str) -> np.ndarray:
        if self.stored_embeddings is None and self._reuse_from is not None:
            from hetbench.embed.cache import reusable_embeddings

            self.stored_embeddings = reusable_embeddings(self._reuse_from, table, self.embedder, self.layer)
            self._reuse_from = None
        x = embed_rows(table, split, self.embedder, self.layer, self.engine, self.stored_embeddings)
        self.last_embedding[split] = x
        return x

    def cluster_labels(self, table, split: str, rng_seed: int) -> np.ndarray:
        """Cluster id (int64, 0 = largest cluster) of every row of ``split``: embed, standardise,
        optional PCA, K-means with seed ``rng_seed``. The fit is kept for :meth:`predict_clusters`.

        Everything after the embedding is the same on every CPU: the standardisation is elementwise
        after float64 sums, the PCA and K-means are integer-exact (:mod:`hetbench.exact_kmeans`)."""
        from hetbench.exact_kmeans import GridPCA

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
            reducer = GridPCA.fit(z, self.pca_dim)
            z = reducer.transform(z)
        labels, fit, inertia = kmeans_fit(z, self.clusters, seed=rng_seed, method=self.kmeans)
        self._fit = (mean, scale, reducer, fit)
        self.last_inertia[split] = inertia
        return labels

    def predict_clusters(self, table, split: str) -> np.ndarray:
        """Cluster ids of another split (e.g. a test split) under the partitioned split's fit:
        the same standardisation and PCA, the nearest of the same K-means centres."""
        if self._fit is None:
            raise HetbenchError("partition a split before predicting clusters of another")
        mean, scale, reducer, fit = self._fit
        z = (self._embed(table, split) - mean) / scale
        if reducer is not None:
            z = reducer.transform(z)
        return fit.predict(z)

    def derive_columns(self, fs) -> None:
        """A ``cluster`` column in every split: the partitioned split's own clusters, the nearest
        cluster under the same fit for the others (:meth:`predict_clusters`)."""
        train = fs.recipe["partition"]["split"]
        if train not in self.last_clusters:
            return
        for split in fs.table.split_names:
            col = self.last_clusters[train] if split == train else self.predict_clusters(fs.table, split)
            fs.table.splits[split] = fs.table.splits[split].add_column("cluster", np.asarray(col).tolist())

    def _assign(self, table, split, rng):
        kseed = int(rng.integers(0, 2**31 - 1))
        cluster_ids = self.cluster_labels(table, split, kseed)
        self.last_clusters[split] = cluster_ids
        counts = self._dirichlet.client_counts(cluster_ids, self.clusters, rng)
        assignment, reason = assign_from_counts(cluster_ids, counts, rng, DropReason.CLASS_UNASSIGNED)
        return assignment, reason, self.num_clients, default_client_names(self.num_clients)


__all__ = ["EmbeddingPartitioner", "embed_rows", "SCHEMES"]
