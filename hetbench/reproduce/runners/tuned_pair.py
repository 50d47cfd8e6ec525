"""A method against a baseline on a label-Dirichlet split, each at its own tuned client learning rate.

The claim it backs first is the *SCAFFOLD collapse*: a 2025 benchmark of nine FL algorithms (Nechba et al.,
"A benchmark study on realistic non-IID data silos", FedBench 0.1.3, its label-skew table) reports SCAFFOLD
at 61.99% +- 1.4 against FedAvg's 98.85% +- 0.05 on MNIST split by p_k ~ Dir(0.5), every algorithm at one
shared learning rate. Karimireddy et al. (SCAFFOLD, ICML 2020, sec. 7) instead "always use global step-size
eta_g = 1 and tune the local step-size eta_l individually for each algorithm"; SCAFFOLD's corrected step
``y <- y - eta_l (g_i(y) - c_i + c)`` (Algorithm 1, line 10) adds the control variates' difference to every
local gradient, so a rate that suits FedAvg can be too large for it (the trainer's own default for SCAFFOLD
is 0.02 rather than 0.05 for that reason: :class:`hetbench.train.algorithms.scaffold.Scaffold`).

Protocol: two splits of the source at one alpha with the per-class scheme of the benchmarks (``scheme:
class``, Li et al. 2022: class c cut among the clients by Dir(alpha)) or Hsu et al.'s client scheme: an
evaluation split and a tuning split (another split seed: another draw, other held-out rows;
:func:`~hetbench.reproduce.runners.server_momentum.dirichlet_split`). Each of the two algorithms is trained
on the tuning split at every client learning rate of the grid with the tuning seeds (server rate 1, the
trainer's default for both), and its rate is the best mean accuracy there
(:func:`~hetbench.reproduce.runners.tuning.tune_on_grid`). Both are then trained at their chosen rates on
the evaluation split with every seed, an algorithm whose rate diverges on an evaluation seed moving to the
next lower rate of the grid for every seed (:func:`evaluate_with_fallback`); the measurement is the
method's accuracy minus the baseline's, seed by seed (the same seed: the same client selection and
initialisation).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any, Callable

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput, last_k_accuracy
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config
from hetbench.reproduce.runners.server_momentum import dirichlet_split
from hetbench.reproduce.runners.tuning import check_tuning_settings, tune_on_grid

#: the partition schemes a claim may name (:class:`hetbench.partitioners.DirichletPartitioner`)
SCHEMES = ("client", "class")


def evaluate_with_fallback(train: Callable[[float], list[float]], grid: list[float], rate: float,
                           note: Callable[[str], None] = lambda text: None,
                           algo: str = "") -> tuple[float, list[float], list[dict[str, Any]]]:
    """Train every evaluation seed at ``rate``; where one diverges, every seed again at the next lower rate of
    ``grid``, until all train.

    One tuning seed cannot see whether a rate trains every seed: a rate just below where an algorithm
    diverges may train the tuning seed and not another (SCAFFOLD's pilot: 0.05623 trained the tuning seed,
    0.1 diverged). A tuner that saw every seed would have counted that rate's divergence against it and
    taken a lower one, so this does: the next lower rate, never a choice by accuracy on the evaluation split.

    Returns
    -------
    rate, accuracy, fallbacks
        The rate every seed trained at, its accuracies, and each abandoned rate with why
        (``[{"lr": 0.05623, "diverged": "training diverged: ..."}]``).

    Raises
    ------
    HetbenchError
        When no rate of the grid up to ``rate`` trains every seed.

    Examples
    --------
    >>> from hetbench.reproduce.runners.tuned_pair import evaluate_with_fallback
    >>> from hetbench.train.local import TrainingDiverged
    >>> def train(lr):
    ...     if lr > 0.05:
    ...         raise TrainingDiverged("training diverged: the loss became nan")
    ...     return [90.0, 91.0]
    >>> evaluate_with_fallback(train, [0.01, 0.03, 0.1], 0.1)
    (0.03, [90.0, 91.0], [{'lr': 0.1, 'diverged': 'training diverged: the loss became nan'}])
    """
    from hetbench.train.local import TrainingDiverged

    fallbacks: list[dict[str, Any]] = []
    while True:
        try:
            return rate, train(rate), fallbacks
        except TrainingDiverged as exc:
            fallbacks.append({"lr": rate, "diverged": str(exc)})
            lower = [r for r in grid if r < rate]
            if not lower:
                raise HetbenchError(f"{algo} diverged on the evaluation split at every rate of the grid up to "
                                    f"{fallbacks[0]['lr']:g}: lower the grid") from None
            note(f"{algo} diverged at lr {rate:g} on an evaluation seed: every seed again at {lower[-1]:g}")
            rate = lower[-1]


class TunedPairRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "accuracy_gap": "the method's test accuracy minus the baseline's (accuracy points), each at its own "
                        "client learning rate tuned on the tuning split, per seed, on the evaluation split",
    }
    schema = {
        "source": ("str", True), "clients": ("int", True), "alpha": ("number", True), "scheme": ("str", True),
        "min_size": ("int", False), "test_fraction": ("fraction", True), "seeds": ("ints", False),
        "tune_seeds": ("ints", True), "algorithms": ("strs", True), "learning_rates": ("numbers", True),
        "train": ("mapping", True),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        from hetbench.train.algorithms import ALGORITHMS

        check_tuning_settings(settings, where, super().check_settings, "learning_rates",
                              "each algorithm trains at its rate of 'learning_rates' chosen on the tuning split")
        if settings["scheme"] not in SCHEMES:
            raise HetbenchError(f"{where}: 'scheme' must be one of {', '.join(SCHEMES)} (got {settings['scheme']!r})")
        if "min_size" in settings and settings["scheme"] != "class":
            raise HetbenchError(f"{where}: 'min_size' applies to scheme class only")
        algos = settings["algorithms"]
        if len(algos) != 2:
            raise HetbenchError(f"{where}: 'algorithms' must name two algorithms, the baseline and the method "
                                f"(got {algos!r})")
        for algo in algos:
            if algo not in ALGORITHMS or algo == "central":
                raise HetbenchError(f"{where}: 'algorithms': unknown federated algorithm '{algo}'")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload, source_shape

        algos = tuple(settings["algorithms"])
        rows, channels, size, classes = source_shape(settings["source"])
        client_rows = rows * (1 - settings["test_fraction"]) / settings["clients"]
        test_rows = round(rows * settings["test_fraction"])
        tuning = len(algos) * len(settings["learning_rates"]) * len(settings["tune_seeds"])
        return [federated_workload(f"{', '.join(algos)}: tuning grid", settings["train"], tuning, client_rows,
                                   test_rows, channels, classes, size, algorithms=algos),
                federated_workload(f"{', '.join(algos)}: evaluation", settings["train"], len(algos) * len(seeds),
                                   client_rows, test_rows, channels, classes, size, algorithms=algos)]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sources import load_table
        from hetbench.sweep import sweep

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device)
        baseline, method = algos = tuple(settings["algorithms"])
        alpha, scheme = float(settings["alpha"]), settings["scheme"]
        grid = [float(r) for r in settings["learning_rates"]]
        tune_seeds = [int(s) for s in settings["tune_seeds"]]
        table = load_table(settings["source"])
        name = settings["source"].split(":")[-1].replace("/", "-")
        split = dict(clients=settings["clients"], alpha=alpha, test_fraction=settings["test_fraction"],
                     scheme=scheme, min_size=int(settings.get("min_size", 0)))
        eval_folder, eval_info = dirichlet_split(table, ctx.work, name, split_seed=settings["split_seed"], **split)
        tune_folder, tune_info = dirichlet_split(table, ctx.work, name, split_seed=settings["tune_split_seed"], **split)

        def train(folder: Path, algo: str, lr: float, seeds: list[int], out: Path) -> list[float]:
            # a folder per rate: the client rate is a training option, not part of a result's name
            runs = sweep(folder, algo, seeds=seeds, config=dataclasses.replace(config, lr=lr), out=out / f"lr-{lr:g}",
                         quiet=True, threads=ctx.threads, store=ctx.store)
            return [last_k_accuracy(r.doc) for r in runs]

        # the tuning runs stay in the scratch folder: they are not judged for settling
        tuning, chosen = tune_on_grid(algos, grid, lambda algo, lr: train(tune_folder, algo, lr, tune_seeds,
                                                                          ctx.work / "tuning"), ctx.note, "lr")
        accuracy, fallbacks = {}, {}
        for algo in algos:
            chosen[algo], accuracy[algo], fallbacks[algo] = evaluate_with_fallback(
                lambda lr, a=algo: train(eval_folder, a, lr, list(ctx.seeds), ctx.work / "evaluation"), grid,
                chosen[algo], ctx.note, algo)
            # only the runs the numbers rest on are judged for settling: the chosen rate's, not an abandoned one's
            shutil.copytree(ctx.work / "evaluation" / f"lr-{chosen[algo]:g}", ctx.runs / f"lr-{chosen[algo]:g}",
                            dirs_exist_ok=True)
            ctx.note(f"{algo} at lr {chosen[algo]:g}: {accuracy[algo]}")
        edge = [a for a in algos if chosen[a] in (grid[0], grid[-1])]
        for algo in edge:  # the optimum may lie outside the grid: the tuned comparison is then not tuned
            ctx.note(f"warning: {algo}'s chosen learning rate {chosen[algo]:g} is on the edge of the grid")
        gap = [m - b for b, m in zip(accuracy[baseline], accuracy[method])]
        label = f"alpha={alpha:g} ({scheme} scheme, EMD {eval_info['emd']:.2f})"
        return RunOutput(
            measurements={"accuracy_gap": Measurement([gap], x=[alpha], unit=f"accuracy points ({method} - {baseline})",
                                                      labels=[label])},
            axes={"accuracy_gap": Axes("", f"{method} - {baseline} accuracy (points)")},
            facts={"source": settings["source"], "clients": settings["clients"], "alpha": alpha, "scheme": scheme,
                   "emd": round(eval_info["emd"], 4), "tune_emd": round(tune_info["emd"], 4),
                   "client_sizes": eval_info["size_stats"],
                   "seeds": list(ctx.seeds), "split_seed": settings["split_seed"],
                   "tune_split_seed": settings["tune_split_seed"], "tune_seeds": tune_seeds,
                   "test_examples": eval_info["test_examples"], "tune_test_examples": tune_info["test_examples"],
                   "baseline": baseline, "method": method, "learning_rates": grid,
                   "tuning_accuracy": tuning, "chosen_lr": chosen, "server_lr": 1.0, "chosen_on_grid_edge": edge,
                   "evaluation_fallbacks": fallbacks,
                   "accuracy": accuracy,
                   "selection": "each algorithm's client learning rate is the grid value with the best mean accuracy "
                                "on the tuning split (its own held-out rows) with the tuning seeds; the evaluation "
                                "split is not used to choose",
                   "train": {k: getattr(config, k) for k in TRAIN_KEYS},
                   "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} seed(s) of the paired difference",
                   "metric": f"test accuracy (%), mean of the last {config.last_k} evaluations "
                             "(final.last_k.accuracy)"},
        )
