"""Report additions of embedding splits (Borazjani et al.): clusters beside labels.

``embedding_summary`` gives cluster sizes, EMD over clusters and over labels, and zeta (Eq. 4)
between the clustering and the labels; the plots are a cluster x label contingency heatmap and a
2-D PCA scatter of the embeddings coloured by cluster and by client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hetbench import metrics


def embedding_summary(
    clusters: np.ndarray, labels: np.ndarray, client_ids: np.ndarray, num_clusters: int, num_classes: int, num_clients: int
) -> dict[str, Any]:
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
