"""Every algorithm's defaults learn on a strongly label-skewed split: the trainer's own claim about itself.

``hetbench train --algo X`` with no option but the split must give a model that learns: each algorithm's
defaults (:class:`hetbench.train.algorithms.TrainConfig`, the algorithm's ``Hyper`` and its
``default_lr``) are the ones its paper recommends or that hetbench's tuning chose, and a default that
leaves a model at chance on a hard split is a defect a leaderboard would carry silently.

Protocol: one client-scheme Dirichlet split of the source (Hsu et al. 2019, q_k ~ Dir(alpha p), equal
client sizes; :func:`hetbench.reproduce.runners.server_momentum.dirichlet_split`) at a strong skew
(alpha 0.05: the median client has most of its rows in one class). Every algorithm of the registry but
``central`` is trained on it with every seed through :func:`hetbench.sweep.sweep`, with the trainer's defaults
and only the claim's ``train`` options (rounds, the evaluations the settling check and the last-k metric
read) and the algorithm's own ``options`` (FedBN needs a model with normalisation layers: ResNet-10 with
GroupNorm at 16 px). The measurement is each algorithm's mean test accuracy of the last k evaluations, per
seed; the claim's criterion asks every algorithm's interval to lie above a multiple of chance.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput, last_k_accuracy
from hetbench.reproduce.runners.label_skew import train_config


def algorithms_of(settings: dict[str, Any], where: str) -> list[str]:
    """The algorithms a ``defaults_learn`` claim trains: its ``algorithms`` list, else every registered one but
    ``central``, in the registry's order.

    Examples
    --------
    >>> from hetbench.reproduce.runners.defaults_learn import algorithms_of
    >>> "central" in algorithms_of({}, "x"), algorithms_of({"algorithms": ["fedavg", "scaffold"]}, "x")
    (False, ['fedavg', 'scaffold'])
    >>> algorithms_of({"algorithms": ["fedsgd"]}, "x.yaml: settings.quick")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: settings.quick: unknown algorithm 'fedsgd' in 'algorithms'
    """
    from hetbench.train.algorithms import ALGORITHMS

    names = [n for n in ALGORITHMS.names() if n != "central"]
    chosen = settings.get("algorithms", names)
    if not isinstance(chosen, list) or not chosen:
        raise HetbenchError(f"{where}: 'algorithms' must be a non-empty list of algorithm names")
    for name in chosen:
        if name not in names:
            raise HetbenchError(f"{where}: unknown algorithm {name!r} in 'algorithms'")
    return list(chosen)


class DefaultsLearnRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "accuracy_by_algorithm": "test accuracy (%, mean of the last k evaluations) of every algorithm's defaults, "
                                 "per seed",
    }
    schema = {
        "source": ("str", True), "clients": ("int", True), "alpha": ("number", True),
        "test_fraction": ("fraction", True), "split_seed": ("seed", True), "train": ("mapping", True),
        "seeds": ("ints", False),
        "options": ("mapping", False),
    }  # and "algorithms", a list of names (algorithms_of)

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        rest = {k: v for k, v in settings.items() if k != "algorithms"}
        super().check_settings(rest, where)
        names = algorithms_of(settings, where)
        base = dict(settings["train"])
        train_config(base, f"{where}.train")
        for name, extra in settings.get("options", {}).items():
            if name not in names or not isinstance(extra, dict):
                raise HetbenchError(f"{where}.options: {name!r} must be one of the claim's algorithms, with a "
                                    "mapping of train options")
            train_config({**base, **extra}, f"{where}.options.{name}")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload, source_shape

        rows, channels, size, classes = source_shape(settings["source"])
        client_rows = rows * (1 - settings["test_fraction"]) / settings["clients"]
        test_rows = round(rows * settings["test_fraction"])
        options = settings.get("options", {})
        plain = [n for n in algorithms_of(settings, "settings") if n not in options]
        out = [federated_workload(f"{len(plain)} algorithms' defaults", settings["train"], len(plain) * len(seeds),
                                  client_rows, test_rows, channels, classes, size, algorithms=plain)]
        for name, extra in options.items():
            out.append(federated_workload(name, {**settings["train"], **extra}, len(seeds), client_rows, test_rows,
                                          channels, classes, size, algorithms=[name]))
        return out

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.reproduce.runners.server_momentum import dirichlet_split
        from hetbench.sources import load_table
        from hetbench.sweep import sweep

        names = algorithms_of(settings, "settings")
        base = dict(settings["train"])
        table = load_table(settings["source"])
        stem = settings["source"].split(":")[-1].replace("/", "-")
        folder, info = dirichlet_split(table, ctx.work, stem, settings["clients"], float(settings["alpha"]),
                                       settings["split_seed"], settings["test_fraction"])
        acc: list[list[float]] = []
        configs = {}
        for name in names:
            extra = settings.get("options", {}).get(name, {})
            config = dataclasses.replace(train_config({**base, **extra}, name), device=ctx.device)
            row = []
            for seed in ctx.seeds:
                run = sweep(folder, name, seeds=[seed], config=config, out=ctx.runs, quiet=True, threads=ctx.threads, store=ctx.store)[0]
                row.append(last_k_accuracy(run.doc))
                ctx.note(f"{name} seed {seed}: {row[-1]:.2f}% ({run.path.name})")
            acc.append(row)
            configs[name] = resolved_settings(run.doc)
        k = train_config(base, "train").last_k
        return RunOutput(
            measurements={"accuracy_by_algorithm": Measurement(acc, unit="accuracy (%)", labels=names)},
            axes={"accuracy_by_algorithm": Axes("algorithm (its defaults)", "test accuracy (%)")},
            facts={"source": settings["source"], "clients": settings["clients"], "alpha": settings["alpha"],
                   "split_seed": settings["split_seed"], "seeds": list(ctx.seeds), "emd": round(info["emd"], 4),
                   "test_examples": info["test_examples"], "train": configs,
                   "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} seed(s)",
                   "metric": f"mean of the last {k} evaluations (final.last_k.accuracy)"},
        )


#: the training settings a defaults-learn record reports per algorithm, as the run resolved them
RESOLVED_KEYS = ("model", "norm", "lr", "momentum", "weight_decay", "local_epochs", "batch_size", "clients_per_round",
                 "rounds", "eval_every", "eval_from", "last_k")


def resolved_settings(doc: dict[str, Any]) -> dict[str, Any]:
    """The settings a run trained with, as its results document records them once resolved (an algorithm's
    own default learning rate, local epochs and normalisation where the claim gave none), with the image
    size the model saw.

    Examples
    --------
    >>> from hetbench.reproduce.runners.defaults_learn import resolved_settings
    >>> resolved_settings({"config": {"model": "lenet", "lr": 0.02, "local_epochs": 5, "image_size": None},
    ...                    "split": {"image_size": 28}})
    {'model': 'lenet', 'lr': 0.02, 'local_epochs': 5, 'image_size': 28}
    """
    config = doc["config"]
    out = {k: config[k] for k in RESOLVED_KEYS if k in config}
    out["image_size"] = config.get("image_size") or doc.get("split", {}).get("image_size")
    return out


__all__ = ["DefaultsLearnRunner", "algorithms_of", "resolved_settings"]
