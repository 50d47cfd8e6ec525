"""FedAvgM's sensitivity to its effective step as the label skew grows (Hsu, Qi and Brown, ECCV 2020,
Appendix A.1 and Fig. 8).

Hsu et al. sweep FedAvgM's effective learning rate ``eta_eff = eta / (1 - beta)`` (``eta`` the client rate,
the server rate 1) over a half-decade grid and its momentum ``1 - beta`` over another, on Dirichlet splits
of CIFAR-10/100 from identical to highly non-identical, and draw the relative accuracy of every grid point
(the best over the betas giving the same ``eta_eff``). Their reading of Fig. 8: "the accuracy consistently
drops with increased non-identicalness, and the set of hyperparameters yielding high performance becomes
smaller".

Protocol: one client-scheme Dirichlet split per alpha (:func:`~hetbench.reproduce.runners.server_momentum.
dirichlet_split`, the same split seed); at every effective step of the grid and every beta, the algorithm
(``fedavgm``; ``fedavg`` for beta 0) is trained with every seed at the client rate ``eta_eff (1 - beta)``
(:func:`~hetbench.reproduce.runners.server_momentum.momentum_hyper`). A grid point's accuracy is that of its
best beta (by the seed-mean); an alpha's *best step* is the grid point with the best seed-mean accuracy. Two
measures, per seed:

* ``good_region``: the width, in decades of ``eta_eff``, of the steps whose accuracy is at least
  ``near_best`` (e.g. 95%) times the accuracy at the alpha's best step, with each step's ratio joined
  linearly over ``log10(eta_eff)`` (:func:`region_width`): the shape of the region apart from its level
  (Fig. 8 shades relative accuracy to centralised training, so there a region shrinks both because it
  narrows and because accuracy falls). A region cut by an end of the grid counts up to that end;
* ``best_accuracy``: the accuracy at the alpha's best step.

A run that diverges (a non-finite loss) scores chance accuracy (100 / classes): its step is outside the
region. Only the best steps' runs are written where the claim's settling rule judges them (``ctx.runs``);
the other grid runs, like Fig. 8's, are scored after a fixed budget of rounds, and the facts list how far
each grid point's seed-mean accuracy still moved over its last evaluations.
"""

from __future__ import annotations

import dataclasses
import shutil
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput, check_schema, last_k_accuracy
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config
from hetbench.reproduce.runners.server_momentum import dirichlet_split, momentum_hyper
from hetbench.reproduce.runners.tuning import choose_step


def algorithm_for(beta: float) -> str:
    """The trainer's algorithm for server momentum ``beta``: FedAvg at 0 (Hsu et al.'s ``1 - beta = 1``),
    FedAvgM otherwise.

    Examples
    --------
    >>> from hetbench.reproduce.runners.step_sensitivity import algorithm_for
    >>> algorithm_for(0.0), algorithm_for(0.9)
    ('fedavg', 'fedavgm')
    """
    return "fedavg" if beta == 0 else "fedavgm"


def region_width(steps: list[float], accuracy: list[list[float]], best: int, near: float) -> list[float]:
    """Per seed, the width in decades of the effective steps whose accuracy is at least ``near`` times the
    accuracy at step ``best``: each step's accuracy over the best step's (``accuracy[step][seed]``) is joined
    linearly over ``log10(step)``, and the lengths where that line is at or above ``near`` are summed.

    A region cut by an end of the grid is measured up to that end (a lower bound of its width).

    Examples
    --------
    Four half-decade steps: the first is at 80% of the best, the others at 95% or more; the second seed's
    last step is at 50%:

    >>> from hetbench.reproduce.runners.step_sensitivity import region_width
    >>> [round(w, 4) for w in region_width([0.01, 0.03162, 0.1, 0.3162],
    ...                                    [[80.0, 80.0], [95.0, 95.0], [100.0, 100.0], [96.0, 50.0]], 2, 0.95)]
    [1.0, 0.55]
    """
    import math

    x = [math.log10(s) for s in steps]
    widths = []
    for seed in range(len(accuracy[best])):
        top = accuracy[best][seed]
        r = [row[seed] / top if top > 0 else 0.0 for row in accuracy]
        width = 0.0
        for i in range(len(x) - 1):
            lo, hi = sorted((r[i], r[i + 1]))
            if lo >= near:
                width += x[i + 1] - x[i]
            elif hi >= near:  # the line crosses ``near`` inside the segment: the part above it
                width += (x[i + 1] - x[i]) * (hi - near) / (hi - lo)
        widths.append(width)
    return widths


class StepSensitivityRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "good_region": "per alpha and seed, the width (decades of eta_eff) of the steps whose accuracy is at least "
                       "near_best times the accuracy at that alpha's best step",
        "best_accuracy": "per alpha and seed, the test accuracy (%, mean of the last k evaluations) at that "
                         "alpha's best step",
    }
    schema = {
        "source": ("str", True), "clients": ("int", True), "alphas": ("numbers", True),
        "test_fraction": ("fraction", True), "split_seed": ("seed", True), "seeds": ("ints", False),
        "near_best": ("fraction", True),
        "effective_steps": ("numbers", True), "train": ("mapping", True),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        check_schema({k: v for k, v in settings.items() if k != "server_momenta"}, self.schema, where)
        betas = settings.get("server_momenta")
        if (not isinstance(betas, list) or not betas or len(set(betas)) != len(betas)
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) and 0 <= b < 1 for b in betas)):
            raise HetbenchError(f"{where}: 'server_momenta' must be a non-empty list of distinct numbers in [0, 1) "
                                f"(got {betas!r})")
        alphas, grid = settings["alphas"], settings["effective_steps"]
        if len(alphas) < 2 or list(alphas) != sorted(alphas, reverse=True) or len(set(alphas)) != len(alphas):
            raise HetbenchError(f"{where}: 'alphas' must list at least two distinct values from the most identical "
                                f"down (got {alphas!r})")
        if len(grid) < 3 or list(grid) != sorted(grid) or len(set(grid)) != len(grid):
            raise HetbenchError(f"{where}: 'effective_steps' must list at least three distinct values in increasing "
                                f"order (got {grid!r})")
        train_config(dict(settings["train"]), f"{where}.train")
        if "lr" in settings["train"]:
            raise HetbenchError(f"{where}.train: 'lr' is not a setting of this claim: the client rate is "
                                "eta_eff (1 - beta) for each effective rate of 'effective_steps'")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload, source_shape

        rows, channels, size, classes = source_shape(settings["source"])
        client_rows = rows * (1 - settings["test_fraction"]) / settings["clients"]
        runs = len(settings["alphas"]) * len(settings["effective_steps"]) * len(settings["server_momenta"]) * len(seeds)
        return [federated_workload("fedavgm: effective-step grid per alpha", settings["train"], runs, client_rows,
                                   round(rows * settings["test_fraction"]), channels, classes, size)]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sources import load_table
        from hetbench.sweep import sweep
        from hetbench.train.local import TrainingDiverged
        from hetbench.train.settling import settling_of

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device)
        alphas = [float(a) for a in settings["alphas"]]
        grid = [float(s) for s in settings["effective_steps"]]
        betas = [float(b) for b in settings["server_momenta"]]
        seeds = list(ctx.seeds)
        table = load_table(settings["source"])
        chance = 100.0 / table.num_classes
        name = settings["source"].split(":")[-1].replace("/", "-")
        splits = {a: dirichlet_split(table, ctx.work, name, settings["clients"], a, settings["split_seed"],
                                     settings["test_fraction"]) for a in alphas}

        def train(alpha: float, step: float, beta: float) -> tuple[list[float], list[Any], int]:
            """Every seed at one grid point: accuracies (chance where diverged), the runs, divergences."""
            algo = algorithm_for(beta)
            hyper, lr = momentum_hyper(algo, step, beta)
            acc, runs, diverged = [], [], 0
            for seed in seeds:  # one at a time: a seed that diverges leaves the others' runs standing
                try:
                    run = sweep(splits[alpha][0], algo, seeds=[seed], config=dataclasses.replace(config, lr=lr),
                                hyper=hyper, out=grid_runs / f"eta_eff-{step:g}", quiet=True, threads=ctx.threads,
                                store=ctx.store)[0]
                except TrainingDiverged:
                    acc.append(chance)
                    diverged += 1
                    continue
                acc.append(last_k_accuracy(run.doc))
                runs.append(run)
            return acc, runs, diverged

        grid_runs = ctx.work / "grid"

        accuracy: dict[float, list[list[float]]] = {}  # alpha -> [step][seed], at each step's best beta
        table_facts: dict[str, dict[str, Any]] = {}
        best: dict[float, tuple[int, float]] = {}
        best_runs: list[Any] = []
        for alpha in alphas:
            rows, cells, tried = [], {}, {}
            for step in grid:
                tried[step] = {beta: train(alpha, step, beta) for beta in betas}
                beta = max(betas, key=lambda b: (sum(tried[step][b][0]), -betas.index(b)))
                acc, runs, diverged = tried[step][beta]
                rows.append(acc)
                moved = settling_of([r.doc for r in runs])["change"] if runs and not diverged else None
                cells[f"{step:g}"] = {"beta": beta, "accuracy": round(sum(acc) / len(acc), 4),
                                      "diverged": diverged, "last_change": moved}
                ctx.note(f"alpha={alpha:g} eta_eff {step:g} (beta {beta:g}): {cells[f'{step:g}']['accuracy']:.2f}%"
                         + (f", {diverged} diverged" if diverged else ""))
            means = [sum(r) / len(r) for r in rows]
            index = grid.index(choose_step(grid, means))
            best[alpha] = (index, cells[f"{grid[index]:g}"]["beta"])
            best_runs += tried[grid[index]][best[alpha][1]][1]
            accuracy[alpha] = rows
            table_facts[f"alpha={alpha:g}"] = cells
        for run in best_runs:  # the best steps' runs go where the settling rule judges them
            target = ctx.runs / run.path.relative_to(grid_runs)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run.path, target)
        near = float(settings["near_best"])
        labels = [f"alpha={a:g} (EMD {splits[a][1]['emd']:.2f})" for a in alphas]
        edge = [f"alpha={a:g}" for a in alphas if best[a][0] in (0, len(grid) - 1)]
        for where in edge:  # the region is cut by the grid: its width is then a lower bound
            ctx.note(f"warning: the best step at {where} is on the edge of the grid")
        axes_x = "Dirichlet alpha (label skew grows to the right)"
        return RunOutput(
            measurements={
                "good_region": Measurement([region_width(grid, accuracy[a], best[a][0], near) for a in alphas],
                                           x=alphas, unit=f"decades of eta_eff within {near:.0%} of the best step",
                                           labels=labels),
                "best_accuracy": Measurement([accuracy[a][best[a][0]] for a in alphas], x=alphas,
                                             unit="accuracy (%)", labels=labels),
            },
            axes={"good_region": Axes(axes_x, f"good steps' width (decades, >= {near:.0%} of best)", log_x=True,
                                      reverse_x=True),
                  "best_accuracy": Axes(axes_x, "accuracy at the best step (%)", log_x=True, reverse_x=True)},
            facts={"source": settings["source"], "clients": settings["clients"], "alphas": alphas,
                   "emd": {f"alpha={a:g}": round(splits[a][1]["emd"], 4) for a in alphas},
                   "test_examples": splits[alphas[0]][1]["test_examples"], "split_seed": settings["split_seed"],
                   "seeds": seeds, "effective_steps": grid, "server_momenta": betas, "near_best": near,
                   "best_step": {f"alpha={a:g}": {"eta_eff": grid[best[a][0]], "beta": best[a][1]} for a in alphas},
                   "best_step_on_grid_edge": edge, "grid": table_facts,
                   "grid_reading": "seed-mean accuracy (%) at every effective step, at its best beta; 'diverged' "
                                   "counts the seeds that diverged (scored at chance); 'last_change' is the "
                                   "fitted change of the seed-mean accuracy over its last evaluations (the "
                                   "settling rule's measure), null where a seed diverged",
                   "chance": round(chance, 4), "server_lr": 1.0,
                   "train": {k: getattr(config, k) for k in TRAIN_KEYS if k != "lr"},
                   "uncertainty": f"mean and its 95% t interval over {len(seeds)} seed(s), paired by seed",
                   "metric": f"test accuracy (%), mean of the last {config.last_k} evaluations "
                             "(final.last_k.accuracy)"},
        )
