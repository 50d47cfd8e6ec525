"""Device fairness of HeteroSwitch against FedAvg (Kim et al., "HeteroSwitch", MLSys 2024, sec. 6 and
Table 4).

The split is ``hetbench build devices`` (:func:`hetbench.builders.devices.build_devices`, the command's
own path): every crop of the embedded photographs is captured by every emulated phone of a profile set
(``heteroswitch9``: the nine phones of Table 1, each a sensor profile and its own ISP), and the clients
are allocated to the phones by market share (Table 1), so that some devices dominate training as in the
paper's fairness setting. The test captures are held out by capture and, like every capture, rendered by
every phone: each device's test set is the same scenes seen through that device, and its size is the
number of held-out captures (``round(test_fraction x 7 x crops_per_photo)``).

FedAvg and HeteroSwitch (:class:`hetbench.train.algorithms.heteroswitch.HeteroSwitch`) are trained with
the same options and every seed by :func:`hetbench.sweep.sweep` with ``group_by="device"``. A device's
accuracy a_d is the trainer's stable metric, the mean of its last k evaluations
(``final.last_k.group_accuracy``). Per algorithm and seed (Table 4's two columns, sec. 6):

    variance = (1 / D) sum_d (a_d - mean_d a_d)^2     (percent squared, population variance over the D devices)
    worst    = min_d a_d                              (accuracy %, the worst device)
    average  = (1 / D) sum_d a_d                      (accuracy %, every device weighted equally)

and the runner measures the paired differences HeteroSwitch - FedAvg seed by seed
(``variance_change``, ``worst_device_change``, ``average_change``: Table 4's fairness columns, 8.63 -> 1.77
and 64.01 -> 67.38).

Table 4's worst-case column is the paper's domain-generalisation protocol (each device unseen in
training); here every device trains, and the worst device is the one the global model serves worst (the
fairness setting of sec. 4.1).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from hetbench.cores import available_cores
from hetbench.errors import HetbenchError, marked
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput, check_render_settings, require_test_rows
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config

#: the baseline and the method of Table 4, in the order they are trained
ALGORITHMS = ("fedavg", "heteroswitch")

#: scenes of the embedded photographs (``builtin:photos``): one class each
SCENES = 7


def fairness(accuracy: dict[str, float]) -> tuple[float, float]:
    """Table 4's two numbers for one run: the population variance of the per-device accuracies (percent
    squared) and the worst device's accuracy (%).

    Parameters
    ----------
    accuracy : dict
        Test accuracy (%) per device.

    Examples
    --------
    >>> from hetbench.reproduce.runners.device_fairness import fairness
    >>> fairness({"GalaxyS9": 70.0, "Pixel5": 66.0, "G4": 62.0})  # mean 66: (16 + 0 + 16) / 3
    (10.666666666666666, 62.0)
    """
    if not accuracy:
        raise HetbenchError("no per-device accuracy to measure fairness on")
    values = np.array(list(accuracy.values()), dtype=float)
    return float(values.var()), float(values.min())


def expected_test_images(crops_per_photo: int, test_fraction: float) -> int:
    """How many test images every device gets: the held-out captures of the 7 scenes (each rendered by
    every device). The builder holds out ``round(test_fraction x n)`` of the ``n = 7 x crops_per_photo``
    captures, at least 1 and at most n - 1 (:func:`hetbench.splits.stratified_holdout`).

    Examples
    --------
    >>> from hetbench.reproduce.runners.device_fairness import expected_test_images
    >>> expected_test_images(75, 0.2), expected_test_images(38, 0.4), expected_test_images(2, 0.2)
    (105, 106, 3)
    """
    n = SCENES * crops_per_photo
    return int(min(max(np.rint(test_fraction * n), 1), n - 1))


def build_device_split(settings: dict[str, Any], ctx: Context, name: str,
                       device_weights: str | None = None) -> tuple[Any, dict[str, Any], dict[str, int]]:
    """``hetbench build devices`` of a device claim's settings in ``ctx.work / name``, its test rows per
    device checked against ``min_test_examples`` (:func:`require_test_rows`): the folder, the build's
    report and the test rows per device. ``device_weights``: a weights file (None: market shares)."""
    from hetbench.builders.devices import build_devices

    folder = ctx.work / name
    ctx.note(f"building {name}: {settings['crops_per_photo']} crops of {SCENES} photographs x every device")
    _, report = build_devices(folder, name=name, profiles=settings["profiles"], size=settings["size"],
                              clients=settings["clients"], device_weights=device_weights,
                              test_fraction=settings["test_fraction"], seed=settings.get("split_seed", 0),
                              num_proc=max(1, min(8, available_cores())),
                              crops_per_photo=settings["crops_per_photo"], crop_size=settings["crop_size"],
                              quiet=True)
    test_rows = require_test_rows(folder, list(report["devices"]), settings["min_test_examples"],
                                  named="its devices")
    return folder, report, test_rows


def scored_devices(run: Any, test_rows: dict[str, int]) -> dict[str, float]:
    """A device run's accuracy (%) per device, the trainer's mean of the last k evaluations
    (``final.last_k.group_accuracy``), once the trainer's own record shows it scored every device of the split
    on all of that device's test images.

    Parameters
    ----------
    run : RunResult
        One run of :func:`hetbench.sweep.sweep` with ``group_by="device"``.
    test_rows : dict
        The split's test images per device (:func:`build_device_split`).

    Raises
    ------
    HetbenchError
        When the record's devices or test counts are not the split's.

    Examples
    --------
    >>> from pathlib import Path
    >>> from types import SimpleNamespace
    >>> from hetbench.reproduce.runners.device_fairness import scored_devices
    >>> run = SimpleNamespace(path=Path("fedavg-s0.json"), doc={
    ...     "final": {"last_k": {"group_accuracy": {"G4": 61.5}}}, "groups": {"G4": {"num_test": 106}}})
    >>> scored_devices(run, {"G4": 106})
    {'G4': 61.5}
    >>> scored_devices(run, {"G4": 105})
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: fedavg-s0.json: the trainer scored {'G4': 106} test images per device, the split holds {'G4': 105}
    """
    doc = run.doc
    acc = {g: float(a) for g, a in doc["final"]["last_k"]["group_accuracy"].items()}
    if sorted(acc) != sorted(test_rows):  # the trainer's record, not the runner's wish
        raise HetbenchError(f"{run.path.name}: per-device accuracy for {sorted(acc)}, not for the split's devices "
                            f"{sorted(test_rows)}")
    counted = {g: int(v["num_test"]) for g, v in doc["groups"].items()}
    if counted != test_rows:
        raise HetbenchError(f"{run.path.name}: the trainer scored {counted} test images per device, the split "
                            f"holds {test_rows}")
    return acc


def _mean_se(values: list[float]) -> list[float]:
    """[mean, standard error] over seeds, rounded for the facts."""
    se = float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
    return [round(float(np.mean(values)), 4), round(se, 4)]


class DeviceFairnessRunner(Runner):
    trains = True
    seeded = True
    measures = {
        "variance_change": "HeteroSwitch minus FedAvg: population variance of the per-device test accuracies "
                           "(percent squared), per seed",
        "worst_device_change": "HeteroSwitch minus FedAvg: the worst device's test accuracy (points), per seed",
        "average_change": "HeteroSwitch minus FedAvg: the mean of the per-device test accuracies (points), per seed",
    }
    schema = {
        "split_seed": ("seed", False),
        "profiles": ("str", True), "clients": ("int", True), "crops_per_photo": ("int", True),
        "crop_size": ("int", True), "size": ("int", True), "test_fraction": ("fraction", True),
        "min_test_examples": ("int", True), "seeds": ("ints", False), "train": ("mapping", True),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        from hetbench.isp.profiles import load_profiles

        super().check_settings(settings, where)
        check_render_settings(settings, where)
        try:
            devices = load_profiles(settings["profiles"])
        except HetbenchError as exc:
            raise HetbenchError(f"{where}: 'profiles': {marked(exc)}") from None
        if len(devices) < 2:
            raise HetbenchError(f"{where}: 'profiles' must name at least two devices (got {len(devices)})")
        if settings["clients"] < len(devices):
            raise HetbenchError(f"{where}: 'clients' must be at least the number of devices, {len(devices)}, "
                                f"so that every device has a client (got {settings['clients']})")
        per_device = expected_test_images(settings["crops_per_photo"], settings["test_fraction"])
        if per_device < settings["min_test_examples"]:
            need = int(np.ceil((settings["min_test_examples"] - 0.5) / (settings["test_fraction"] * SCENES)))
            raise HetbenchError(
                f"{where}: every device would have {per_device} test images (test_fraction "
                f"{settings['test_fraction']:g} of {SCENES} scenes x {settings['crops_per_photo']} crops), fewer "
                f"than min_test_examples {settings['min_test_examples']}; raise crops_per_photo to {need}")
        config = train_config(dict(settings["train"]), f"{where}.train")
        if config.clients_per_round > settings["clients"]:
            raise HetbenchError(f"{where}.train: 'clients_per_round' {config.clients_per_round} exceeds "
                                f"clients {settings['clients']}")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.isp.profiles import load_profiles
        from hetbench.reproduce.cost import federated_workload

        devices = len(load_profiles(settings["profiles"]))
        captures = SCENES * settings["crops_per_photo"]
        test = round(captures * settings["test_fraction"])
        # every phone renders every capture; a phone's training renders are shared by its clients
        return [federated_workload(", ".join(ALGORITHMS), settings["train"], len(ALGORITHMS) * len(seeds),
                                   (captures - test) * devices / settings["clients"], test * devices, 3, SCENES,
                                   algorithms=ALGORITHMS)]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sweep import sweep

        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device,
                                     group_by="device")
        split_seed = settings.get("split_seed", 0)
        folder, report, test_rows = build_device_split(
            settings, ctx, f"devices-{settings['profiles']}-n{settings['clients']}-s{split_seed}")
        devices = list(report["devices"])

        # per algorithm: one dict of per-device accuracies per seed
        accuracy: dict[str, list[dict[str, float]]] = {a: [] for a in ALGORITHMS}
        overall: dict[str, list[float]] = {a: [] for a in ALGORITHMS}
        switches: dict[str, list[float]] = {"switch1_fraction": [], "switch2_fraction": []}
        for seed in ctx.seeds:
            for algo in ALGORITHMS:
                run = sweep(folder, algo, seeds=[seed], config=config, out=ctx.runs, quiet=True,
                            threads=ctx.threads, store=ctx.store)[0]
                doc = run.doc
                acc = scored_devices(run, test_rows)
                accuracy[algo].append(acc)
                overall[algo].append(float(doc["final"]["last_k"]["accuracy"]))
                if algo == "heteroswitch":
                    for key in switches:
                        switches[key].append(float(np.mean(doc["curves"]["algorithm"][key])))
                var, worst = fairness(acc)
                ctx.note(f"{algo} seed {seed}: accuracy {overall[algo][-1]:.1f}%, variance {var:.2f}, "
                           f"worst {worst:.1f}% ({run.path.name})")

        per = {a: [fairness(acc) for acc in accuracy[a]] for a in ALGORITHMS}
        var_change = [h[0] - f[0] for f, h in zip(per["fedavg"], per["heteroswitch"])]
        worst_change = [h[1] - f[1] for f, h in zip(per["fedavg"], per["heteroswitch"])]
        average = {a: [float(np.mean(list(acc.values()))) for acc in accuracy[a]] for a in ALGORITHMS}
        average_change = [h - f for f, h in zip(average["fedavg"], average["heteroswitch"])]
        table = {a: {"variance": _mean_se([p[0] for p in per[a]]), "worst_device": _mean_se([p[1] for p in per[a]]),
                     "worst_devices": [min(acc, key=acc.get) for acc in accuracy[a]],
                     "accuracy": _mean_se(overall[a]), "device_average": _mean_se(average[a]),
                     "device_accuracy": {d: round(float(np.mean([acc[d] for acc in accuracy[a]])), 4)
                                         for d in devices}}
                 for a in ALGORITHMS}
        n = len(ctx.seeds)
        k = config.last_k
        return RunOutput(
            measurements={
                "variance_change": Measurement([var_change], unit="variance change (%²)",
                                               labels=["HeteroSwitch - FedAvg"]),
                "worst_device_change": Measurement([worst_change], unit="worst-device accuracy change (points)",
                                                   labels=["HeteroSwitch - FedAvg"]),
                "average_change": Measurement([average_change], unit="device-average accuracy change (points)",
                                              labels=["HeteroSwitch - FedAvg"]),
            },
            axes={"variance_change": Axes("", "variance across devices: HeteroSwitch - FedAvg (%²)"),
                  "worst_device_change": Axes("", "worst-device accuracy: HeteroSwitch - FedAvg (points)"),
                  "average_change": Axes("", "device-average accuracy: HeteroSwitch - FedAvg (points)")},
            facts={"profiles": settings["profiles"], "devices": devices, "clients": settings["clients"],
                   "clients_per_device": {d: report["devices"][d]["clients"] for d in devices},
                   "captures": report.get("captures"), "seeds": list(ctx.seeds), "split_seed": split_seed,
                   "test_examples": test_rows,
                   "test_examples_note": "every device's accuracy rests on its own test images (the same held-out "
                                         "captures rendered by that device); the variance and the worst device rest "
                                         f"on {sum(test_rows.values())} test images of {len(devices)} devices",
                   "table4": table, "chance_accuracy": round(100.0 / SCENES, 2),
                   "heteroswitch_switches": {key: _mean_se(v) for key, v in switches.items()},
                   "train": {k_: getattr(config, k_) for k_ in TRAIN_KEYS},
                   "uncertainty": f"mean and its 95% t interval over {n} training seed(s), paired by seed (one split)",
                   "metric": f"per-device test accuracy, mean of the last {k} evaluations "
                             "(final.last_k.group_accuracy, --group-by device); variance over devices in %² "
                             "(population), worst = the lowest device"},
        )

