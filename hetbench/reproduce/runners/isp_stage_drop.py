"""Accuracy drop per ISP stage (Kim et al., "HeteroSwitch", MLSys 2024, sec. 3.4, Table 3 and Fig. 3).

The split is ``hetbench build iso-isp`` (:func:`hetbench.builders.iso_isp.build_iso_isp`, the command's own
path): the embedded photographs' crops rendered by a baseline pipeline (device ``baseline``) and by each
Table 3 option of each listed stage with every other stage at baseline (devices ``wb=none``,
``tone=srgb-gamma+equalize``, ...), ``clients_per_device`` clients per device. The checks' baseline is
the paper's own Table 3 Baseline column (``--reference paper``: gray-world WB, no chroma smoothing or
sharpening); hetbench's phone-like baseline (grey-edge WB, mild chroma smoothing and sharpening) is built
as a second reference and reported beside it (``other_references`` in the facts). FedAvg is
trained with every seed by :func:`hetbench.sweep.sweep` on the baseline device's clients only
(``train_groups=("baseline",)``, ``hetbench train --train-groups baseline``) and tested on every device.
Each accuracy is the trainer's stable metric, the mean of the last k evaluations
(``final.last_k.group_accuracy``).

For a variant v and a seed, the drop is

    drop_v = acc(baseline) - acc(v)                      (accuracy points; Fig. 3 plots this degradation)

and a stage's drop is the larger of its options' drops (the stage's most damaging Table 3 option: the
paper's headline numbers, 56.0 and 49.2%, are the omitted WB and tone stages). Per seed, the runner
measures

- ``wb_tone_minus_others``: mean drop over the WB and tone variants minus the mean drop over the
  demosaic, denoise and compression variants;
- ``weakest_wb_tone_minus_strongest_other``: min(drop_wb, drop_tone) - max(drop_demosaic, drop_denoise,
  drop_compress) over stages (every WB / tone stage above every other stage).

Gamut variants (``stages: all``, Fig. 3's sixth stage) are tested and reported but in neither group.

The checks' reference is built twice: with ``--test-crops random`` (test crops held out from one pool of
random crops, so they may overlap training crops: the test sees the scenes the model learned) and with
``--test-crops unseen-region`` (each photograph's test crops from a band at one end that no training crop
touches). The second pair of measures (``*_unseen``) is the same two contrasts on parts of the scenes the
model never saw: the paper tests on ImageNet images none of its clients trained on, and 7 photographs
cannot give unseen photographs of the same scene (the label), so an unseen region of each is the nearest
offline test of that.
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

#: the stages the claim says hurt most, and those it compares them with (hetbench.isp stage names)
HIGH = ("wb", "tone")
LOW = ("demosaic", "denoise", "compress")
BASELINE = "baseline"
_XLABEL = "drop = acc(baseline) - acc(variant)"


def variant_stage(name: str) -> str:
    """The ISP stage a Table 3 variant device changes (``wb=none`` -> ``wb``).

    Examples
    --------
    >>> from hetbench.reproduce.runners.isp_stage_drop import variant_stage
    >>> variant_stage("tone=srgb-gamma+equalize"), variant_stage("compress=jpeg50")
    ('tone', 'compress')
    """
    return name.split("=", 1)[0]


def stage_drops(accuracy: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """One seed's drops: per variant (baseline accuracy minus the variant's) and per stage (the largest
    drop among the stage's variants).

    Parameters
    ----------
    accuracy : dict
        Test accuracy (%) per device, ``baseline`` among them.

    Examples
    --------
    >>> from hetbench.reproduce.runners.isp_stage_drop import stage_drops
    >>> stage_drops({"baseline": 80.0, "wb=none": 30.0, "wb=white-patch": 70.0, "denoise=none": 79.0})
    ({'wb=none': 50.0, 'wb=white-patch': 10.0, 'denoise=none': 1.0}, {'wb': 50.0, 'denoise': 1.0})
    """
    base = accuracy[BASELINE]
    variant = {v: base - a for v, a in accuracy.items() if v != BASELINE}
    stage: dict[str, float] = {}
    for v, d in variant.items():
        s = variant_stage(v)
        stage[s] = max(stage.get(s, -np.inf), d)
    return variant, stage


def contrasts(accuracy: dict[str, float]) -> tuple[float, float]:
    """One seed's two measured numbers (HeteroSwitch Fig. 3, one stage changed at a time):

    - mean(drop_v, v in WB / tone variants) - mean(drop_v, v in demosaic / denoise / compress variants);
    - min(drop_wb, drop_tone) - max(drop_s, s in demosaic / denoise / compress), a stage's drop being its
      largest variant drop.

    Examples
    --------
    >>> from hetbench.reproduce.runners.isp_stage_drop import contrasts
    >>> acc = {"baseline": 80.0, "wb=none": 30.0, "wb=white-patch": 70.0, "tone=none": 40.0,
    ...        "tone=srgb-gamma+equalize": 76.0, "denoise=none": 79.0, "denoise=bayes-shrink": 74.0}
    >>> contrasts(acc)  # mean(50, 10, 40, 4) - mean(1, 6); min(50, 40) - max(6)
    (22.5, 34.0)
    """
    variant, stage = stage_drops(accuracy)
    high = [d for v, d in variant.items() if variant_stage(v) in HIGH]
    low = [d for v, d in variant.items() if variant_stage(v) in LOW]
    if not high or not low:
        raise HetbenchError("the accuracies need WB / tone variants and demosaic / denoise / compress variants")
    weakest_high = min(stage[s] for s in HIGH if s in stage)
    strongest_low = max(stage[s] for s in LOW if s in stage)
    return float(np.mean(high) - np.mean(low)), float(weakest_high - strongest_low)


def _stage_list(text: str, where: str) -> list[str]:
    from hetbench.isp.pipeline import parse_stage_list

    try:
        stages = parse_stage_list(text)
    except HetbenchError as exc:
        raise HetbenchError(f"{where}: 'stages': {marked(exc)}") from None
    if not set(HIGH) <= set(stages) or not set(LOW) & set(stages):
        raise HetbenchError(f"{where}: 'stages' must list wb, tone and at least one of {', '.join(LOW)} "
                            f"(got '{text}')")
    return stages


def _build_processes(crops_per_photo: int) -> int:
    """Worker processes for the render (the split is the same bytes whatever renders it): one for a few
    crops, where starting workers costs more than it saves, else one per core up to 8."""
    return 1 if crops_per_photo < 15 else max(1, min(8, available_cores()))


def _mean_se(values: list[float]) -> str:
    """``mean ± standard error`` over seeds, as the facts show it.

    Examples
    --------
    >>> from hetbench.reproduce.runners.isp_stage_drop import _mean_se
    >>> _mean_se([30.0, 34.0]), _mean_se([1.0])
    ('32.00 ± 2.00', '1.00 ± 0.00')
    """
    se = float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
    return f"{float(np.mean(values)):.2f} ± {se:.2f}"


class IspStageDropRunner(Runner):
    """HeteroSwitch Fig. 3: train FedAvg on the baseline ISP's clients, measure each Table 3 variant's drop.

    Parameters (a claim's settings)
    -------------------------------
    stages : str
        ``hetbench build iso-isp --stages``: a comma list with wb, tone and at least one of demosaic,
        denoise, compress (``compression``), or ``all``.
    crops_per_photo, crop_size, size : int
        The embedded photographs' crops per photograph, their side, and the rendered images' side.
    clients_per_device : int
        Clients per device (at least 2: training on the baseline device is federated).
    test_fraction : float
        Share of the crops held out; every device renders the same test crops.
    min_test_examples : int
        Fewest test images a device may have; the built split is checked before any training.
    split_seed : int, optional
        The build's seed (default 0); every training seed uses that one split.
    seeds : list of int, optional
        Quick mode's training seeds.
    references : list of str, optional
        The baseline pipelines, each a split of its own (:data:`hetbench.isp.pipeline.REFERENCES`; default
        ``[paper, phone]``): the first is the checks' reference, the others are reported beside it.
    train : mapping
        :class:`~hetbench.train.algorithms.TrainConfig` options (``clients_per_round`` required, at most
        ``clients_per_device``); ``train_groups`` is always ``("baseline",)``.

    Examples
    --------
    >>> from hetbench.reproduce.runners import RUNNERS
    >>> s = {"stages": "wb,tone,denoise", "crops_per_photo": 3, "crop_size": 96, "size": 16,
    ...      "clients_per_device": 2, "test_fraction": 0.2, "min_test_examples": 1,
    ...      "train": {"rounds": 2, "clients_per_round": 3}}
    >>> RUNNERS["isp_stage_drop"].check_settings(s, "x.yaml: settings.quick")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: settings.quick.train: 'clients_per_round' 3 exceeds clients_per_device 2 (only the baseline device's clients train)
    """

    trains = True
    seeded = True
    measures = {
        "wb_tone_minus_others": "mean accuracy drop (points) over the WB and tone variants minus that over the "
                                "demosaic, denoise and compression variants, per seed",
        "weakest_wb_tone_minus_strongest_other": "the smaller of the WB and tone stage drops minus the largest "
                                                 "demosaic / denoise / compression stage drop (a stage's drop: its "
                                                 "largest variant drop), per seed",
        "wb_tone_minus_others_unseen": "wb_tone_minus_others on the split whose test crops come from a region of "
                                       "each photograph no training crop touches (--test-crops unseen-region)",
        "weakest_wb_tone_minus_strongest_other_unseen": "weakest_wb_tone_minus_strongest_other on that split",
    }
    schema = {
        "split_seed": ("seed", False),
        "stages": ("str", True), "crops_per_photo": ("int", True), "crop_size": ("int", True), "size": ("int", True),
        "clients_per_device": ("int", True), "test_fraction": ("fraction", True),
        "min_test_examples": ("int", True), "seeds": ("ints", False), "train": ("mapping", True),
        "references": ("strs", False),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        _stage_list(settings["stages"], where)
        from hetbench.isp.pipeline import REFERENCES

        unknown = [r for r in settings.get("references", []) if r not in REFERENCES]
        if unknown:
            raise HetbenchError(f"{where}: 'references': unknown reference pipeline '{unknown[0]}' (choose from "
                                f"{', '.join(REFERENCES)}; the first is the checks' baseline)")
        check_render_settings(settings, where)
        if settings["clients_per_device"] < 2:
            raise HetbenchError(f"{where}: 'clients_per_device' must be at least 2, so that training on the "
                                f"baseline device is federated (got {settings['clients_per_device']})")
        train = dict(settings["train"])
        if "clients_per_round" not in train:
            raise HetbenchError(f"{where}.train: 'clients_per_round' must be given (at most clients_per_device)")
        config = train_config(train, f"{where}.train")
        if config.clients_per_round > settings["clients_per_device"]:
            raise HetbenchError(f"{where}.train: 'clients_per_round' {config.clients_per_round} exceeds "
                                f"clients_per_device {settings['clients_per_device']} (only the baseline "
                                "device's clients train)")
        return settings

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.isp.pipeline import table3_variants
        from hetbench.reproduce.cost import federated_workload
        from hetbench.reproduce.runners.device_fairness import SCENES

        devices = len(table3_variants(_stage_list(settings["stages"], "stages")))
        captures = SCENES * settings["crops_per_photo"]
        test = round(captures * settings["test_fraction"])
        # a split per reference, and the checks' reference once more with unseen-region test crops
        splits = len(settings.get("references", ["paper", "phone"])) + 1
        # every capture is rendered by every device; only the baseline's clients train
        train = {**settings["train"], "image_size": settings["size"]}
        return [federated_workload(f"fedavg on the baseline, {splits} split(s)", train, len(seeds) * splits,
                                   (captures - test) / settings["clients_per_device"], test * devices, 3, SCENES)]

    def _reference(self, settings: dict[str, Any], ctx: Context, reference: str, config, out,
                   test_crops: str = "random") -> dict[str, Any]:
        """Build the split around ``reference`` (its test crops chosen by ``test_crops``), train FedAvg on its
        baseline device with every seed and return the devices, the test rows and every seed's per-device
        accuracy."""
        from hetbench.builders.iso_isp import build_iso_isp
        from hetbench.isp.pipeline import Pipeline, table3_variants
        from hetbench.sweep import sweep

        stages = _stage_list(settings["stages"], "stages")
        base = Pipeline.reference(reference)
        devices = [p.name_against(base) for p in table3_variants(stages, base)]
        split_seed = settings.get("split_seed", 0)
        unseen = "-unseen" if test_crops == "unseen-region" else ""
        name = f"iso-isp-{'+'.join(stages)}{'-paper' if reference == 'paper' else ''}{unseen}-s{split_seed}"
        folder = ctx.work / name
        ctx.note(f"building {name}: {len(devices)} devices around the {reference} reference x "
                 f"{settings['crops_per_photo']} crops of 7 photographs ({test_crops} test crops)")
        build_iso_isp(folder, name=name, stages=",".join(stages), size=settings["size"],
                      clients=settings["clients_per_device"] * len(devices), test_fraction=settings["test_fraction"],
                      seed=split_seed, num_proc=_build_processes(settings["crops_per_photo"]),
                      crops_per_photo=settings["crops_per_photo"], crop_size=settings["crop_size"], quiet=True,
                      reference=reference, test_crops=test_crops)
        test_rows = require_test_rows(folder, devices, settings["min_test_examples"], named="the Table 3 variants")
        accuracy: list[dict[str, float]] = []
        trained_clients: set[int] = set()
        for seed in ctx.seeds:
            run = sweep(folder, "fedavg", seeds=[seed], config=config, out=out, quiet=True,
                        threads=ctx.threads, store=ctx.store)[0]
            doc = run.doc
            trained = sorted(g for g, v in doc["groups"].items() if v.get("trained_on"))
            if trained != [BASELINE]:  # the trainer's record of the protocol, not this runner's wish
                raise HetbenchError(f"{run.path.name}: trained on groups {trained}, not only '{BASELINE}'")
            trained_clients.add(int(doc["split"]["num_clients"]))
            acc = {g: float(a) for g, a in doc["final"]["last_k"]["group_accuracy"].items()}
            accuracy.append(acc)
            ctx.note(f"fedavg seed {seed} ({reference}{unseen}): baseline {acc[BASELINE]:.1f}%, "
                       + ", ".join(f"{v} {acc[BASELINE] - acc[v]:+.1f}" for v in devices[1:]) + f" ({run.path.name})")
        return {"name": name, "stages": stages, "devices": devices, "test_rows": test_rows, "accuracy": accuracy,
                "trained_clients": trained_clients, "pipeline": str(base)}

    @staticmethod
    def _summary(ref: dict[str, Any]) -> dict[str, Any]:
        """A reference's drops and contrasts over seeds (mean ± standard error) for the facts."""
        per_seed = [stage_drops(a) for a in ref["accuracy"]]
        pairs = [contrasts(a) for a in ref["accuracy"]]
        return {
            "split": ref["name"], "baseline_pipeline": ref["pipeline"],
            "baseline_accuracy": _mean_se([a[BASELINE] for a in ref["accuracy"]]) + " %",
            "variant_drop": [f"{v} {_mean_se([p[0][v] for p in per_seed])}" for v in ref["devices"][1:]],
            "stage_drop": [f"{st} {_mean_se([p[1][st] for p in per_seed])}" for st in ref["stages"]],
            "wb_tone_minus_others": _mean_se([p[0] for p in pairs]),
            "weakest_wb_tone_minus_strongest_other": _mean_se([p[1] for p in pairs]),
        }

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        references = list(settings.get("references", ["paper", "phone"]))
        config = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device,
                                     train_groups=(BASELINE,))
        split_seed = settings.get("split_seed", 0)
        # only the checks' reference's runs are judged for settling: the others are reported, never decided
        refs = [self._reference(settings, ctx, r, config, ctx.runs if i == 0 else ctx.work / "references")
                for i, r in enumerate(references)]
        main = refs[0]  # the checks' reference; the others are reported beside it
        unseen = self._reference(settings, ctx, references[0], config, ctx.runs, "unseen-region")
        stages, devices, accuracy, test_rows = main["stages"], main["devices"], main["accuracy"], main["test_rows"]
        pairs = [contrasts(a) for a in accuracy]
        unseen_pairs = [contrasts(a) for a in unseen["accuracy"]]
        trained_clients = set().union(*(r["trained_clients"] for r in refs + [unseen]))
        counts = sorted(set(test_rows.values()))
        neither = [v for v in devices[1:] if variant_stage(v) not in HIGH + LOW]
        n = len(ctx.seeds)
        summary = self._summary(main)
        return RunOutput(
            measurements={
                "wb_tone_minus_others": Measurement([[p[0] for p in pairs]], unit="accuracy points",
                                                    labels=["mean(WB, tone) - mean(others)"]),
                "weakest_wb_tone_minus_strongest_other": Measurement(
                    [[p[1] for p in pairs]], unit="accuracy points",
                    labels=["min(WB, tone) - max(others)"]),
                "wb_tone_minus_others_unseen": Measurement([[p[0] for p in unseen_pairs]], unit="accuracy points",
                                                           labels=["mean(WB, tone) - mean(others), unseen region"]),
                "weakest_wb_tone_minus_strongest_other_unseen": Measurement(
                    [[p[1] for p in unseen_pairs]], unit="accuracy points",
                    labels=["min(WB, tone) - max(others), unseen region"]),
            },
            axes={"wb_tone_minus_others": Axes(_XLABEL, "variant drops: WB/tone - others (points)"),
                  "weakest_wb_tone_minus_strongest_other": Axes(_XLABEL, "stage drops: WB/tone - others (points)"),
                  "wb_tone_minus_others_unseen": Axes(_XLABEL, "unseen: variant drops, WB/tone - others"),
                  "weakest_wb_tone_minus_strongest_other_unseen": Axes(_XLABEL, "unseen: stage drops, WB/tone - others")},
            facts={
                "split": main["name"], "reference": references[0], "baseline_pipeline": main["pipeline"],
                "stages": stages, "devices": devices,
                "wb_tone_variants": [v for v in devices[1:] if variant_stage(v) in HIGH],
                "other_variants": [v for v in devices[1:] if variant_stage(v) in LOW],
                **({"reported_only_variants": neither} if neither else {}),
                "clients": settings["clients_per_device"] * len(devices),
                "trained_groups": [BASELINE],
                "trained_clients": sorted(trained_clients)[0] if len(trained_clients) == 1 else sorted(trained_clients),
                "test_examples": counts[0] if len(counts) == 1 else dict(sorted(test_rows.items())),
                "test_examples_note": "test images per device (the baseline and each variant); each drop compares two "
                                      "such test sets",
                "seeds": list(ctx.seeds), "split_seed": split_seed,
                "baseline_accuracy": summary["baseline_accuracy"],
                "variant_drop": summary["variant_drop"], "stage_drop": summary["stage_drop"],
                "unseen_region": {**self._summary(unseen), "test_examples": min(unseen["test_rows"].values()),
                                  "test_crops": "each photograph's test crops from a band at one end that no training "
                                                "crop touches (--test-crops unseen-region)"},
                **({"other_references": {r: self._summary(ref) for r, ref in zip(references[1:], refs[1:])}}
                   if len(refs) > 1 else {}),
                "train": {k: getattr(config, k) for k in TRAIN_KEYS}, "algorithm": "fedavg",
                "uncertainty": f"mean and its 95% t interval over {n} training seed(s) on one split (split_seed "
                               f"{split_seed}): the spread is the training's, not the crops'",
                "metric": f"test accuracy per device, mean of the last {config.last_k} evaluations "
                          "(final.last_k.group_accuracy); drop = baseline's minus the variant's, in points",
            },
        )
