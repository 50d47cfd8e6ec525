"""Phones no training client used: HeteroSwitch against FedAvg when a device is left out (Kim et al.,
"HeteroSwitch", MLSys 2024, sec. 4.2 and Fig. 5; Table 4's domain-generalisation column).

The split is ``hetbench build devices`` with the clients spread evenly over the phones (as for
:mod:`~hetbench.reproduce.runners.cross_device`: "all device types equally participate", Fig. 5): every
crop of the embedded photographs is captured by every emulated phone of a profile set (``heteroswitch9``:
the nine phones of Table 1), and the test captures, held out by capture, are rendered by every phone. For a
held-out phone d, FedAvg and HeteroSwitch train on the clients of every other phone (``hetbench train
--train-groups <the others> --group-by device``; ``--protocol leave-one-group-out`` when every phone is
held out in turn) and are scored on d's test images: u(d), the accuracy (%) on the phone no training
client used (the trainer's mean of the last k evaluations, ``final.last_k.group_accuracy[d]``).

Per algorithm and seed, Table 4's DG number is the worst case over the held-out phones H (sec. 6: "For
DG, we use the worst-case accuracy across devices as the metric"):

    worst_unseen = min_{d in H} u(d)

and the runner measures the paired difference HeteroSwitch - FedAvg seed by seed
(``worst_unseen_change``; Table 4: FedAvg 61.17%, HeteroSwitch 64.71%, +3.54 points).

HeteroSwitch is designed for "consistent accuracy ... across all devices, regardless of their presence
during training" (sec. 5). The same runs measure how far a phone's absence costs it: with s(d), the run's
mean accuracy over the phones it trained on,

    seen_gap = (1 / |H|) sum_{d in H} [ s(d) - u(d) ]      (points; Fig. 5's degradation, against the
                                                           phones that did train rather than a second run)

and the paired difference HeteroSwitch - FedAvg (``seen_gap_change``). A smaller gap can come from a lower
s(d) as well as from a higher u(d): the facts give both.

H is every phone in full mode. A claim may hold out a declared subset (``held_out``), where every phone
costs two trainings per seed: the facts say which phones the worst case was taken over.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, RunOutput
from hetbench.reproduce.runners.cross_device import CrossDeviceRunner, build_even_device_split
from hetbench.reproduce.runners.device_fairness import ALGORITHMS, SCENES, scored_devices
from hetbench.reproduce.runners.label_skew import TRAIN_KEYS, train_config


def worst_unseen(unseen: dict[str, float]) -> tuple[str, float]:
    """The held-out phone the model serves worst and its accuracy: Table 4's DG column for one run set.

    Parameters
    ----------
    unseen : dict
        ``unseen[d]``: the accuracy (%) on phone d of the model trained without d's clients.

    Examples
    --------
    >>> from hetbench.reproduce.runners.device_generalisation import worst_unseen
    >>> worst_unseen({"GalaxyS6": 58.5, "GalaxyS9": 61.0, "G4": 57.25})
    ('G4', 57.25)
    """
    if not unseen:
        raise HetbenchError("no held-out phone to take the worst case over")
    phone = min(unseen, key=lambda d: (unseen[d], d))
    return phone, float(unseen[phone])


class LeaveOneDeviceOutRunner(CrossDeviceRunner):
    measures = {
        "worst_unseen_change": "HeteroSwitch minus FedAvg: the lowest accuracy on a held-out phone, each phone "
                               "scored by the model trained without its clients (points), per seed",
        "seen_gap_change": "HeteroSwitch minus FedAvg: the mean over held-out phones of the run's accuracy on the "
                           "phones it trained on minus its accuracy on the held-out phone (points), per seed",
    }
    schema = {**CrossDeviceRunner.schema, "held_out": ("strs", False)}

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        self.held_out(settings, where)
        return settings

    @staticmethod
    def held_out(settings: dict[str, Any], where: str = "settings") -> list[str]:
        """The phones held out in turn, in the profile set's order: ``held_out``, or every phone."""
        from hetbench.isp.profiles import load_profiles

        phones = [d.name for d in load_profiles(settings["profiles"])]
        chosen = settings.get("held_out", phones)
        unknown = [d for d in chosen if d not in phones]
        if unknown:
            raise HetbenchError(f"{where}: 'held_out' names '{unknown[0]}', not a device of profile set "
                                f"'{settings['profiles']}' ({', '.join(phones)})")
        return [d for d in phones if d in chosen]

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list:
        from hetbench.isp.profiles import load_profiles
        from hetbench.reproduce.cost import federated_workload

        devices = len(load_profiles(settings["profiles"]))
        held = len(self.held_out(settings))
        captures = SCENES * settings["crops_per_photo"]
        test = round(captures * settings["test_fraction"])
        return [federated_workload(f"{', '.join(ALGORITHMS)}, one run per held-out phone", settings["train"],
                                   len(ALGORITHMS) * held * len(seeds),
                                   (captures - test) * devices / settings["clients"], test * devices, 3, SCENES,
                                   algorithms=ALGORITHMS)]

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        from hetbench.sweep import sweep

        base = dataclasses.replace(train_config(dict(settings["train"]), "train"), device=ctx.device,
                                   group_by="device")
        folder, devices, per_device, test_rows = build_even_device_split(settings, ctx)
        held = self.held_out(settings)

        # unseen[algo][seed index][d]: accuracy on d of the model trained without d; seen: the same runs'
        # mean accuracy over the phones they trained on
        unseen: dict[str, list[dict[str, float]]] = {a: [] for a in ALGORITHMS}
        seen: dict[str, list[dict[str, float]]] = {a: [] for a in ALGORITHMS}
        for seed in ctx.seeds:
            for algo in ALGORITHMS:
                unseen[algo].append({})
                seen[algo].append({})
                for d in held:
                    config = dataclasses.replace(base, train_groups=tuple(g for g in devices if g != d))
                    run = sweep(folder, algo, seeds=[seed], config=config, out=ctx.runs, quiet=True,
                                threads=ctx.threads, store=ctx.store)[0]
                    doc = run.doc
                    if d in doc["config"]["train_groups"] or len(doc["config"]["train_groups"]) != len(devices) - 1:
                        raise HetbenchError(f"{run.path.name}: trained on {doc['config']['train_groups']}, not on "
                                            f"every phone but {d}")
                    acc = scored_devices(run, test_rows)
                    unseen[algo][-1][d] = acc[d]
                    seen[algo][-1][d] = float(np.mean([acc[g] for g in devices if g != d]))
                phone, worst = worst_unseen(unseen[algo][-1])
                ctx.note(f"{algo} seed {seed}: worst held-out phone {phone} at {worst:.1f}%, held-out mean "
                         f"{np.mean(list(unseen[algo][-1].values())):.1f}%")

        worst = {a: [worst_unseen(u) for u in unseen[a]] for a in ALGORITHMS}
        change = [h[1] - f[1] for f, h in zip(worst["fedavg"], worst["heteroswitch"])]
        gap = {a: [float(np.mean([trained[d] - left[d] for d in held])) for trained, left in zip(seen[a], unseen[a])]
               for a in ALGORITHMS}
        gap_change = [h - f for f, h in zip(gap["fedavg"], gap["heteroswitch"])]

        def seed_mean(per_seed: list[dict[str, float]]) -> dict[str, float]:
            return {d: round(float(np.mean([s[d] for s in per_seed])), 2) for d in held}

        table = {a: {"worst_unseen": round(float(np.mean([w[1] for w in worst[a]])), 2),
                     "worst_phones": [w[0] for w in worst[a]],
                     "unseen_accuracy": seed_mean(unseen[a]),
                     "seen_accuracy": seed_mean(seen[a]),
                     "unseen_mean": round(float(np.mean([np.mean(list(u.values())) for u in unseen[a]])), 2),
                     "seen_gap": round(float(np.mean(gap[a])), 2)}
                 for a in ALGORITHMS}
        return RunOutput(
            measurements={
                "worst_unseen_change": Measurement([change], unit="worst held-out phone accuracy change (points)",
                                                   labels=["HeteroSwitch - FedAvg"]),
                "seen_gap_change": Measurement([gap_change], unit="seen - held-out accuracy gap change (points)",
                                               labels=["HeteroSwitch - FedAvg"]),
            },
            axes={"worst_unseen_change": Axes("", "worst held-out phone: HeteroSwitch - FedAvg (points)"),
                  "seen_gap_change": Axes("", "seen - held-out gap: HeteroSwitch - FedAvg (points)")},
            facts={"profiles": settings["profiles"], "devices": devices, "held_out": held,
                   "held_out_note": ("every phone held out in turn" if held == devices else
                                     f"the worst case is taken over the {len(held)} phones held out in turn "
                                     f"({', '.join(held)}), not over all {len(devices)}"),
                   "clients": settings["clients"], "clients_per_device": per_device, "seeds": list(ctx.seeds),
                   "split_seed": settings.get("split_seed", 0), "test_examples": test_rows,
                   "table4_dg": table,
                   "table4_dg_note": "per algorithm: worst_unseen, the seed-mean of the worst held-out phone's "
                                     "accuracy; worst_phones, that phone per seed; unseen_accuracy[d], the seed-mean "
                                     "accuracy on d of the models trained without d; seen_accuracy[d], the same "
                                     "runs' mean accuracy over the phones they trained on; seen_gap, the seed-mean "
                                     "of the mean over held-out phones of seen minus unseen",
                   "chance_accuracy": round(100.0 / SCENES, 2),
                   "train": {k: getattr(base, k) for k in TRAIN_KEYS},
                   "uncertainty": f"mean and its 95% t interval over {len(ctx.seeds)} training seed(s), paired by "
                                  "seed (one split)",
                   "metric": f"accuracy on the held-out phone, mean of the last {base.last_k} evaluations "
                             "(final.last_k.group_accuracy, --group-by device, --train-groups every other phone)"},
        )
