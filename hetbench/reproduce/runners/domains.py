"""DapperFL against FedAvg on each digit domain (Jia et al., NeurIPS 2024, Table 1).

The split is ``hetbench build digits-domains`` (:func:`hetbench.builders.digits_domains.build_digits_domains`:
clients spread over the four domains, each client a disjoint ``fraction`` of its domain's training rows,
one test set per domain). FedAvg and DapperFL (the trainer's ``dapperfl``: model fusion pruning at each
client's pruning ratio, DAR loss, masked aggregation; pruning ratios by device level, each client's level drawn
per run independently of its domain: :func:`hetbench.train.algorithms.dapperfl.device_levels`) are trained on it with every seed by :func:`hetbench.sweep.sweep`, with the group protocol
``group_by="domain"`` so that every result carries each domain's test accuracy
(``final.last_k.group_accuracy``, the mean of the last k evaluations). Seed by seed:

- ``mean_gap``: DapperFL's accuracy averaged over the domains minus FedAvg's (points);
- ``domain_wins``: on how many domains DapperFL's accuracy is above FedAvg's.

The split is built once (seed ``split_seed``), so the spread over seeds is the training's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hetbench.errors import HetbenchError, marked
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config

#: the algorithms compared, in the order of the results
ALGOS = ("fedavg", "dapperfl")


def domain_accuracy(doc: dict[str, Any]) -> dict[str, float]:
    """Each domain's test accuracy (%) of a results document: the mean of its last k evaluations.

    Examples
    --------
    >>> from hetbench.reproduce.runners.domains import domain_accuracy
    >>> domain_accuracy({"final": {"last_k": {"group_accuracy": {"usps": 80.0, "mnist": 90.5}}}})
    {'mnist': 90.5, 'usps': 80.0}
    """
    groups = doc["final"]["last_k"].get("group_accuracy") or {}
    if not groups:
        raise HetbenchError("the results have no per-domain accuracy (was group_by='domain' set?)")
    return {g: float(groups[g]) for g in sorted(groups)}


def compare(fedavg: dict[str, float], dapperfl: dict[str, float]) -> tuple[float, int]:
    """(DapperFL's mean over domains - FedAvg's, the number of domains where DapperFL is above FedAvg).

    Examples
    --------
    >>> from hetbench.reproduce.runners.domains import compare
    >>> compare({"a": 90.0, "b": 50.0}, {"a": 89.0, "b": 55.0})
    (2.0, 1)
    """
    if sorted(fedavg) != sorted(dapperfl):
        raise HetbenchError(f"the two runs scored other domains ({sorted(fedavg)} and {sorted(dapperfl)})")
    gaps = [dapperfl[g] - fedavg[g] for g in fedavg]
    return sum(gaps) / len(gaps), sum(1 for v in gaps if v > 0)



def check_split_settings(settings: dict[str, Any], where: str) -> None:
    """The digits-domains split and training settings every DapperFL claim shares: ``fraction`` in (0, 1],
    at least 4 ``clients`` (one per domain), one ``split_seed`` and the ``train`` options.

    Examples
    --------
    >>> from hetbench.reproduce.runners.domains import check_split_settings
    >>> check_split_settings({"clients": 3, "fraction": 0.3, "train": {}}, "x.yaml")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: 'clients' must be at least 4 (every domain needs one)
    """
    if not 0 < settings["fraction"] <= 1:
        raise HetbenchError(f"{where}: 'fraction' must be in (0, 1]")
    if settings["clients"] < 4:
        raise HetbenchError(f"{where}: 'clients' must be at least 4 (every domain needs one)")
    if "split_seed" in settings and len(settings["split_seed"]) != 1:
        raise HetbenchError(f"{where}: 'split_seed' must list one seed")
    train_config(dict(settings["train"]), f"{where}.train")


def build_domains_split(settings: dict[str, Any], ctx: Context) -> tuple[Any, dict[str, Any]]:
    """``hetbench build digits-domains`` of a DapperFL claim's settings (``clients``, ``fraction``, its one
    ``split_seed``) in ``ctx.work``: the folder and the build's report. The same settings give the same split,
    so two claims on it ask the run store for the same runs."""
    from hetbench.builders.digits_domains import build_digits_domains

    return build_digits_domains(ctx.work / "digits-domains", overwrite=True, quiet=True, clients=settings["clients"],
                                fraction=float(settings["fraction"]), seed=(settings.get("split_seed") or [0])[0])

class DomainsRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "mean_gap": "DapperFL's accuracy averaged over the domains minus FedAvg's (points), per seed",
        "domain_wins": "number of domains on which DapperFL's accuracy is above FedAvg's, per seed",
    }
    schema = {
        "clients": ("int", True), "fraction": ("number", True), "split_seed": ("ints", False),
        "seeds": ("ints", False), "train": ("mapping", True), "hyper": ("mapping", False),
        "published_fedavg": ("numbers", True), "published_dapperfl": ("numbers", True),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        check_split_settings(settings, where)
        for key in ("published_fedavg", "published_dapperfl"):
            if len(settings[key]) != 4:
                raise HetbenchError(f"{where}: '{key}' needs Table 1's four domain accuracies "
                                    "(MNIST, USPS, SVHN, SYN)")
        from hetbench.train.algorithms import make_algorithm

        try:
            make_algorithm("dapperfl", **dict(settings.get("hyper") or {}))
        except HetbenchError as exc:
            raise HetbenchError(f"{where}.hyper: {marked(exc)}") from None
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload
        from hetbench.sources.digits_domains import DOMAINS, NUM_CLASSES, TEST_FRACTION

        per_domain = 500  # build_digits_domains' default
        train_rows = per_domain * (1 - TEST_FRACTION) * settings["fraction"]  # one client's share of its domain
        return [federated_workload(", ".join(ALGOS), settings["train"], len(ALGOS) * len(seeds), train_rows,
                                   round(per_domain * TEST_FRACTION) * len(DOMAINS), 3, NUM_CLASSES,
                                   algorithms=ALGOS)]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sweep import sweep
        from hetbench.train.algorithms import options_for

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device,
                                     group_by="domain")
        split_seed = (settings.get("split_seed") or [0])[0]
        folder, report = build_domains_split(settings, ctx)
        hyper = dict(settings.get("hyper") or {})
        acc: dict[str, list[dict[str, float]]] = {a: [] for a in ALGOS}
        test_rows: dict[str, int] = {}
        for seed in ctx.seeds:
            for algo in ALGOS:
                run = sweep(folder, algo, seeds=[seed], config=config, hyper=options_for(algo, hyper), out=ctx.runs,
                            quiet=True, threads=ctx.threads, store=ctx.store)[0]
                acc[algo].append(domain_accuracy(run.doc))
                test_rows = {g: int(v["num_test"]) for g, v in sorted(run.doc["groups"].items())}
                ctx.note(f"{algo} seed {seed}: " + ", ".join(f"{g} {v:.1f}%" for g, v in acc[algo][-1].items()))
        gaps, wins = [], []
        for fed, dap in zip(acc["fedavg"], acc["dapperfl"]):
            gap, won = compare(fed, dap)
            gaps.append(gap)
            wins.append(float(won))
        domains = list(acc["fedavg"][0])
        pub_f = [float(v) for v in settings["published_fedavg"]]
        pub_d = [float(v) for v in settings["published_dapperfl"]]
        pub_gap = sum(pub_d) / 4 - sum(pub_f) / 4
        pub_wins = float(sum(1 for f, d in zip(pub_f, pub_d) if d > f))

        def per_domain(algo: str) -> dict[str, list[float]]:
            return {g: [round(a[g], 4) for a in acc[algo]] for g in domains}

        dap_cfg = {k: getattr(config, k) for k in TRAIN_KEYS}
        return RunOutput(
            measurements={
                "mean_gap": Measurement([gaps], unit="accuracy points (DapperFL - FedAvg)",
                                        labels=[f"mean over {len(domains)} domains (Table 1: {pub_gap:+.2f})"]),
                "domain_wins": Measurement([wins], unit="domains (of 4)",
                                           labels=[f"domains won (Table 1: {pub_wins:g})"]),
            },
            axes={"mean_gap": Axes("paired by seed, each seed a dot", "DapperFL - FedAvg, mean over domains (points)"),
                  "domain_wins": Axes("paired by seed, each seed a dot", "domains DapperFL wins (of 4)")},
            facts={
                "split": f"digits-domains, {settings['clients']} clients, fraction {settings['fraction']:g}, "
                         f"split seed {split_seed}",
                "training_rows": report.get("num_samples"),
                "domains": domains, "seeds": list(ctx.seeds),
                "test_examples": test_rows,
                "train": dap_cfg, "dapperfl_hyper": hyper or "the paper's defaults",
                "fedavg_domain_accuracy": per_domain("fedavg"),
                "dapperfl_domain_accuracy": per_domain("dapperfl"),
                "fedavg_mean_accuracy": [round(sum(a.values()) / len(a), 4) for a in acc["fedavg"]],
                "dapperfl_mean_accuracy": [round(sum(a.values()) / len(a), 4) for a in acc["dapperfl"]],
                "published_table1": {"domains": ["MNIST", "USPS", "SVHN", "SYN"], "fedavg": pub_f,
                                     "dapperfl": pub_d, "mean_gap": round(pub_gap, 4), "wins": pub_wins},
                "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} seed(s), FedAvg and DapperFL paired "
                               "by seed on one split (the spread is the training's)",
                "metric": f"each domain's test accuracy, mean of the last {config.last_k} evaluations "
                          "(final.last_k.group_accuracy)",
            },
        )
