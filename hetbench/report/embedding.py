"""Report additions of embedding splits (Borazjani et al.): clusters beside labels.

:func:`embedding_extras` is what an embedding split reports beyond the common report (the
``extras`` of :func:`hetbench.pipeline.make_split`): the ``embedding`` report entry
(:func:`embedding_summary`: cluster sizes, EMD over clusters and over labels, and zeta (Eq. 4)
between the clustering and the labels) and two plots: a cluster x label contingency heatmap and a
2-D PCA scatter of the embeddings coloured by cluster and by client.

References
----------
.. [1] K. Borazjani, P. Abdisarabshali, N. Khosravan and S. Hosseinalipour, "Redefining non-IID Data
   in Federated Learning for Computer Vision Tasks: Migrating from Labels to Embeddings for
   Task-Specific Data Distributions", arXiv preprint, 2025 (zeta: Eq. 4).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

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

    Called with the built split (whose ``cluster`` column the partitioner derived), it returns the
    ``embedding`` report entry and a plot writer.

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
        clusters = p.last_clusters[train]  # the split's ``cluster`` column (EmbeddingPartitioner.derive_columns)
        client_of_row = np.full(clusters.size, -1, np.int32)
        for rows in fs.outputs.values():
            if rows.source_split == train:
                client_of_row[rows.rows] = rows.client_ids
        labels = fs.table.labels[train]
        extra = {"embedding": dict(embedder=p.embedder, **embedding_summary(
            clusters, labels, client_of_row, p.clusters, fs.table.num_classes, fs.num_clients))}

        def plots(out_dir: Path) -> list[str]:
            plot_contingency(clusters, labels, fs.table.class_names, p.clusters, out_dir / PLOTS[0])
            plot_pca_scatter(p.last_embedding[train], clusters, client_of_row, out_dir / PLOTS[1])
            rows = fs.outputs["train"]  # the report's label EMD is over the train output split
            redraw_emd_histogram(out_dir, rows.client_ids, clusters[rows.rows], p.clusters)  # listed by write_report
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
    >>> s["cluster_sizes"], s["zeta_clusters_vs_labels"], s["ari_clusters_vs_labels"], s["clusters_per_client"]
    ([2, 2], 1.0, 1.0, [1, 1])
    """
    from sklearn.metrics import adjusted_rand_score

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
        "ari_clusters_vs_labels": round(float(adjusted_rand_score(labels, clusters)), 6),
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


def cluster_emd_per_client(client_ids: np.ndarray, clusters: np.ndarray, num_clients: int, num_clusters: int) -> np.ndarray:
    """Per-client EMD of the cluster distribution to the population's (rows with client -1 left out).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.embedding import cluster_emd_per_client
    >>> cluster_emd_per_client(np.array([0, 0, 1, 1, -1]), np.array([0, 0, 1, 1, 1]), 2, 2).tolist()
    [1.0, 1.0]
    """
    kept = client_ids >= 0
    return metrics.emd_per_client(metrics.label_matrix(client_ids[kept], clusters[kept], num_clients, num_clusters))


def redraw_emd_histogram(out_dir: Path, client_ids: np.ndarray, clusters: np.ndarray, num_clusters: int, report=None,
                         clients=None) -> None:
    """Redraw ``plots/emd_histogram.png`` of an embedding split with the cluster EMD beside the label
    EMD (the report and per-client statistics are read from ``out_dir`` unless given)."""
    import json

    from hetbench.report.metrics import CLIENTS_FILE, ClientStats
    from hetbench.report.plots import PLOTS, plot_emd_hist

    out_dir = Path(out_dir)
    if report is None:
        report = json.loads((out_dir / "report.json").read_text())
    if clients is None:
        import pyarrow.parquet as pq

        clients = ClientStats.from_arrow(pq.read_table(out_dir / CLIENTS_FILE), report["num_classes"])
    path = out_dir / "plots" / PLOTS["emd_hist"]
    if not path.exists():  # a split drawn without the histogram (devices, domains) stays so
        return
    values = cluster_emd_per_client(np.asarray(client_ids), np.asarray(clusters), clients.num_clients, num_clusters)
    weighted = float((values * clients.sizes).sum() / max(int(clients.sizes.sum()), 1))
    plot_emd_hist(report, clients, path, beside=(f"cluster EMD ({num_clusters} clusters)", values, weighted))


def _legend_or_bar(fig, ax, sc, values: np.ndarray, name: str, most: int = 20) -> None:
    """A legend of the colours when there are at most ``most`` values, a colour bar otherwise."""
    distinct = np.unique(values)
    if distinct.size <= most:
        handles = [ax.scatter([], [], color=sc.cmap(sc.norm(v)), s=16, label=str(int(v))) for v in distinct]
        ax.legend(handles=handles, fontsize=6.5, ncol=2 if distinct.size > 10 else 1, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0, title=name, title_fontsize=7, markerscale=1)
    else:
        fig.colorbar(sc, ax=ax, label=name)


