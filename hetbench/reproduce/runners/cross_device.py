"""A model trained on one phone, tested on every phone (Kim et al., "HeteroSwitch", MLSys 2024, sec. 3.2 and
Table 2).

The split is ``hetbench build devices`` (as for :mod:`~hetbench.reproduce.runners.device_fairness`): every
crop of the embedded photographs is captured by every emulated phone of a profile set (``heteroswitch9``:
the nine phones of Table 1, each a sensor profile and its own ISP), with the clients spread evenly over
the phones (equal device weights, so every row of the table trains on as many clients and images), and
the test captures, held out by capture, are rendered by every phone. The trainer's cross-group protocol
(``hetbench train --protocol cross-group --group-by device``: :func:`hetbench.train.groups.plan_group_runs`)
trains one global model per phone d on d's clients alone and scores it on every phone's test images, which
gives Table 2's matrix a(d, e): the accuracy (%) on phone e of the model trained on phone d (the trainer's
mean of the last k evaluations, ``final.last_k.group_accuracy``).

Per seed the runner measures Table 2's two statements:

    degradation_others = (1 / D) sum_d [ a(d, d) - (1 / (D - 1)) sum_{e != d} a(d, e) ]
        (the mean over training phones of the "Mean Others" column, in accuracy points);
    own_phone_ahead    = #{ (d, e) : e != d, a(d, d) > a(d, e) } / (D (D - 1))
        ("the highest accuracy is always achieved when the model is tested on the same device type it was
        trained on": the share of the D (D - 1) ordered pairs of Table 2's off-diagonal cells in which the
        training phone scores higher; Table 2: all 72, its smallest drop 1.0%, Pixel2's model on the Pixel5).

A row-wise count (rows whose own phone is the best) was declared first; a pilot showed why it cannot
decide this: one near-identical pair (here, as in Table 2, Pixel2's model on the Pixel5) turns a whole row,
and with about 100 test images per phone a 1-point difference is within the sampling error. The facts keep
the row count (``own_best_rows``).

Table 2 prints the degradations as percentages without saying whether they are points or relative to the
training phone's accuracy; the facts give both (``relative_degradation``: the same mean over rows of the
degradation divided by a(d, d)).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, RunOutput
from hetbench.reproduce.runners.device_fairness import (SCENES, DeviceFairnessRunner, build_device_split,
                                                        scored_devices)
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config

#: the one algorithm of Table 2 (the paper's baseline, FedAvg)
ALGORITHM = "fedavg"


def table2_rows(matrix: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per training phone d (a row of Table 2): its own accuracy a(d, d), the mean of the others
    (1 / (D - 1)) sum_{e != d} a(d, e), their difference ``degradation`` (points), that difference relative
    to a(d, d) (%), and whether its own phone is its best test phone.

    Parameters
    ----------
    matrix : dict
        ``matrix[d][e]``: the accuracy (%) on phone e of the model trained on phone d; every row names every
        phone.

    Examples
    --------
    >>> from hetbench.reproduce.runners.cross_device import table2_rows
    >>> rows = table2_rows({"a": {"a": 80.0, "b": 60.0, "c": 70.0}, "b": {"a": 75.0, "b": 70.0, "c": 65.0},
    ...                     "c": {"a": 50.0, "b": 50.0, "c": 90.0}})
    >>> rows["a"]["degradation"], rows["a"]["relative_degradation"], rows["b"]["own_best"], rows["c"]["mean_others"]
    (15.0, 18.75, False, 50.0)
    """
    phones = sorted(matrix)
    if len(phones) < 2 or any(sorted(matrix[d]) != phones for d in phones):
        raise HetbenchError(f"a cross-device matrix needs every training phone scored on every phone (got "
                            f"{ {d: sorted(row) for d, row in matrix.items()} })")
    rows = {}
    for d in phones:
        own = float(matrix[d][d])
        others = float(np.mean([matrix[d][e] for e in phones if e != d]))
        rows[d] = {"own": own, "mean_others": others, "degradation": own - others,
                   "relative_degradation": 100.0 * (own - others) / own if own > 0 else float("nan"),
                   "own_best": bool(own >= max(matrix[d].values()))}
    return rows


def pair_share(matrix: dict[str, dict[str, float]]) -> float:
    """The share of the ordered pairs of different phones (d, e) with ``matrix[d][d] > matrix[d][e]``.

    Examples
    --------
    >>> from hetbench.reproduce.runners.cross_device import pair_share
    >>> pair_share({"a": {"a": 80.0, "b": 60.0}, "b": {"a": 75.0, "b": 70.0}})  # b's model does better on a
    0.5
    """
    phones = sorted(matrix)
    pairs = [(d, e) for d in phones for e in phones if e != d]
    return sum(matrix[d][d] > matrix[d][e] for d, e in pairs) / len(pairs)


def build_even_device_split(settings: dict[str, Any], ctx: Context) -> tuple[Any, list[str], dict[str, int],
                                                                             dict[str, int]]:
    """``hetbench build devices`` of a device claim's settings with every phone the same participation
    weight, so the clients are spread evenly over the phones (checked): the folder, the devices in the
    split's order, the clients per device and the test rows per device."""
    from hetbench.isp.profiles import load_profiles

    name = f"devices-{settings['profiles']}-even-n{settings['clients']}-s{settings.get('split_seed', 0)}"
    weights = ctx.work / f"{name}-weights.json"
    weights.write_text(json.dumps({d.name: 1 for d in load_profiles(settings["profiles"])}))
    folder, report, test_rows = build_device_split(settings, ctx, name, str(weights))
    devices = list(report["devices"])
    per_device = {d: report["devices"][d]["clients"] for d in devices}
    if len(set(per_device.values())) != 1:
        raise HetbenchError(f"the split's clients are not spread evenly over the phones: {per_device}")
    return folder, devices, per_device, test_rows


