"""The heteroswitch-lodo claim (HeteroSwitch Table 4's domain-generalisation column): its runner on a tiny
device split (each held-out phone's runs train on every other phone and are scored on it), the worst case
over the held-out phones, its settings checks, and its declared criterion deciding from the numbers."""

from __future__ import annotations

import copy
import json

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.runners.device_generalisation import worst_unseen
from claim_definitions import raw_claim

CLAIM = "heteroswitch-lodo"

#: the nine phones of HeteroSwitch Table 1 (manifests/devices/heteroswitch9.yaml)
PHONES = ["G4", "G7", "GalaxyS22", "GalaxyS6", "GalaxyS9", "Nexus5X", "Pixel2", "Pixel5", "VELVET"]

TINY = {
    "profiles": "heteroswitch9", "clients": 9, "crops_per_photo": 2, "crop_size": 96, "size": 16,
    "test_fraction": 0.2, "min_test_examples": 1, "split_seed": 0, "held_out": ["G4", "GalaxyS22"],
    "train": {"model": "digits-cnn", "image_size": 16, "rounds": 2, "clients_per_round": 3, "local_epochs": 1,
              "batch_size": 8, "lr": 0.05, "eval_every": 1, "last_k": 1},
}


def test_tiny_run_scores_each_held_out_phone_with_the_models_trained_without_it(tmp_path):
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", device="cpu",
                  threads=1)
    ctx.work.mkdir()
    runner = RUNNERS["leave_one_device_out"]
    out = runner.run(runner.check_settings(copy.deepcopy(TINY), "tiny"), ctx)
    facts = out.facts
    assert sorted(facts["devices"]) == PHONES and facts["clients_per_device"] == {d: 1 for d in facts["devices"]}
    held = [d for d in facts["devices"] if d in ("G4", "GalaxyS22")]  # the profile set's order
    assert facts["held_out"] == held and "not over all 9" in facts["held_out_note"]
    docs = [json.loads(p.read_text()) for p in ctx.runs.rglob("*.json")]
    assert len(docs) == 2 * 2 * 2  # two algorithms x two seeds x two held-out phones
    unseen, gap = {}, {}
    for doc in docs:
        trained = doc["config"]["train_groups"]
        (left,) = [d for d in PHONES if d not in trained]  # every phone but one trained
        assert left in held and len(trained) == 8
        acc = doc["final"]["last_k"]["group_accuracy"]
        key = (doc["algorithm"]["name"], doc["config"]["seed"], left)
        unseen[key] = acc[left]
        gap[key] = sum(acc[d] for d in trained) / 8 - acc[left]
    change = [min(unseen[("heteroswitch", s, d)] for d in held) - min(unseen[("fedavg", s, d)] for d in held)
              for s in (0, 1)]
    assert out.measurements["worst_unseen_change"].samples[0] == pytest.approx(change)
    gap_change = [sum(gap[("heteroswitch", s, d)] - gap[("fedavg", s, d)] for d in held) / len(held) for s in (0, 1)]
    assert out.measurements["seen_gap_change"].samples[0] == pytest.approx(gap_change)
    for algo in ("fedavg", "heteroswitch"):
        table = facts["table4_dg"][algo]
        assert sorted(table["unseen_accuracy"]) == sorted(held) and len(table["worst_phones"]) == 2
        assert table["unseen_accuracy"]["G4"] == round((unseen[(algo, 0, "G4")] + unseen[(algo, 1, "G4")]) / 2, 2)


def test_the_worst_case_is_the_lowest_held_out_phone_with_ties_broken_by_name():
    assert worst_unseen({"GalaxyS9": 61.0, "GalaxyS6": 58.5, "G4": 60.0}) == ("GalaxyS6", 58.5)
    assert worst_unseen({"b": 50.0, "a": 50.0}) == ("a", 50.0)
    with pytest.raises(HetbenchError, match="no held-out phone"):
        worst_unseen({})


def test_every_phone_is_held_out_when_the_claim_names_none():
    settings = copy.deepcopy(TINY)
    del settings["held_out"]
    runner = RUNNERS["leave_one_device_out"]
    assert sorted(runner.held_out(runner.check_settings(settings, "tiny"))) == PHONES


def test_the_shipped_claim_declares_its_check_and_the_papers_number():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    assert claim.runner == "leave_one_device_out"
    assert [(k.measure, k.criterion["name"]) for k in claim.checks] == [
        ("worst_unseen_change", "greater_than"), ("seen_gap_change", "less_than")]
    assert claim.checks[0].paper["values"] == [3.54]  # Table 4: 64.71 - 61.17
    assert "held_out" not in claim.settings["full"]  # the paper's protocol: every phone in turn
    for mode in ("quick", "full", "smoke"):
        assert claim.settings[mode]["clients"] % 9 == 0
    worst, gap = (k.criterion for k in claim.checks)
    assert evaluate(Measurement([[3.5, 4.0, 2.8, 3.9, 3.1]]), worst).verdict == "reproduced"
    assert evaluate(Measurement([[-3.5, -1.0, -2.8, -0.5, -3.1]]), worst).verdict == "not reproduced"
    assert evaluate(Measurement([[-6.0, 5.0, -2.0, 7.0, 1.0]]), worst).verdict == "inconclusive"
    assert evaluate(Measurement([[-2.2, -9.3, -12.9, -11.4, -8.3]]), gap).verdict == "reproduced"  # the last pilot
    assert evaluate(Measurement([[0.5, -0.2, 1.0, 0.3, 0.1]]), gap).verdict == "not reproduced"


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(held_out=["G4", "Pixel9"]), "'held_out' names 'Pixel9', not a device of profile set"),
    (lambda s: s.update(held_out=["G4", "G4"]), "'held_out' must be a non-empty list of distinct strings"),
    (lambda s: s.update(held_out=[]), "'held_out' must be a non-empty list of distinct strings"),
    (lambda s: s.update(clients=10), "'clients' must be a multiple of the 9 devices"),
])
def test_bad_settings_are_one_clear_message(edit, message):
    settings = copy.deepcopy(TINY)
    edit(settings)
    with pytest.raises(HetbenchError) as exc:
        RUNNERS["leave_one_device_out"].check_settings(settings, "tiny")
    text = str(exc.value)
    assert text.startswith("tiny") and message in text and "\n" not in text