def plot_pca_scatter(embedding: np.ndarray, clusters: np.ndarray, client_ids: np.ndarray, path: Path, seed: int = 0) -> None:
    """2-D PCA of the embeddings (at most 5,000 points), coloured by cluster and by client, each
    panel with a legend (a colour bar past 20 clusters or clients)."""
    from sklearn.decomposition import PCA

    from hetbench.plotting import pyplot

    plt = pyplot()
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(len(embedding), size=min(5000, len(embedding)), replace=False))
    xy = PCA(n_components=2, random_state=seed).fit_transform(embedding[idx].astype(np.float64))
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), dpi=110)
    held = np.asarray(client_ids)[idx] >= 0
    for ax, colour, name in ((axes[0], np.asarray(clusters)[idx], "cluster"), (axes[1], np.asarray(client_ids)[idx], "client_id")):
        pts = held if name == "client_id" else np.ones(idx.size, bool)
        n = int(colour[pts].max()) + 1 if pts.any() else 1
        cmap, norm = (plt.get_cmap("tab10" if n <= 10 else "tab20"), None) if n <= 20 else (plt.get_cmap("turbo"), None)
        vmax = (9 if n <= 10 else 19) if n <= 20 else n - 1
        sc = ax.scatter(xy[pts, 0], xy[pts, 1], c=colour[pts], cmap=cmap, vmin=0, vmax=vmax, s=5, alpha=0.7, linewidths=0)
        _legend_or_bar(fig, ax, sc, colour[pts], name)
        what = "cluster" if name == "cluster" else "client"
        extra = f" ({int((~held).sum()):,} rows held by no client left out)" if name == "client_id" and (~held).any() else ""
        ax.set_title(f"Embeddings (PCA of {idx.size:,} rows the partition embedded, held-out test rows included), "
                     f"by {what}{extra}", fontsize=9)
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


#: the adjusted Rand index from which clusters "coincide" with the labels: Steinley (2004)'s bound of
#: moderate recovery (0.65; 0.80 good, 0.90 excellent), Psychological Methods 9(3), 386-396
COINCIDE_ARI = 0.65


def clusters_and_labels_text(summary: Mapping[str, Any], embedder: str | None) -> str:
    """The card's plain statement of how far an embedding split's clusters follow its labels.

    Zeta (Borazjani et al.'s Eq. 4) is the Rand index, which is high for any two clusterings with many
    groups (0.82 for two unrelated 10-group ones); the adjusted Rand index (Hubert and Arabie 1985)
    is 0 at chance and 1 for the same partition, so the verdict rests on it.

    Examples
    --------
    >>> from hetbench.report.embedding import clusters_and_labels_text
    >>> clusters_and_labels_text({"ari_clusters_vs_labels": 0.91, "zeta_clusters_vs_labels": 0.98}, "task:3")[:60]
    '**The clusters coincide with the labels** (adjusted Rand ind'
    >>> clusters_and_labels_text({"ari_clusters_vs_labels": 0.035, "zeta_clusters_vs_labels": 0.825,
    ...                           "emd_clusters": 1.424, "emd_labels": 0.258}, "color-hist").split(". ")[-1]
    "Measured over the clusters, the clients' skew is EMD 1.424; over the labels, 0.258 (size-weighted mean EMD to the population; 0 = IID, 2 = disjoint): a label-based statistic sees little of it."
    """
    ari, z = summary.get("ari_clusters_vs_labels"), summary.get("zeta_clusters_vs_labels")
    if ari is None:
        return ""
    numbers = f"adjusted Rand index {ari:.3f}; zeta, the Rand index of Borazjani et al.'s Eq. 4, {z:.3f}"
    if ari >= COINCIDE_ARI:
        return (f"**The clusters coincide with the labels** ({numbers}; {COINCIDE_ARI} or more is at least "
                f"moderate agreement, Steinley 2004): this split is in effect a Dirichlet split over the labels. "
                f"To split by what the labels do not say, embed with a model that was not trained on them "
                f"(`--embedder pixels`, `hog`, `color-hist` or your own instead of `{embedder or 'task'}`) "
                f"or change `--clusters`.")
    skew = ""
    if summary.get("emd_clusters") is not None and summary.get("emd_labels") is not None:
        skew = (f" Measured over the clusters, the clients' skew is EMD {summary['emd_clusters']:.3f}; over the "
                f"labels, {summary['emd_labels']:.3f} (size-weighted mean EMD to the population; 0 = IID, 2 = "
                f"disjoint): a label-based statistic sees little of it.")
    return (f"The clusters do not coincide with the labels ({numbers}; below {COINCIDE_ARI}, Steinley 2004's "
            f"moderate agreement): the split carries heterogeneity that the labels alone do not describe.{skew}")
