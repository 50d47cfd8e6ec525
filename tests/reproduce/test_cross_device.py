"""The heteroswitch-table2 claim (HeteroSwitch Table 2): its runner on a tiny device split (one model per
phone trained on that phone's clients alone, scored on every phone), Table 2's row arithmetic, its settings
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
from hetbench.reproduce.runners.cross_device import pair_share, table2_rows
from claim_definitions import raw_claim

CLAIM = "heteroswitch-table2"

#: the nine phones of HeteroSwitch Table 1 (manifests/devices/heteroswitch9.yaml)
PHONES = ["G4", "G7", "GalaxyS22", "GalaxyS6", "GalaxyS9", "Nexus5X", "Pixel2", "Pixel5", "VELVET"]

TINY = {
    "profiles": "heteroswitch9", "clients": 9, "crops_per_photo": 2, "crop_size": 96, "size": 16,
    "test_fraction": 0.2, "min_test_examples": 1, "split_seed": 0,
    "train": {"model": "digits-cnn", "image_size": 16, "rounds": 2, "clients_per_round": 1, "local_epochs": 1,
              "batch_size": 8, "lr": 0.05, "eval_every": 1, "last_k": 1},
}


def test_tiny_run_trains_one_model_per_phone_on_its_clients_alone_and_scores_every_phone(tmp_path):
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    runner = RUNNERS["cross_device"]
    out = runner.run(runner.check_settings(copy.deepcopy(TINY), "tiny"), ctx)
    facts = out.facts
    assert sorted(facts["devices"]) == PHONES
    assert facts["clients_per_device"] == {d: 1 for d in facts["devices"]}  # spread evenly, not by market share
    docs = [json.loads(p.read_text()) for p in ctx.runs.rglob("*.json")]
    assert sorted(d["config"]["train_groups"][0] for d in docs) == PHONES  # one run per phone, on it alone
    matrix = {d["config"]["train_groups"][0]: d["final"]["last_k"]["group_accuracy"] for d in docs}
    assert all(sorted(row) == PHONES for row in matrix.values())
    assert facts["accuracy_matrix"] == {d: {e: round(matrix[d][e], 2) for e in PHONES} for d in PHONES}
    rows = table2_rows(matrix)
    assert out.measurements["degradation_others"].samples[0] == pytest.approx(
        [np.mean([matrix[d][d] - np.mean([matrix[d][e] for e in PHONES if e != d]) for d in PHONES])])
    pairs = [(d, e) for d in PHONES for e in PHONES if e != d]
    assert out.measurements["own_phone_ahead"].samples[0] == pytest.approx(
        [np.mean([matrix[d][d] > matrix[d][e] for d, e in pairs])])
    assert facts["own_best_rows"] == [sum(r["own_best"] for r in rows.values())]
    assert facts["test_examples"] == {d: 3 for d in PHONES}


def test_table2_rows_follow_the_papers_mean_others():
    matrix = {"a": {"a": 90.0, "b": 70.0, "c": 80.0}, "b": {"a": 60.0, "b": 50.0, "c": 40.0},
              "c": {"a": 55.0, "b": 65.0, "c": 60.0}}
    rows = table2_rows(matrix)
    assert rows["a"] == {"own": 90.0, "mean_others": 75.0, "degradation": 15.0,
                         "relative_degradation": pytest.approx(100 * 15 / 90), "own_best": True}
    assert not rows["b"]["own_best"] and rows["b"]["degradation"] == 0.0  # b scores better on a than on itself
    assert not rows["c"]["own_best"] and rows["c"]["degradation"] == 0.0
    assert pair_share(matrix) == pytest.approx(4 / 6)  # a ahead of both, b of c only, c of a only
    with pytest.raises(HetbenchError, match="every training phone scored on every phone"):
        table2_rows({"a": {"a": 1.0, "b": 2.0}, "b": {"b": 3.0}})


def test_the_shipped_claim_declares_its_checks_and_even_phones():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    assert claim.runner == "cross_device"
    assert [(k.measure, k.criterion["name"]) for k in claim.checks] == [
        ("degradation_others", "greater_than"), ("own_phone_ahead", "greater_than")]
    for mode in ("quick", "full", "smoke"):
        assert claim.settings[mode]["clients"] % 9 == 0
    degradation, best = (k.criterion for k in claim.checks)
    assert evaluate(Measurement([[19.0, 18.0, 20.5, 19.5, 18.5]]), degradation).verdict == "reproduced"
    assert evaluate(Measurement([[0.5, 0.2, 1.0, 0.8, 0.4]]), degradation).verdict == "not reproduced"
    assert evaluate(Measurement([[0.958, 0.958, 0.931, 0.944, 0.972]]), best).verdict == "reproduced"
    assert evaluate(Measurement([[0.75, 0.792, 0.806, 0.778, 0.819]]), best).verdict == "not reproduced"


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(clients=10), "'clients' must be a multiple of the 9 devices"),
    (lambda s: s.update(clients=4), "'clients' must be at least the number of devices, 9"),
    (lambda s: s.update(profiles="no-such-phones"), "'profiles':"),
])
def test_bad_settings_are_one_clear_message(edit, message):
    settings = copy.deepcopy(TINY)
    edit(settings)
    with pytest.raises(HetbenchError) as exc:
        RUNNERS["cross_device"].check_settings(settings, "tiny")
    text = str(exc.value)
    assert text.startswith("tiny") and message in text and "\n" not in text
