"""FedAvg accuracy against label skew (Hsu, Qi and Brown 2019, "Measuring the effects of non-identical
data distribution for federated visual classification", Fig. 4).

For every Dirichlet concentration alpha of the grid, a split of the source is made with the client
scheme (:class:`hetbench.partitioners.DirichletPartitioner`: every client has the same size and its own
class proportions drawn from Dir(alpha x prior)) through :func:`hetbench.pipeline.make_split`, and FedAvg
is trained on it with every seed by :func:`hetbench.sweep.sweep`; the centralised run (``central``) trains
on the lowest-alpha split's pooled training rows. Every number is the trainer's stable metric: the mean of
the last k evaluations (``final.last_k.accuracy``). Relative accuracy is FedAvg's over the centralised
run's, seed by seed.

With ``split_seed`` every seed trains on the same split (the spread is the training's); without it each
seed draws its own split (the spread covers the partition too).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hetbench.contract import read_manifest
from hetbench.errors import HetbenchError, marked
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput, last_k_accuracy

#: TrainConfig fields a claim may set (the rest are runtime options or set by the runner)
TRAIN_KEYS = ("rounds", "clients_per_round", "local_epochs", "batch_size", "lr", "momentum", "weight_decay", "model",
              "norm", "eval_every", "eval_from", "image_size", "last_k")


def train_config(options: dict[str, Any], where: str):
    """A checked :class:`~hetbench.train.algorithms.TrainConfig` from a claim's ``train`` mapping.

    Examples
    --------
    >>> from hetbench.reproduce.runners.label_skew import train_config
    >>> train_config({"rounds": 3, "model": "digits-cnn"}, "x").rounds
    3
    >>> train_config({"device": "cpu"}, "x.yaml: settings.quick.train")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: settings.quick.train: unknown option 'device' (options: rounds, clients_per_round, local_epochs, batch_size, lr, momentum, weight_decay, model, norm, eval_every, eval_from, image_size, last_k)
    """
    from hetbench.train.algorithms import TrainConfig

    for key in options:
        if key not in TRAIN_KEYS:
            raise HetbenchError(f"{where}: unknown option '{key}' (options: {', '.join(TRAIN_KEYS)})")
    try:
        return TrainConfig(**options).check()
    except HetbenchError as exc:
        raise HetbenchError(f"{where}: {marked(exc)}") from None




class LabelSkewRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "accuracy_vs_alpha": "FedAvg test accuracy (%, mean of the last k evaluations) at each alpha, per seed",
        "relative_accuracy": "FedAvg accuracy at the lowest alpha over the centralised run's, per seed",
    }
    schema = {
        "split_seed": ("seed", False),
        "source": ("str", True), "clients": ("int", True), "alphas": ("numbers", True),
        "test_fraction": ("fraction", True), "seeds": ("ints", False),
        "train": ("mapping", True), "central": ("mapping", False),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        if len(settings["alphas"]) < 2:
            raise HetbenchError(f"{where}: 'alphas' must list at least two values")
        train_config(dict(settings["train"]), f"{where}.train")
        train_config({**settings["train"], **settings.get("central", {})}, f"{where}.central")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload, source_shape

        rows, channels, size, classes = source_shape(settings["source"])
        train_rows, test_rows = rows * (1 - settings["test_fraction"]), round(rows * settings["test_fraction"])
        alphas = settings["alphas"]
        client_rows = train_rows / settings["clients"]
        # a centralised round trains as many examples as a federated round (E x K x mean client rows,
        # hetbench.train.algorithms.central), on one client: serial
        central = federated_workload("central", {**settings["train"], **settings.get("central", {})}, len(seeds),
                                     client_rows, test_rows, channels, classes, size)
        return [federated_workload(f"fedavg, {len(alphas)} alphas", settings["train"], len(alphas) * len(seeds),
                                   client_rows, test_rows, channels, classes, size),
                dataclasses.replace(central, clients_per_round=1)]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.partitioners import DirichletPartitioner
        from hetbench.pipeline import make_split
        from hetbench.sources import load_table
        from hetbench.sweep import sweep

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device)
        central = dataclasses.replace(config, **settings.get("central", {}))
        alphas = [float(a) for a in settings["alphas"]]
        fixed = [settings["split_seed"]] if "split_seed" in settings else None
        table = load_table(settings["source"])
        name = settings["source"].split(":")[-1].replace("/", "-")
        splits: dict[tuple[float, int], Path] = {}
        acc: list[list[float]] = []
        test_rows: set[int] = set()
        for alpha in alphas:
            row = []
            for seed in ctx.seeds:
                split_seed = fixed[0] if fixed else seed
                key = (alpha, split_seed)
                if key not in splits:
                    folder = ctx.work / f"{name}-a{alpha:g}-n{settings['clients']}-s{split_seed}"
                    partitioner = DirichletPartitioner(settings["clients"], alpha, "client", None, 0)
                    make_split(table, partitioner, folder, seed=split_seed, test_fraction=settings["test_fraction"],
                               quiet=True)
                    splits[key] = folder
                    manifest = read_manifest(folder)
                    test_rows.add(int(manifest["splits"]["test"]["num_rows"]))
                run = sweep(splits[key], "fedavg", seeds=[seed], config=config, out=ctx.runs, quiet=True,
                            threads=ctx.threads, store=ctx.store)[0]
                row.append(last_k_accuracy(run.doc))
                ctx.note(f"fedavg alpha={alpha:g} seed {seed}: {row[-1]:.2f}% ({run.path.name})")
            acc.append(row)
        relative, central_acc = [], []
        for seed, fed in zip(ctx.seeds, acc[-1]):
            key = (alphas[-1], fixed[0] if fixed else seed)
            run = sweep(splits[key], "central", seeds=[seed], config=central, out=ctx.runs, quiet=True,
                        threads=ctx.threads, store=ctx.store)[0]
            central_acc.append(last_k_accuracy(run.doc))
            ctx.note(f"central seed {seed}: {central_acc[-1]:.2f}%")
            relative.append(fed / last_k_accuracy(run.doc) if last_k_accuracy(run.doc) > 0 else 0.0)
        labels = [f"alpha={a:g}" for a in alphas]
        return RunOutput(
            measurements={
                "accuracy_vs_alpha": Measurement(acc, x=alphas, unit="accuracy (%)", labels=labels),
                "relative_accuracy": Measurement([relative], x=[alphas[-1]], unit="FedAvg / centralised accuracy",
                                                 labels=[labels[-1]]),
            },
            axes={"accuracy_vs_alpha": Axes("Dirichlet alpha (label skew grows to the right)", "FedAvg accuracy (%)",
                                            log_x=True, reverse_x=True),
                  "relative_accuracy": Axes("", "FedAvg / centralised accuracy")},
            facts={"source": settings["source"], "clients": settings["clients"], "seeds": list(ctx.seeds),
                   "split_seed": fixed[0] if fixed else "the run's seed",
                   "test_examples": sorted(test_rows)[0] if len(test_rows) == 1 else sorted(test_rows),
                   "train": {k: getattr(config, k) for k in TRAIN_KEYS},
                   "central_rounds": central.rounds, "central_accuracy": central_acc,
                   "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} seed(s)",
                   "metric": f"mean of the last {config.last_k} evaluations (final.last_k.accuracy)"},
        )
