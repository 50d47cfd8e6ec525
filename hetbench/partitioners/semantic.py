"""Semantic split (Yuan et al., ICLR 2022, "What do we mean by generalization in federated
learning?"), the label-wise Gaussian-mixture split also offered by Flower and FL-bench.

Steps (all randomness from the partition's generator):

1. Embed the partitioned split (:func:`~hetbench.partitioners.embedding.embed_rows`),
   standardise every column (:func:`hetbench.clustering.standardise`) and project onto the top
   ``pca_dim`` principal components (:func:`hetbench.clustering.pca`; no projection when the
   embedding has at most ``pca_dim`` dimensions).
2. For each label ``c`` separately, fit a diagonal-covariance Gaussian mixture with
   ``k_c = min(n_c, num_clients)`` components to that label's embeddings and give every sample of
   the label its most likely component. A label with fewer samples than clients has fewer
   components than there are clients: the leftover clients receive no samples of that label.
3. Match components to clients, label by label in ascending class order. The first label present
   maps component ``j`` to client ``j``. Each client keeps an *accumulated Gaussian*: the
   moment-matched (diagonal) Gaussian of every component matched to it so far, each weighted by its
   mixture weight times the label's sample count. For every later label the cost of giving
   component ``i`` to client ``j`` is the closed-form ``KL(component_i || client_j)`` between
   diagonal Gaussians, and the assignment minimising the total cost is found with
   :func:`scipy.optimize.linear_sum_assignment`. A client that has no accumulated Gaussian yet
   (possible only after a label with fewer samples than clients) costs the largest finite cost in
   the matrix, so it takes a component only when that is no worse than any used client.
4. Every sample of every label goes to the client of its component: nothing is dropped.

The per-row component (within its label) is kept in ``last_components[split]`` and the
embedding before standardising in ``last_embedding[split]``.

References
----------
.. [1] H. Yuan, W. Morningstar, L. Ning and K. Singhal, "What Do We Mean by Generalization in
   Federated Learning?", ICLR 2022 (the semantic partitioning of section 4 and appendix).
"""

from __future__ import annotations

import numpy as np

from hetbench.clustering import pca, standardise
from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, default_client_names
from hetbench.partitioners.base import Partitioner
from hetbench.partitioners.embedding import embed_rows

#: added to the diagonal of every fitted covariance (sklearn's ``reg_covar``) and the variance floor
REG_COVAR = 1e-4


def kl_diag(mean_p: np.ndarray, var_p: np.ndarray, mean_q: np.ndarray, var_q: np.ndarray) -> np.ndarray:
    """``KL(N(mean_p, diag var_p) || N(mean_q, diag var_q))`` for every pair: (a, d) x (b, d) -> (a, b)."""
    mp, vp = np.asarray(mean_p, np.float64)[:, None, :], np.asarray(var_p, np.float64)[:, None, :]
    mq, vq = np.asarray(mean_q, np.float64)[None, :, :], np.asarray(var_q, np.float64)[None, :, :]
    return 0.5 * np.sum(np.log(vq / vp) + (vp + (mp - mq) ** 2) / vq - 1.0, axis=-1)


