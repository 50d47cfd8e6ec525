"""Embedding clusters against labels and the heterogeneity of embedding splits (Borazjani et al.,
"Redefining non-IID data in federated learning for computer vision tasks", sec. III, Fig. 5, Eq. 4,
Table I).

The rows of a labelled source are embedded once (:func:`hetbench.partitioners.embedding.embed_rows`; the
``task`` embedder is the paper's "network trained on the task of interest", its penultimate layer the
embedding) and, for every seed and every Dirichlet concentration alpha of the grid, split by
:class:`hetbench.partitioners.EmbeddingPartitioner` exactly as ``hetbench partition embedding`` does:
standardise, K-means into ``clusters`` groups (the K-means seed is the partition seed's first draw, so one
clustering per seed, shared by every alpha), then clients' cluster shares from Dir(alpha x p). Every
number comes from :func:`hetbench.report.embedding.embedding_summary`, the ``embedding`` entry of an
embedding split's report:

- ``zeta``: Eq. 4 between the K-means clustering and the labels (:func:`hetbench.clustering.zeta`, the
  Rand index), per seed;
- ``emd_clusters`` / ``emd_labels``: the population-weighted mean EMD of the clients' cluster (label)
  distributions to the population's, per alpha and seed.

Eq. 4 also bounds what it can report, with no data at all (:func:`eq4_floor`): for two clusterings of at
most K groups each it is never below 1/K (and never below 1 - 2/K + 2/K^2 for K equal groups). The
``table1`` measurement holds, for each value of the paper's Table I, the value nearest to it that Eq. 4
permits for two clusterings of at most ``table1_groups`` groups (the paper's 16 groups); it equals the
published value only where Table I could follow from Eq. 4.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput


def eq4_floor(groups: int, rows: int | None = None) -> float:
    """The smallest value Eq. 4 (the Rand index) takes for two clusterings of at most ``groups`` groups
    each, over ``rows`` items (None: the limit of many rows, 1 / groups).

    Why: colour the cells (i, j) of the two clusterings' groups by the K cyclic diagonals
    {(i, i + s mod K)}; two items in the same diagonal are together in both clusterings or apart in both,
    so they agree. With n_s items in diagonal s, at least sum_s C(n_s, 2) of the C(n, 2) pairs agree,
    smallest when the n_s are equal: ζ >= (n - K) / (K (n - 1)) for n a multiple of K, which tends to
    1 / K. One group against K equal groups attains it.

    Examples
    --------
    >>> from hetbench.reproduce.runners.embedding_zeta import eq4_floor
    >>> eq4_floor(16), round(eq4_floor(16, 1600), 5)
    (0.0625, 0.06191)
    >>> import numpy as np
    >>> from hetbench.clustering import zeta
    >>> a, b = np.zeros(1600, int), np.repeat(np.arange(16), 100)  # one group against 16 equal ones
    >>> zeta(a, b) == eq4_floor(16, 1600)
    True
    """
    k = int(groups)
    if k < 1:
        raise HetbenchError(f"a clustering has at least one group (got {groups})")
    if rows is None:
        return 1.0 / k
    n = int(rows)
    if n < 2:
        return 1.0
    q, r = divmod(n, k)  # r diagonals of q + 1 items, k - r of q
    agree = r * (q + 1) * q // 2 + (k - r) * q * (q - 1) // 2
    return agree / (n * (n - 1) / 2)


def equal_groups_floor(groups: int) -> float:
    """The smallest value of Eq. 4 (many rows) for two clusterings of ``groups`` equal groups each:
    1 - 2/K + 2/K^2 (each side's within-group pairs are a 1/K share, and at least a 1/K share of those are
    together in the other clustering too).

    Examples
    --------
    >>> from hetbench.reproduce.runners.embedding_zeta import equal_groups_floor
    >>> round(equal_groups_floor(16), 4), round(equal_groups_floor(10), 2)
    (0.8828, 0.82)
    """
    k = float(groups)
    return 1.0 - 2.0 / k + 2.0 / k**2



class EmbeddingZetaRunner(Runner):
    seeded = True  # the K-means seed and the Dirichlet draws
    measures = {
        "zeta": "Eq. 4 between the K-means clusters of the embeddings and the labels, per seed",
        "emd_clusters": "population-weighted mean EMD of the clients' cluster distributions, per alpha and seed",
        "emd_labels": "population-weighted mean EMD of the clients' label distributions, per alpha and seed",
        "table1": "for each Table I value, the nearest value Eq. 4 permits for clusterings of at most "
                  "table1_groups groups, beside the published one",
    }
    schema = {
        "source": ("str", True), "clients": ("int", True), "clusters": ("int", True), "embedder": ("str", True),
        "alphas": ("numbers", True), "seeds": ("ints", False), "table1_groups": ("int", True),
        "table1_published": ("numbers", True),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        pairs = settings.get("table1_pairs")
        super().check_settings({k: v for k, v in settings.items() if k != "table1_pairs"}, where)
        if len(settings["alphas"]) < 2:
            raise HetbenchError(f"{where}: 'alphas' must list at least two values")
        if any(v > 1 for v in settings["table1_published"]):
            raise HetbenchError(f"{where}: 'table1_published' values are Eq. 4 values, at most 1")
        if pairs is not None and (not isinstance(pairs, list) or len(pairs) != len(settings["table1_published"])
                                  or not all(isinstance(p, str) and p.strip() for p in pairs)):
            raise HetbenchError(f"{where}: 'table1_pairs' needs one name (a string) per 'table1_published' value")
        if settings["clusters"] < 2:
            raise HetbenchError(f"{where}: 'clusters' must be at least 2")
        return settings

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.clustering import zeta as eq4
        from hetbench.partitioners import EmbeddingPartitioner
        from hetbench.partitioners.embedding import embed_rows
        from hetbench.report.embedding import embedding_summary
        from hetbench.sources import load_table

        table = load_table(settings["source"])
        split = "train"
        if split not in table.splits:
            raise HetbenchError(f"{settings['source']} has no 'train' split to cluster")
        labels = np.asarray(table.labels[split])
        rows, classes = int(labels.size), int(table.num_classes)
        k, clients, embedder = settings["clusters"], settings["clients"], settings["embedder"]
        alphas = [float(a) for a in settings["alphas"]]
        # one embedding for every split (it does not depend on the partition seed), reused by every partitioner
        stored = {split: embed_rows(table, split, embedder)}
        zetas: list[float] = []
        emd_c = [[] for _ in alphas]
        emd_l = [[] for _ in alphas]
        sizes: dict[int, list[int]] = {}
        for seed in ctx.seeds:
            for i, alpha in enumerate(alphas):
                p = EmbeddingPartitioner(clients, alpha, k, "client", embedder)
                p.stored_embeddings = stored
                part = p.partition(table, seed, split)
                s = embedding_summary(p.last_clusters[split], labels, np.asarray(part.assignment), k, classes, clients)
                if i == 0:
                    zetas.append(float(eq4(p.last_clusters[split], labels)))
                    sizes[seed] = s["cluster_sizes"]
                emd_c[i].append(float(s["emd_clusters"]))
                emd_l[i].append(float(s["emd_labels"]))
                ctx.note(f"seed {seed} alpha={alpha:g}: EMD clusters {emd_c[i][-1]:.3f}, labels {emd_l[i][-1]:.3f}")
            ctx.note(f"seed {seed}: zeta(clusters, labels) = {zetas[-1]:.4f}")
        g = settings["table1_groups"]
        floor = eq4_floor(g)
        published = [float(v) for v in settings["table1_published"]]
        names = settings.get("table1_pairs") or [f"value {i + 1}" for i in range(len(published))]
        below = [n for n, v in zip(names, published) if v < floor]
        labels_alpha = [f"alpha={a:g}" for a in alphas]
        emd_axes = Axes("Dirichlet alpha over clusters (heterogeneity grows to the right)",
                        "mean client EMD (0 to 2)", log_x=True, reverse_x=True)
        return RunOutput(
            measurements={
                "zeta": Measurement([zetas], unit="zeta (Eq. 4, Rand index)", labels=[f"K={k} vs {classes} labels"]),
                "emd_clusters": Measurement(emd_c, x=alphas, unit="EMD over clusters", labels=labels_alpha),
                "emd_labels": Measurement(emd_l, x=alphas, unit="EMD over labels", labels=labels_alpha),
                "table1": Measurement([[max(v, floor)] for v in published], published=published,
                                      unit=f"nearest value Eq. 4 permits (K <= {g})", labels=list(names)),
            },
            axes={"zeta": Axes("", "zeta(K-means clusters, labels)"), "emd_clusters": emd_axes,
                  "emd_labels": emd_axes,
                  "table1": Axes("Table I pair", f"zeta: Eq. 4 floor (K <= {g}) vs Table I")},
            facts={
                "source": settings["source"], "embedder": embedder, "clusters": k, "classes": classes,
                "clients": clients, "seeds": list(ctx.seeds),
                "test_examples": f"{rows} rows clustered (every number rests on all of them; no test set: "
                                 "nothing is trained)",
                "cluster_sizes": {str(s): v for s, v in sizes.items()},
                "zeta_chance_equal_groups": round(equal_groups_floor(k) if k == classes else
                                                  1 - 1 / k - 1 / classes + 2 / (k * classes), 6),
                "eq4_floor_this_clustering": round(eq4_floor(max(k, classes), rows), 6),
                "eq4_floor_table1": floor,
                "eq4_floor_table1_equal_groups": round(equal_groups_floor(g), 6),
                "table1_below_floor": below,
                "eq4_identities": "zeta(t, t) = 1 and zeta(t1, t2) = zeta(t2, t1) for every clustering",
                "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} seed(s) (K-means seed and Dirichlet "
                               "draws; the embedding is the same for every seed); Table I bounds are exact",
                "metric": "zeta: Eq. 4 (Rand index) over all pairs of rows; EMD: sum_i (n_i/n) ||q_i - p||_1 "
                          "(hetbench.metrics.emd, the split report's emd_clusters / emd_labels)",
            },
        )
