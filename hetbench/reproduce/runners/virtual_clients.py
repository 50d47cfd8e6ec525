"""FedVC and FedIR against FedAvg on label-skewed clients of growing size imbalance (Hsu, Qi and Brown,
"Federated visual classification with real-world data distribution", ECCV 2020, sec. 5.2-5.3, Table 2,
Fig. 5 and Fig. 6).

FedVC (:class:`hetbench.train.algorithms.fedvc.FedVC`) draws clients with probability proportional to their
size n_k and has each train one *virtual client* of N_VC examples drawn from its data (without replacement
when n_k >= N_VC), so every client takes the same ``ceil(N_VC / B)`` steps; FedIR
(:class:`hetbench.train.algorithms.fedir.FedIR`) weights every client's loss by ``p(y) / q_k(y)``
(self-normalised per mini-batch, Eq. 4).

For every sigma of the grid, the client sizes are :func:`hetbench.partitioners.quantity.quantity_sizes`'s
log-normal law with that sigma (the same seed for every sigma, so the same clients grow; sigma 0 gives equal
sizes; every client keeps at least ``MIN_CLIENT_ROWS`` rows), and the split is Hsu et al.'s client-scheme
Dirichlet over those sizes (:func:`~hetbench.reproduce.runners.server_momentum.dirichlet_split`). FedAvg and
FedVC are trained on each split with every seed, FedIR on the most imbalanced one. Every number is the
trainer's ``final.last_k.accuracy``; differences are taken seed by seed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput, last_k_accuracy
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config
from hetbench.reproduce.runners.server_momentum import dirichlet_split
from hetbench.reproduce.runners.tuning import check_seed_setting

#: every client's smallest size (rows before the per-client test hold-out), so that each keeps training rows
MIN_CLIENT_ROWS = 5


def imbalanced_sizes(n: int, clients: int, sigma: float, seed: int) -> list[int]:
    """Client sizes summing to ``n``, log-normal with spread ``sigma`` (0: equal sizes), each at least
    :data:`MIN_CLIENT_ROWS`: ``MIN_CLIENT_ROWS - 1`` rows each, plus
    :func:`~hetbench.partitioners.quantity.quantity_sizes` of the rest (its one row each, the others in
    proportion to ``exp(sigma z_k)``, z_k standard normal drawn from ``seed``: the same z for every sigma).

    Parameters
    ----------
    n, clients : int
        Rows to split and number of clients.
    sigma : float
        The log-normal spread (>= 0).
    seed : int
        Seed of the z_k and of the rounding ties.

    Examples
    --------
    >>> from hetbench.reproduce.runners.virtual_clients import imbalanced_sizes
    >>> imbalanced_sizes(100, 4, 0.0, 0)
    [25, 25, 25, 25]
    >>> imbalanced_sizes(1000, 5, 1.0, 0), imbalanced_sizes(1000, 5, 2.0, 0)  # the same clients grow
    ([202, 158, 335, 198, 107], [178, 109, 491, 171, 51])
    """
    import numpy as np

    from hetbench.partitioners.quantity import quantity_sizes

    floor = MIN_CLIENT_ROWS - 1
    if n < clients * MIN_CLIENT_ROWS:
        raise HetbenchError(f"{n} rows cannot give {clients} clients {MIN_CLIENT_ROWS} rows each")
    rest = quantity_sizes(n - clients * floor, "lognormal", clients, float(sigma), np.random.default_rng(seed))
    return [int(v) + floor for v in rest]


class VirtualClientsRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "fedvc_gain_vs_imbalance": "FedVC's test accuracy minus FedAvg's (points) at each size sigma, per seed",
        "fedvc_minus_fedavg": "FedVC's accuracy minus FedAvg's (points) on the most imbalanced split, per seed",
        "fedir_minus_fedavg": "FedIR's accuracy minus FedAvg's (points) on the most imbalanced split, per seed",
    }
    schema = {
        "source": ("str", True), "clients": ("int", True), "alpha": ("number", True),
        "test_fraction": ("fraction", True), "vc_size": ("int", True),
        "seeds": ("ints", False), "train": ("mapping", True),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        check_seed_setting(settings, "split_seed", where)
        sigmas = settings.get("size_sigmas")
        ok = isinstance(sigmas, list) and len(sigmas) >= 2 and all(
            isinstance(s, (int, float)) and not isinstance(s, bool) and 0 <= s < 10 for s in sigmas)
        if not ok or list(sigmas) != sorted(set(sigmas)):
            raise HetbenchError(f"{where}: 'size_sigmas' must list at least two distinct increasing numbers in "
                                f"[0, 10) (got {sigmas!r})")
        super().check_settings({k: v for k, v in settings.items() if k not in ("split_seed", "size_sigmas")}, where)
        if settings["alpha"] <= 0:
            raise HetbenchError(f"{where}: 'alpha' must be a positive number (got {settings['alpha']!r})")
        train_config(dict(settings["train"]), f"{where}.train")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload, source_shape

        rows, channels, size, classes = source_shape(settings["source"])
        # FedVC trains N_VC rows per virtual client; FedAvg and FedIR a client's rows (the mean client here)
        client_rows = rows * (1 - settings["test_fraction"]) / settings["clients"]
        test_rows = round(rows * settings["test_fraction"])
        sigmas = len(settings["size_sigmas"])
        return [federated_workload(f"fedavg, {sigmas} sigmas; fedir, 1", settings["train"], (sigmas + 1) * len(seeds),
                                   client_rows, test_rows, channels, classes, size),
                federated_workload(f"fedvc, {sigmas} sigmas", settings["train"], sigmas * len(seeds),
                                   settings["vc_size"], test_rows, channels, classes, size, algorithms=["fedvc"])]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sources import load_table
        from hetbench.sweep import sweep

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device)
        sigmas = [float(s) for s in settings["size_sigmas"]]
        alpha, clients, split_seed = float(settings["alpha"]), int(settings["clients"]), settings["split_seed"]
        table = load_table(settings["source"])
        n = int(table.num_rows("train"))
        name = settings["source"].split(":")[-1].replace("/", "-")
        seeds = list(ctx.seeds)

        def train(folder, algo: str, hyper: dict[str, Any] | None = None) -> list[float]:
            runs = sweep(folder, algo, seeds=seeds, config=config, hyper=hyper, out=ctx.runs, quiet=True,
                         threads=ctx.threads, store=ctx.store)
            return [last_k_accuracy(r.doc) for r in runs]

        gains, labels, splits = [], [], []
        accuracy: dict[str, list[list[float]]] = {"fedavg": [], "fedvc": []}
        folder = None
        for sigma in sigmas:
            sizes = imbalanced_sizes(n, clients, sigma, split_seed)
            folder, info = dirichlet_split(table, ctx.work, name, clients, alpha, split_seed, settings["test_fraction"],
                                           sizes=sizes, tag=f"-sigma{sigma:g}")
            stats = info["size_stats"]
            splits.append({"sigma": sigma, "emd": round(info["emd"], 4), "test_examples": info["test_examples"],
                           **{f"train_rows_{k}": stats[k] for k in ("min", "median", "max")},
                           "size_cv": round(float(stats["cv"]), 4), "size_gini": round(float(stats["gini"]), 4)})
            labels.append(f"sigma={sigma:g} (cv {float(stats['cv']):.2f})")
            fedavg = train(folder, "fedavg")
            fedvc = train(folder, "fedvc", {"vc_size": int(settings["vc_size"])})
            accuracy["fedavg"].append(fedavg)
            accuracy["fedvc"].append(fedvc)
            gains.append([v - a for a, v in zip(fedavg, fedvc)])
            ctx.note(f"sigma={sigma:g}: fedavg {fedavg}, fedvc {fedvc}")
        fedir = train(folder, "fedir")
        ctx.note(f"sigma={sigmas[-1]:g}: fedir {fedir}")
        fedir_diff = [v - a for a, v in zip(accuracy["fedavg"][-1], fedir)]
        unit = "accuracy points (method - FedAvg)"
        test_rows = sorted({s["test_examples"] for s in splits})
        cvs = [f"{s['size_cv']:.2f}" for s in splits]
        return RunOutput(
            measurements={
                "fedvc_gain_vs_imbalance": Measurement(gains, x=sigmas, unit=unit, labels=labels),
                "fedvc_minus_fedavg": Measurement([gains[-1]], x=[sigmas[-1]], unit=unit, labels=[labels[-1]]),
                "fedir_minus_fedavg": Measurement([fedir_diff], x=[sigmas[-1]], unit=unit, labels=[labels[-1]]),
            },
            axes={"fedvc_gain_vs_imbalance": Axes(
                      f"client-size sigma (log-normal; 0: equal sizes); size cv {', '.join(cvs)}",
                      "FedVC - FedAvg accuracy (points)"),
                  "fedvc_minus_fedavg": Axes("", "FedVC - FedAvg accuracy (points)"),
                  "fedir_minus_fedavg": Axes("", "FedIR - FedAvg accuracy (points)")},
            facts={"source": settings["source"], "clients": clients, "alpha": alpha, "seeds": seeds,
                   "split_seed": split_seed, "vc_size": int(settings["vc_size"]), "splits": splits,
                   "test_examples": test_rows[0] if len(test_rows) == 1 else test_rows,
                   "fedavg_accuracy": accuracy["fedavg"], "fedvc_accuracy": accuracy["fedvc"],
                   "fedir_accuracy": fedir, "min_client_rows": MIN_CLIENT_ROWS,
                   "train": {k: getattr(config, k) for k in TRAIN_KEYS},
                   "uncertainty": f"mean and its 95% t interval over {len(seeds)} seed(s) of the paired difference",
                   "metric": f"test accuracy (%), mean of the last {config.last_k} evaluations "
                             "(final.last_k.accuracy)"},
        )