def fit_label_mixture(
    z: np.ndarray, k: int, seed: int, max_iter: int = 100, n_init: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fit a ``k``-component diagonal Gaussian mixture to ``z`` (n >= k rows).

    Returns (component per row int64, means (k, d), variances (k, d), weights (k,)).
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.shape[0]
    if k < 1 or k > n:
        raise HetbenchError(f"cannot fit {k} mixture components to {n} samples")
    if k == 1:
        mean = z.mean(axis=0, keepdims=True)
        var = z.var(axis=0, keepdims=True) + REG_COVAR
        return np.zeros(n, dtype=np.int64), mean, var, np.ones(1)
    from sklearn.mixture import GaussianMixture

    gm = GaussianMixture(
        n_components=k,
        covariance_type="diag",
        reg_covar=REG_COVAR,
        max_iter=int(max_iter),
        n_init=int(n_init),
        random_state=int(seed),
    )
    comp = gm.fit(z).predict(z).astype(np.int64)
    return comp, np.asarray(gm.means_), np.asarray(gm.covariances_), np.asarray(gm.weights_)


def semantic_assign(
    z: np.ndarray,
    labels: np.ndarray,
    num_clients: int,
    rng: np.random.Generator,
    max_iter: int = 100,
    n_init: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 2-4 of the module docstring on prepared embeddings ``z`` (n, d).

    Returns (client per row int64, component within its label per row int64). One mixture seed is
    drawn from ``rng`` per label present, in ascending label order.
    """
    z = np.asarray(z, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if z.ndim != 2 or z.shape[0] != labels.size:
        raise HetbenchError(f"embeddings of shape {z.shape} do not match {labels.size} labels")
    K = int(num_clients)
    d = z.shape[1]
    assignment = np.full(labels.size, -1, dtype=np.int64)
    components = np.full(labels.size, -1, dtype=np.int64)
    # running moment sums per client: total weight, sum w*mean, sum w*(var + mean^2)
    s_w = np.zeros(K)
    s_m = np.zeros((K, d))
    s_q = np.zeros((K, d))
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        seed = int(rng.integers(0, 2**31 - 1))
        k = min(idx.size, K)
        comp, means, var, weights = fit_label_mixture(z[idx], k, seed, max_iter, n_init)
        var = np.maximum(var, REG_COVAR)
        has = s_w > 0
        if not has.any():
            to_client = np.arange(k)
        else:
            cmean = np.zeros((K, d))
            cvar = np.ones((K, d))
            cmean[has] = s_m[has] / s_w[has, None]
            cvar[has] = np.maximum(s_q[has] / s_w[has, None] - cmean[has] ** 2, REG_COVAR)
            cost = kl_diag(means, var, cmean, cvar)
            finite = cost[:, has][np.isfinite(cost[:, has])]
            fill = float(finite.max()) if finite.size else 0.0
            cost[:, ~has] = fill
            cost = np.where(np.isfinite(cost), cost, np.finfo(np.float64).max / (4 * K))
            from scipy.optimize import linear_sum_assignment

            rows, cols = linear_sum_assignment(cost)
            to_client = np.empty(k, dtype=np.int64)
            to_client[rows] = cols
        w = weights * idx.size
        np.add.at(s_w, to_client, w)
        np.add.at(s_m, to_client, w[:, None] * means)
        np.add.at(s_q, to_client, w[:, None] * (var + means**2))
        components[idx] = comp
        assignment[idx] = to_client[comp]
    return assignment, components


class SemanticPartitioner(Partitioner):
    """Label-wise Gaussian-mixture split matched across labels by KL (Yuan et al., ICLR 2022).

    The partitioned split is embedded, standardised and reduced with PCA; for each label a
    diagonal Gaussian mixture with one component per client clusters that label's samples, and the
    components of successive labels are matched to clients by minimising the total
    ``KL(component || client's accumulated Gaussian)`` (see the module docstring, steps 1-4). Every
    sample is assigned; clients differ in *what* their samples of each label look like.

    Parameters
    ----------
    num_clients : int
        Number of clients (mixture components per label).
    embedder : str
        Embedder spec (:mod:`hetbench.embed`), e.g. ``pixels``, ``hog``, ``task:3``.
    pca_dim : int
        Principal components kept after standardising (none dropped when the embedding is smaller).
    max_iter : int
        EM iterations of each mixture.
    n_init : int
        EM initialisations of each mixture (the best is kept).
    layer : str, optional
        With ``torch:MODULE:FACTORY`` (or ``onnx:``): the layer (output) that is the embedding.

    Attributes
    ----------
    engine : EngineSpec or None
        What computes the embeddings (``--engine ray``: batches as Ray tasks); set after
        construction, not part of the recipe.

    References
    ----------
    .. [1] H. Yuan, W. Morningstar, L. Ning and K. Singhal, "What Do We Mean by Generalization in
       Federated Learning?", ICLR 2022.

    Examples
    --------
    >>> from hetbench.partitioners import SemanticPartitioner
    >>> from hetbench.sources import load_table
    >>> table = load_table("builtin:digits")
    >>> part = SemanticPartitioner(num_clients=4, embedder="pixels:4", pca_dim=8).partition(table, seed=0)
    >>> part.num_clients, int(part.client_sizes().sum())
    (4, 1797)
    """

    name = "semantic"

    def __init__(
        self,
        num_clients: int = 10,
        embedder: str = "pixels",
        pca_dim: int = 16,
        max_iter: int = 100,
        n_init: int = 1,
        layer: str | None = None,
    ) -> None:
        if int(num_clients) < 1:
            raise HetbenchError(f"`num_clients` must be at least 1 (got {num_clients})")
        if pca_dim is None or int(pca_dim) < 1:
            raise HetbenchError(f"`pca_dim` must be at least 1 (got {pca_dim})")
        if int(max_iter) < 1:
            raise HetbenchError(f"`max_iter` must be at least 1 (got {max_iter})")
        if int(n_init) < 1:
            raise HetbenchError(f"`n_init` must be at least 1 (got {n_init})")
        if not isinstance(embedder, str) or not embedder:
            raise HetbenchError("`embedder` must be a non-empty string")
        self.num_clients = int(num_clients)
        self.embedder = embedder
        self.pca_dim = int(pca_dim)
        self.max_iter = int(max_iter)
        self.n_init = int(n_init)
        self.layer = layer
        #: split -> float32 embedding per row (before standardising), filled by :meth:`partition`
        self.last_embedding: dict[str, np.ndarray] = {}
        #: split -> embedding to use instead of embedding (``hetbench verify``: the folder's); not in the recipe
        self.stored_embeddings: dict[str, np.ndarray] | None = None
        #: what computes the embeddings (:class:`hetbench.engines.EngineSpec`); not part of the recipe
        self.engine = None
        #: split -> int64 mixture component of every row within its label
        self.last_components: dict[str, np.ndarray] = {}

    def params(self) -> dict:
        return {
            "num_clients": self.num_clients,
            "embedder": self.embedder,
            "pca_dim": self.pca_dim,
            "max_iter": self.max_iter,
            "n_init": self.n_init,
            "layer": self.layer,
        }

    def _assign(self, table, split, rng):
        n = table.num_rows(split)
        x = embed_rows(table, split, self.embedder, self.layer, engine=self.engine, stored=self.stored_embeddings)
        self.last_embedding[split] = x
        pca_seed = int(rng.integers(0, 2**31 - 1))
        z = standardise(x)
        if n and self.pca_dim < z.shape[1]:
            z = pca(z, self.pca_dim, seed=pca_seed)
        assignment, components = semantic_assign(
            z, table.labels[split], self.num_clients, rng, self.max_iter, self.n_init
        )
        self.last_components[split] = components
        reason = np.where(assignment < 0, int(DropReason.CLASS_UNASSIGNED), 0).astype(np.int8)
        return assignment, reason, self.num_clients, default_client_names(self.num_clients)


__all__ = ["SemanticPartitioner", "semantic_assign", "fit_label_mixture", "kl_diag"]
