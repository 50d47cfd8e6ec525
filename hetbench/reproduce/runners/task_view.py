"""Borazjani et al.'s thesis: heterogeneity is in the eye of the task (arXiv 2025, Sec. III-B, Figs. 3 and 6-9).

The paper's point: a label-based Dirichlet split (clients' class shares from Dir(alpha p)) makes a task's
loss worse as alpha falls only when the task perceives the labels; for a task that perceives the data
otherwise (depth, edges, ...), the loss hardly moves, while a Dirichlet over the K-means clusters of that
task's own embeddings (``hetbench partition embedding``) opens a gap. "For the non-classification tasks
(...) the change in the value of alpha (...) results in a performance gap when our embedding-based
distribution of data is utilized (...). However, (...) such a performance gap does not hold for class-based
distribution of data" (Sec. IV, Figs. 6-9).

Here the trainer trains classifiers only, so the task that does not perceive the labels is a classifier of
another column: on a data set with a label (``attribute``, e.g. the digit) and a second column the task
predicts (``task``, e.g. the domain a digit was drawn from), the task's rows are split two ways at every
alpha (:data:`METHODS`):

- ``attribute``: Hsu et al.'s client-scheme Dirichlet over the attribute, the labels a label-based benchmark
  would use (:class:`hetbench.partitioners.DirichletPartitioner` with ``partition_by=attribute``);
- ``embedding``: Borazjani et al.'s Dirichlet over K-means clusters of the task's embeddings
  (:class:`hetbench.partitioners.EmbeddingPartitioner`).

FedAvg is trained on every split with every seed (one split per method and alpha, ``split_seed``); a loss ratio
is the mean test loss of the last k evaluations at the lowest alpha over that at the highest, seed by seed (a
ratio, not a difference: the loss at the highest alpha falls as training goes on, and the ratio does not
depend on its scale).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput, last_k_accuracy
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config

#: the two ways of splitting the task's rows, in the order of the results
METHODS = ("attribute", "embedding")


def loss_ratio(losses: list[list[float]]) -> list[float]:
    """Seed by seed, the loss at the last (lowest) alpha over the loss at the first (highest).

    Parameters
    ----------
    losses : list of list of float
        One list per alpha (highest first), one loss per seed in each.

    Examples
    --------
    >>> from hetbench.reproduce.runners.task_view import loss_ratio
    >>> loss_ratio([[0.10, 0.16], [0.15, 0.30], [0.40, 0.32]])
    [4.0, 2.0]
    """
    return [low / high for high, low in zip(losses[0], losses[-1])]


def group_emd(assignment: np.ndarray, values: np.ndarray, num_clients: int) -> float:
    """The population-weighted mean EMD of the clients' distributions over ``values`` (0 to 2).

    Parameters
    ----------
    assignment : numpy.ndarray
        Each row's client (-1: dropped).
    values : numpy.ndarray
        Each row's value of a column (labels, domains, ...).
    num_clients : int
        The clients of the split.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.reproduce.runners.task_view import group_emd
    >>> group_emd(np.array([0, 0, 1, 1]), np.array(["a", "a", "b", "b"]), 2)
    1.0
    >>> group_emd(np.array([0, 0, 1, 1]), np.array(["a", "b", "a", "b"]), 2)
    0.0
    """
    from hetbench.metrics import emd, label_matrix

    _, codes = np.unique(values, return_inverse=True)
    return float(emd(label_matrix(assignment, codes.astype(np.int64), num_clients, int(codes.max()) + 1)))


class TaskViewRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "embedding_ratio": "the task's FedAvg test loss at the lowest alpha over that at the highest, on the splits "
                           "over clusters of the task's embeddings, per seed",
        "attribute_ratio": "the same on the splits over the attribute's values, per seed",
        "ratio_difference": "the embedding splits' loss ratio minus the attribute splits', per seed",
    }
    schema = {"source": ("str", True), "task": ("str", True), "attribute": ("str", True),
              "clients": ("int", True), "alphas": ("numbers", True), "clusters": ("int", True),
              "embedder": ("str", True), "split_seed": ("seed", True), "seeds": ("ints", False),
              "train": ("mapping", True)}

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        alphas = settings["alphas"]
        if len(alphas) < 2 or any(a <= b for a, b in zip(alphas, alphas[1:])):
            raise HetbenchError(f"{where}: 'alphas' must list at least two values, from the highest down")
        if settings["task"] == settings["attribute"]:
            raise HetbenchError(f"{where}: 'task' and 'attribute' must be two columns (both are "
                                f"'{settings['task']}')")
        if settings["clusters"] < 2:
            raise HetbenchError(f"{where}: 'clusters' must be at least 2")
        train_config(dict(settings["train"]), f"{where}.train")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload, source_shape
        from hetbench.sources import load_table

        rows, channels, size, _ = source_shape(settings["source"])
        table = load_table(settings["source"], label_col=settings["task"])
        test_rows = sum(table.num_rows(s) for s in table.splits if s != "train")
        return [federated_workload(f"fedavg on the task '{settings['task']}', {len(METHODS)} split methods",
                                   settings["train"], len(METHODS) * len(settings["alphas"]) * len(seeds),
                                   rows / settings["clients"], test_rows, channels, table.num_classes, size)]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sweep import sweep

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device)
        alphas = [float(a) for a in settings["alphas"]]
        task, attribute = settings["task"], settings["attribute"]
        splits, skew = self._splits(settings, ctx)
        loss = {m: [[] for _ in alphas] for m in METHODS}
        accuracy = {m: [[] for _ in alphas] for m in METHODS}
        for seed in ctx.seeds:
            for method in METHODS:
                for i, folder in enumerate(splits[method]):
                    run = sweep(folder, "fedavg", seeds=[seed], config=config, out=ctx.runs, quiet=True,
                                threads=ctx.threads, store=ctx.store)[0]
                    loss[method][i].append(float(run.doc["final"]["last_k"]["loss"]))
                    accuracy[method][i].append(last_k_accuracy(run.doc))
                    ctx.note(f"{method} split, alpha={alphas[i]:g}, seed {seed}: loss {loss[method][i][-1]:.4f}, "
                             f"accuracy {accuracy[method][i][-1]:.2f}%")
        ratios = {m: loss_ratio(loss[m]) for m in METHODS}
        span = f"alpha={alphas[-1]:g} / alpha={alphas[0]:g}"
        unit = f"'{task}' test loss ratio"
        ratio_axes = Axes("", f"'{task}' loss at the lowest alpha / at the highest")
        return RunOutput(
            measurements={
                "embedding_ratio": Measurement([ratios["embedding"]], unit=unit,
                                               labels=[f"split over '{task}' embedding clusters: {span}"]),
                "attribute_ratio": Measurement([ratios["attribute"]], unit=unit,
                                               labels=[f"split over '{attribute}': {span}"]),
                "ratio_difference": Measurement([[e - a for e, a in zip(ratios["embedding"], ratios["attribute"])]],
                                                unit="embedding split's loss ratio - attribute split's",
                                                labels=[f"embedding clusters vs '{attribute}'"]),
            },
            axes={"embedding_ratio": ratio_axes, "attribute_ratio": ratio_axes,
                  "ratio_difference": Axes("", "embedding split's loss ratio - attribute split's")},
            facts={
                "source": settings["source"], "task": task, "attribute": attribute, "clients": settings["clients"],
                "alphas": alphas, "clusters": settings["clusters"], "embedder": settings["embedder"],
                "split_seed": settings["split_seed"], "seeds": list(ctx.seeds),
                "mean_loss": {m: [round(float(np.mean(v)), 5) for v in loss[m]] for m in METHODS},
                "mean_accuracy": {m: [round(float(np.mean(v)), 3) for v in accuracy[m]] for m in METHODS},
                "split_emd": skew,
                "train": {k: getattr(config, k) for k in TRAIN_KEYS},
                "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} seed(s), paired by seed; one split "
                               "per method and alpha",
                "metric": f"test loss (cross-entropy, nats), the mean of the last {config.last_k} evaluations "
                          "(final.last_k.loss)",
            },
        )

    def _splits(self, settings: dict[str, Any],
                ctx: Context) -> tuple[dict[str, list[Path]], dict[str, dict[str, list[float]]]]:
        """Every method's split of the task's rows, one per alpha, and each split's EMD over the task's labels
        and over the attribute (``{method: {"task": [...], "attribute": [...]}}``)."""
        from hetbench.partitioners import DirichletPartitioner, EmbeddingPartitioner
        from hetbench.partitioners.embedding import embed_rows
        from hetbench.pipeline import make_split
        from hetbench.sources import load_table

        task, attribute, seed = settings["task"], settings["attribute"], settings["split_seed"]
        try:
            table = load_table(settings["source"], label_col=task)
            values = {"task": table.column("train", task), "attribute": table.column("train", attribute)}
        except (HetbenchError, KeyError) as exc:
            raise HetbenchError(f"{settings['source']}: cannot read columns '{task}' and '{attribute}' ({exc})") from None
        stored = {"train": embed_rows(table, "train", settings["embedder"])}  # one embedding for every alpha
        folders: dict[str, list[Path]] = {m: [] for m in METHODS}
        skew = {m: {"task": [], "attribute": []} for m in METHODS}
        for alpha in settings["alphas"]:
            for method in METHODS:
                if method == "embedding":
                    p = EmbeddingPartitioner(settings["clients"], alpha, settings["clusters"], "client",
                                             settings["embedder"])
                    p.stored_embeddings = stored
                else:
                    p = DirichletPartitioner(settings["clients"], alpha, "client", partition_by=attribute)
                folder = ctx.work / f"{task}-{method}-a{alpha:g}-n{settings['clients']}-s{seed}"
                fs, _ = make_split(table, p, folder, seed=seed, quiet=True)
                folders[method].append(folder)
                for key, col in values.items():
                    skew[method][key].append(round(group_emd(np.asarray(fs.partition.assignment), col,
                                                             settings["clients"]), 4))
                ctx.note(f"{method} split, alpha={alpha:g}: EMD over '{task}' {skew[method]['task'][-1]:.3f}, "
                         f"over '{attribute}' {skew[method]['attribute'][-1]:.3f}")
        return folders, skew
