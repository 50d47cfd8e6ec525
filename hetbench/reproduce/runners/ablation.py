"""DapperFL against itself without its modules (Jia et al., NeurIPS 2024, sec. 4.3 and Table 3).

Table 3 removes DapperFL's two modules one at a time and together:

- *without DAR* (Domain Adaptive Regularisation): the DAR weight gamma is 0 (Eq. 5: the local loss is the
  cross-entropy alone);
- *without MFP* (Model Fusion Pruning): "when the MFP module is not employed in DapperFL, it performs model
  pruning using l1 norm on the local models directly" (sec. 4.3), i.e. no fusion with the global model before
  the mask is taken: the fusion factor alpha_t of Eq. 1-2 is 0 in every round (``alpha0 = alpha_min = 0``), so
  the mask is the L1 mask of the fine-tuned local model itself;
- *without MFP+DAR*: both.

Every variant is the trainer's ``dapperfl`` with those hyper-parameters (:data:`VARIANTS`); everything else
(device levels, pruning ratios, masked aggregation) is DapperFL's. The split and the training options are
``dapperfl-domains``' (:mod:`~hetbench.reproduce.runners.domains`), so the complete DapperFL's runs are the
same runs and come from the run store. Seed by seed, the runner measures the complete DapperFL's accuracy
averaged over the four domains minus each variant's (Table 3 on Digits: 74.30 against 71.94, 72.37 and
73.34%).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput
from hetbench.reproduce.runners.domains import build_domains_split, check_split_settings, domain_accuracy
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config

#: Table 3's variants: the hyper-parameters that remove each module (sec. 4.3)
VARIANTS: dict[str, dict[str, float]] = {
    "without_mfp_dar": {"alpha0": 0.0, "alpha_min": 0.0, "dar_gamma": 0.0},
    "without_dar": {"dar_gamma": 0.0},
    "without_mfp": {"alpha0": 0.0, "alpha_min": 0.0},
}

#: Table 3's Digits column (%): the complete DapperFL and each variant
TABLE3_DIGITS = {"dapperfl": 74.30, "without_mfp_dar": 71.94, "without_dar": 72.37, "without_mfp": 73.34}

#: how a variant is named in labels and tables
LABELS = {"without_mfp_dar": "w/o MFP+DAR", "without_dar": "w/o DAR", "without_mfp": "w/o MFP"}


def mean_over_domains(doc: dict[str, Any]) -> float:
    """A results document's test accuracy averaged over its domains, each weighted equally (%).

    Examples
    --------
    >>> from hetbench.reproduce.runners.ablation import mean_over_domains
    >>> mean_over_domains({"final": {"last_k": {"group_accuracy": {"mnist": 90.0, "usps": 80.0}}}})
    85.0
    """
    acc = domain_accuracy(doc)
    return sum(acc.values()) / len(acc)


class AblationRunner(Runner):
    trains = True
    seeded = True
    borrows_runs_from = ("dapperfl-domains",)  # the complete DapperFL's runs are dapperfl-domains' own
    measures = {
        "module_gain": "the complete DapperFL's accuracy averaged over the domains minus each variant's "
                       "(points), per seed; one point per variant of Table 3",
    }
    schema = {"clients": ("int", True), "fraction": ("number", True), "split_seed": ("ints", False),
              "seeds": ("ints", False), "train": ("mapping", True), "variants": ("strs", True)}

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        unknown = [v for v in settings["variants"] if v not in VARIANTS]
        if unknown:
            raise HetbenchError(f"{where}: 'variants': unknown variant '{unknown[0]}'; choose from "
                                f"{', '.join(VARIANTS)}")
        check_split_settings(settings, where)
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.reproduce.cost import federated_workload
        from hetbench.sources.digits_domains import DOMAINS, NUM_CLASSES, TEST_FRACTION

        per_domain = 500
        train_rows = per_domain * (1 - TEST_FRACTION) * settings["fraction"]
        runs = (1 + len(settings["variants"])) * len(seeds)
        return [federated_workload("dapperfl and its variants", settings["train"], runs, train_rows,
                                   round(per_domain * TEST_FRACTION) * len(DOMAINS), 3, NUM_CLASSES,
                                   algorithms=("dapperfl",))]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sweep import sweep

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device,
                                     group_by="domain")
        split_seed = (settings.get("split_seed") or [0])[0]
        folder, _ = build_domains_split(settings, ctx)
        variants = list(settings["variants"])
        accuracy: dict[str, list[float]] = {v: [] for v in ["dapperfl", *variants]}
        for seed in ctx.seeds:
            for name in accuracy:
                hyper = {} if name == "dapperfl" else VARIANTS[name]  # the complete one: dapperfl-domains' runs
                run = sweep(folder, "dapperfl", seeds=[seed], config=config, hyper=hyper, out=ctx.runs, quiet=True,
                            threads=ctx.threads, store=ctx.store)[0]
                accuracy[name].append(mean_over_domains(run.doc))
                ctx.note(f"{name} seed {seed}: {accuracy[name][-1]:.2f}% over the domains")
        gains = [[d - v for d, v in zip(accuracy["dapperfl"], accuracy[name])] for name in variants]
        labels = [f"DapperFL - {LABELS[v]} (Table 3: {TABLE3_DIGITS['dapperfl'] - TABLE3_DIGITS[v]:+.2f})"
                  for v in variants]
        return RunOutput(
            measurements={"module_gain": Measurement(gains, unit="accuracy points (DapperFL - variant)",
                                                     labels=labels)},
            axes={"module_gain": Axes("variant of Table 3", "DapperFL - variant, mean over domains (points)")},
            facts={"split": f"digits-domains, {settings['clients']} clients, fraction {settings['fraction']:g}, "
                            f"split seed {split_seed}",
                   "variants": {v: VARIANTS[v] for v in variants}, "seeds": list(ctx.seeds),
                   "mean_accuracy": {k: [round(a, 4) for a in v] for k, v in accuracy.items()},
                   "published_table3_digits": {k: v for k, v in TABLE3_DIGITS.items() if k == "dapperfl" or k in variants},
                   "train": {k: getattr(config, k) for k in TRAIN_KEYS},
                   "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} seed(s), paired by seed on "
                                  "one split",
                   "metric": f"test accuracy averaged over the four domains, each the mean of its last {config.last_k} "
                             "evaluations (final.last_k.group_accuracy)"},
        )