class CrossDeviceRunner(DeviceFairnessRunner):
    measures = {
        "degradation_others": "the mean over training phones of own-phone accuracy minus the mean accuracy on "
                              "the other phones (points; Table 2's Mean Others), per seed",
        "own_phone_ahead": "the share of the ordered pairs of different phones (d, e) in which the model trained "
                           "on d scores higher on d than on e, per seed",
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        from hetbench.isp.profiles import load_profiles

        super().check_settings(settings, where)
        devices = len(load_profiles(settings["profiles"]))
        if settings["clients"] % devices:
            raise HetbenchError(f"{where}: 'clients' must be a multiple of the {devices} devices, so that every "
                                f"phone trains on as many clients (got {settings['clients']})")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.isp.profiles import load_profiles
        from hetbench.reproduce.cost import federated_workload

        devices = len(load_profiles(settings["profiles"]))
        captures = SCENES * settings["crops_per_photo"]
        test = round(captures * settings["test_fraction"])
        train = dict(settings["train"])  # a phone's clients only: at most clients / D a round
        train["clients_per_round"] = min(train.get("clients_per_round", 10), settings["clients"] // devices)
        return [federated_workload(f"{ALGORITHM}, one model per phone", train, devices * len(seeds),
                                   (captures - test) * devices / settings["clients"], test * devices, 3, SCENES,
                                   algorithms=(ALGORITHM,))]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sweep import sweep

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device,
                                     group_by="device")
        split_seed = settings.get("split_seed", 0)
        folder, devices, per_device, test_rows = build_even_device_split(settings, ctx)

        matrices: list[dict[str, dict[str, float]]] = []
        for seed in ctx.seeds:
            runs = sweep(folder, ALGORITHM, seeds=[seed], config=config, out=ctx.runs, quiet=True,
                         protocol="cross-group", threads=ctx.threads, store=ctx.store)
            matrix = {}
            for run in runs:
                trained = run.doc["config"]["train_groups"]
                if not trained or len(trained) != 1:
                    raise HetbenchError(f"{run.path.name}: trained on {trained}, not on one phone")
                matrix[trained[0]] = scored_devices(run, test_rows)
            matrices.append(matrix)
            rows = table2_rows(matrix)
            ctx.note(f"seed {seed}: mean others {np.mean([r['degradation'] for r in rows.values()]):.1f} points, "
                     f"own phone ahead in {pair_share(matrix):.0%} of the pairs")

        per_seed = [table2_rows(m) for m in matrices]
        degradation = [float(np.mean([r["degradation"] for r in rows.values()])) for rows in per_seed]
        ahead = [pair_share(m) for m in matrices]
        own_best_rows = [int(sum(r["own_best"] for r in rows.values())) for rows in per_seed]
        relative = [float(np.mean([r["relative_degradation"] for r in rows.values()])) for rows in per_seed]
        mean_matrix = {d: {e: round(float(np.mean([m[d][e] for m in matrices])), 2) for e in devices} for d in devices}
        table2 = {d: {"own": round(float(np.mean([rows[d]["own"] for rows in per_seed])), 2),
                      "mean_others_degradation": round(float(np.mean([rows[d]["degradation"] for rows in per_seed])), 2),
                      "own_best_seeds": int(sum(rows[d]["own_best"] for rows in per_seed))}
                  for d in devices}
        column = {e: round(float(np.mean([mean_matrix[d][d] - mean_matrix[d][e] for d in devices if d != e])), 2)
                  for e in devices}
        return RunOutput(
            measurements={
                "degradation_others": Measurement([degradation], unit="accuracy points (own phone - other phones)",
                                                  labels=["mean over training phones"]),
                "own_phone_ahead": Measurement([ahead], unit="share of ordered phone pairs",
                                               labels=["own phone scores higher than the other"]),
            },
            axes={"degradation_others": Axes("", "own phone - mean of the others (points)"),
                  "own_phone_ahead": Axes("", "share of pairs, own phone ahead")},
            facts={"profiles": settings["profiles"], "devices": devices, "clients": settings["clients"],
                   "clients_per_device": per_device, "seeds": list(ctx.seeds), "split_seed": split_seed,
                   "test_examples": test_rows, "algorithm": ALGORITHM,
                   "accuracy_matrix": mean_matrix,
                   "accuracy_matrix_note": "accuracy_matrix[d][e]: mean over seeds of the accuracy (%) on phone e of "
                                           "the model trained on phone d's clients alone",
                   "table2_rows": table2, "mean_others_by_test_phone": column,
                   "relative_degradation": [round(v, 4) for v in relative], "own_best_rows": own_best_rows,
                   "own_best_rows_note": "per seed, the rows (of D) whose own phone is their best test phone",
                   "relative_degradation_note": "per seed, the mean over rows of (own - mean others) / own, in %",
                   "chance_accuracy": round(100.0 / SCENES, 2),
                   "train": {k: getattr(config, k) for k in TRAIN_KEYS},
                   "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} training seed(s) (one split)",
                   "metric": f"per-phone test accuracy, mean of the last {config.last_k} evaluations "
                             "(final.last_k.group_accuracy, --group-by device, --protocol cross-group)"},
        )
