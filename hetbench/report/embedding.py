"""Report additions of embedding splits (Borazjani et al.): clusters beside labels.

:func:`embedding_extras` is what an embedding split publishes beyond the common report (the
``extras`` of :func:`hetbench.pipeline.make_split`): a ``cluster`` column in every split, the
``embedding`` report entry (:func:`embedding_summary`: cluster sizes, EMD over clusters and over
labels, and zeta (Eq. 4) between the clustering and the labels), the embedding cache of the build
(:mod:`hetbench.embed.cache`) and two plots: a cluster x label contingency heatmap and a 2-D PCA
scatter of the embeddings coloured by cluster and by client.

References
----------
.. [1] K. Borazjani, P. Abdisarabshali, N. Khosravan and S. Hosseinalipour, "Redefining non-IID Data
   in Federated Learning for Computer Vision Tasks: Migrating from Labels to Embeddings for
   Task-Specific Data Distributions", arXiv preprint, 2025 (zeta: Eq. 4).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from hetbench import metrics

if TYPE_CHECKING:  # pragma: no cover
    from hetbench.partitioners.embedding import EmbeddingPartitioner
    from hetbench.splits import FederatedSplit


PLOTS = ("plots/cluster_label_contingency.png", "plots/embedding_pca.png")


def embedding_extras(
    partitioner: "EmbeddingPartitioner",
) -> Callable[["FederatedSplit"], "tuple[dict[str, Any], Callable[[Path], list[str]]]"]:
    """The ``extras`` of an embedding split for :func:`hetbench.pipeline.make_split`.

    Called with the built split, it adds a ``cluster`` column to every split of the table (the
    partitioned split's own clusters; other splits get the nearest cluster under the same fit,
    :meth:`~hetbench.partitioners.embedding.EmbeddingPartitioner.predict_clusters`) and returns the
    ``embedding`` report entry and a plot writer, which also saves the embedding cache of the build.

    Parameters
    ----------
    partitioner : EmbeddingPartitioner
        The partitioner of the split, after it partitioned (its clusters and embeddings are read).

    Examples
    --------
    >>> from hetbench.partitioners import EmbeddingPartitioner
    >>> from hetbench.pipeline import make_split
    >>> from hetbench.report.embedding import embedding_extras
    >>> p = EmbeddingPartitioner(4, alpha=0.5, clusters=3, embedder="pixels:4")
    >>> split, report = make_split("builtin:digits", p, "emb", quiet=True, extras=embedding_extras(p))
    >>> report["embedding"]["clusters"], "cluster" in split.table.splits["train"].column_names
    (3, True)
    """
    p = partitioner

    def extras(fs):
        train = fs.outputs["train"].source_split
        clusters = p.last_clusters[train]
        for split in fs.table.split_names:
            col = clusters if split == train else p.predict_clusters(fs.table, split)
            fs.table.splits[split] = fs.table.splits[split].add_column("cluster", np.asarray(col).tolist())
        client_of_row = np.full(clusters.size, -1, np.int32)
        for rows in fs.outputs.values():
            if rows.source_split == train:
                client_of_row[rows.rows] = rows.client_ids
        labels = fs.table.labels[train]
        extra = {"embedding": dict(embedder=p.embedder, **embedding_summary(
            clusters, labels, client_of_row, p.clusters, fs.table.num_classes, fs.num_clients))}

        def plots(out_dir: Path) -> list[str]:
            from hetbench.embed.cache import save_cached

            save_cached(out_dir, fs.table, p.last_embedding, p.embedder, p.layer)  # a later --overwrite reuses it
            plot_contingency(clusters, labels, fs.table.class_names, p.clusters, out_dir / PLOTS[0])
            plot_pca_scatter(p.last_embedding[train], clusters, client_of_row, out_dir / PLOTS[1])
            return list(PLOTS)

        return extra, plots

    return extras


def embedding_summary(
    clusters: np.ndarray, labels: np.ndarray, client_ids: np.ndarray, num_clusters: int, num_classes: int, num_clients: int
) -> dict[str, Any]:
    """The ``embedding`` report entry: clusters beside labels over the clients.

    Parameters
    ----------
    clusters, labels : numpy.ndarray
        Cluster id and label of every row of the partitioned split.
    client_ids : numpy.ndarray
        Client of every row, -1 for rows no client holds.
    num_clusters, num_classes, num_clients : int
        Sizes of the matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.embedding import embedding_summary
    >>> s = embedding_summary(np.array([0, 0, 1, 1]), np.array([0, 0, 1, 1]), np.array([0, 0, 1, 1]), 2, 2, 2)
    >>> s["cluster_sizes"], s["zeta_clusters_vs_labels"], s["clusters_per_client"]
    ([2, 2], 1.0, [1, 1])
    """
    from hetbench.clustering import zeta

    kept = client_ids >= 0
    by_cluster = metrics.label_matrix(client_ids[kept], clusters[kept], num_clients, num_clusters)
    by_label = metrics.label_matrix(client_ids[kept], labels[kept], num_clients, num_classes)
    return {
        "clusters": int(num_clusters),
        "cluster_sizes": np.bincount(clusters, minlength=num_clusters).astype(int).tolist(),
        "emd_clusters": round(metrics.emd(by_cluster), 6),
        "emd_labels": round(metrics.emd(by_label), 6),
        "zeta_clusters_vs_labels": round(float(zeta(clusters, labels)), 6),
        "clusters_per_client": metrics.classes_per_client(by_cluster).astype(int).tolist(),
    }


def plot_contingency(clusters: np.ndarray, labels: np.ndarray, class_names: list[str], num_clusters: int, path: Path) -> None:
    from hetbench.plotting import pyplot

    plt = pyplot()
    m = metrics.label_matrix(clusters.astype(np.int32), labels, num_clusters, len(class_names)).astype(float)
    share = m / np.maximum(m.sum(axis=1, keepdims=True), 1)
    fig, ax = plt.subplots(figsize=(min(3 + 0.35 * len(class_names), 14), min(2.5 + 0.3 * num_clusters, 10)), dpi=110)
    im = ax.imshow(share, aspect="auto", cmap="viridis", vmin=0, vmax=1)
    ax.set_xlabel("label")
    ax.set_ylabel("cluster")
    if len(class_names) <= 40:
        ax.set_xticks(range(len(class_names)))
        ax.set_xticklabels(class_names, rotation=90 if len(class_names) > 12 else 0, fontsize=7)
    fig.colorbar(im, ax=ax, label="share of the cluster")
    ax.set_title("Cluster x label contingency")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_pca_scatter(embedding: np.ndarray, clusters: np.ndarray, client_ids: np.ndarray, path: Path, seed: int = 0) -> None:
    """2-D PCA of the embeddings (at most 5,000 points), coloured by cluster and by client."""
    from sklearn.decomposition import PCA

    from hetbench.plotting import pyplot

    plt = pyplot()
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(embedding), size=min(5000, len(embedding)), replace=False)
    xy = PCA(n_components=2, random_state=seed).fit_transform(embedding[idx].astype(np.float64))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), dpi=110)
    for ax, colour, title in ((axes[0], clusters[idx], "by cluster"), (axes[1], client_ids[idx], "by client")):
        ax.scatter(xy[:, 0], xy[:, 1], c=np.asarray(colour) % 20, cmap="tab20", s=4, alpha=0.7, linewidths=0)
        ax.set_title(f"Embeddings (PCA) {title}")
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
