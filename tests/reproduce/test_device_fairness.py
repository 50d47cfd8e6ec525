"""The heteroswitch-table4 claim (HeteroSwitch Table 4): its runner on a tiny device split (FedAvg and
HeteroSwitch on the same split, per-device accuracies, variance and worst device, facts), its settings
checks, and its declared criteria deciding from the numbers."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.runners.device_fairness import ALGORITHMS, expected_test_images, fairness
from claim_definitions import raw_claim

CLAIM = "heteroswitch-table4"

#: the nine phones of HeteroSwitch Table 1 (manifests/devices/heteroswitch9.yaml)
PHONES = ["G4", "G7", "GalaxyS22", "GalaxyS6", "GalaxyS9", "Nexus5X", "Pixel2", "Pixel5", "VELVET"]

#: a tiny version of the quick settings: 2 crops per photograph (3 test captures), 16 px, 2 rounds
TINY = {
    "profiles": "heteroswitch9", "clients": 9, "crops_per_photo": 2, "crop_size": 96, "size": 16,
    "test_fraction": 0.2, "min_test_examples": 1, "split_seed": 0,
    "train": {"model": "digits-cnn", "image_size": 16, "rounds": 2, "clients_per_round": 3, "local_epochs": 1,
              "batch_size": 8, "lr": 0.05, "eval_every": 1, "last_k": 1},
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("table4")
    ctx = Context(work=root / "work", runs=root / "runs", seeds=[0], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    runner = RUNNERS["device_fairness"]
    settings = runner.check_settings(copy.deepcopy(TINY), "tiny")
    return runner.run(settings, ctx), ctx


def test_the_shipped_claim_validates_with_the_declared_criteria():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    assert claim.runner == "device_fairness"
    assert [(k.measure, k.criterion["name"], k.criterion["threshold"]) for k in claim.checks] == [
        ("variance_change", "less_than", 0), ("worst_device_change", "greater_than", 0),
        ("average_change", "greater_than", 0)]
    for mode in ("quick", "full"):
        s = claim.settings[mode]
        # every device's test set holds >= 100 images (each test capture is rendered by every device)
        assert s["min_test_examples"] >= 100
        assert expected_test_images(s["crops_per_photo"], s["test_fraction"]) >= s["min_test_examples"]
    full = claim.settings["full"]["train"]  # sec. 6 and Appendix A.2
    assert (claim.settings["full"]["clients"], full["clients_per_round"], full["batch_size"], full["local_epochs"],
            full["rounds"], full["lr"], full["model"]) == (100, 20, 10, 1, 1000, 0.1, "mobilenetv3-small")


def test_tiny_run_trains_both_algorithms_and_measures_every_device(tiny_run):
    out, ctx = tiny_run
    assert set(out.measurements) == set(RUNNERS["device_fairness"].measures)
    for m in out.measurements.values():
        assert len(m.samples) == 1 and len(m.samples[0]) == len(ctx.seeds)
        assert all(np.isfinite(m.samples[0]))
    facts = out.facts
    assert sorted(facts["devices"]) == PHONES and facts["seeds"] == [0]
    # the test images each device's number rests on: the 3 held-out captures, rendered by every phone
    assert facts["test_examples"] == {d: expected_test_images(2, 0.2) for d in PHONES} == {d: 3 for d in PHONES}
    assert sum(facts["clients_per_device"].values()) == 9 and min(facts["clients_per_device"].values()) >= 1
    for algo in ALGORITHMS:
        row = facts["table4"][algo]
        assert sorted(row["device_accuracy"]) == PHONES
        assert all(0.0 <= a <= 100.0 for a in row["device_accuracy"].values())
        assert row["worst_devices"][0] in PHONES
    assert "95% t interval over 1 training seed(s)" in facts["uncertainty"] and "last 1" in facts["metric"]
    # the measurement is the paired difference of the trainer's per-device last-k accuracies
    docs = {a: json.loads(next(ctx.runs.rglob(f"{a}-s0.json")).read_text()) for a in ALGORITHMS}
    for doc in docs.values():
        assert doc["config"]["group_by"] == "device" and sorted(doc["groups"]) == PHONES
        assert {g: v["num_test"] for g, v in doc["groups"].items()} == facts["test_examples"]
    (fv, fw), (hv, hw) = (fairness(docs[a]["final"]["last_k"]["group_accuracy"]) for a in ALGORITHMS)
    assert out.measurements["variance_change"].samples[0] == pytest.approx([hv - fv])
    assert out.measurements["worst_device_change"].samples[0] == pytest.approx([hw - fw])
    fa, ha = (np.mean(list(docs[a]["final"]["last_k"]["group_accuracy"].values())) for a in ALGORITHMS)
    assert out.measurements["average_change"].samples[0] == pytest.approx([ha - fa])
    assert docs["fedavg"]["config"]["rounds"] == docs["heteroswitch"]["config"]["rounds"] == 2


def test_fairness_is_population_variance_and_minimum():
    acc = {"a": 61.17, "b": 64.0, "c": 66.5}
    var, worst = fairness(acc)
    assert var == pytest.approx(np.var(list(acc.values()))) and worst == 61.17
    with pytest.raises(HetbenchError, match="no per-device accuracy"):
        fairness({})


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(min_test_examples=100),
     "every device would have 3 test images (test_fraction 0.2 of 7 scenes x 2 crops), fewer than "
     "min_test_examples 100; raise crops_per_photo to 72"),
    (lambda s: s.update(clients=4), "'clients' must be at least the number of devices, 9"),
    (lambda s: s["train"].update(clients_per_round=12), "'clients_per_round' 12 exceeds clients 9"),
    (lambda s: s.update(test_fraction=1.5), "'test_fraction' must be in (0, 1)"),
    (lambda s: s.update(crop_size=16), "'crop_size' must be at least 32 pixels"),
    (lambda s: s.update(profiles="no-such-phones"), "'profiles':"),
    (lambda s: s.update(epochs=3), "unknown setting 'epochs'"),
    (lambda s: s["train"].update(rounds=0), "tiny.train: rounds must be a positive number"),
    (lambda s: s.update(split_seed=-1), "'split_seed' must be a non-negative integer"),
])
def test_bad_settings_are_one_clear_message(edit, message):
    settings = copy.deepcopy(TINY)
    edit(settings)
    with pytest.raises(HetbenchError) as exc:
        RUNNERS["device_fairness"].check_settings(settings, "tiny")
    text = str(exc.value)
    assert text.startswith("tiny") and message in text and "\n" not in text


def test_the_declared_criteria_decide_from_the_paired_differences():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    variance, worst, average = (k.criterion for k in claim.checks)
    # Table 4's own differences (-6.86, +3.54 and +3.37) with a small spread: reproduced
    assert evaluate(Measurement([[3.4, 3.1, 3.6, 3.3, 3.5]]), average).verdict == "reproduced"
    assert evaluate(Measurement([[-6.9, -6.5, -7.2, -6.8, -7.0]]), variance).verdict == "reproduced"
    assert evaluate(Measurement([[3.5, 3.2, 3.9, 3.4, 3.6]]), worst).verdict == "reproduced"
    # the right direction but surely smaller than the minimum effect: not reproduced
    assert evaluate(Measurement([[-0.4, -0.6, -0.5, -0.45, -0.55]]), variance).verdict == "not reproduced"
    # a positive mean whose interval straddles the margin: inconclusive, not a verdict
    assert evaluate(Measurement([[4.0, -1.0, 2.0, 3.0, 0.0]]), worst).verdict == "inconclusive"
    # the wrong direction: not reproduced
    assert evaluate(Measurement([[5.0, 2.0, 8.0, 4.0, 6.0]]), variance).verdict == "not reproduced"
    assert evaluate(Measurement([[-3.0, -1.0, -2.0, -2.5, -1.5]]), worst).verdict == "not reproduced"
