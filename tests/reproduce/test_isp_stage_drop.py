"""The heteroswitch-stage-drop claim (HeteroSwitch Fig. 3): its runner on a tiny iso-isp split (baseline-only
training, per-variant drops, facts), its contrasts, and its settings checks."""

from __future__ import annotations

import copy
import json

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.runners.isp_stage_drop import contrasts, stage_drops
from claim_definitions import raw_claim

CLAIM = "heteroswitch-stage-drop"

#: a tiny version of the quick settings: 3 crops per photograph, 16 px, 2 rounds, 2 seeds
TINY = {
    "stages": "wb,tone,compression", "crops_per_photo": 3, "crop_size": 96, "size": 16, "clients_per_device": 2,
    "test_fraction": 0.2, "min_test_examples": 1, "split_seed": 0,
    "train": {"model": "digits-cnn", "rounds": 2, "clients_per_round": 2, "local_epochs": 1, "batch_size": 8,
              "lr": 0.05, "eval_every": 1, "last_k": 1},
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("stage-drop")
    ctx = Context(work=root / "work", runs=root / "runs", seeds=[0, 1], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    runner = RUNNERS["isp_stage_drop"]
    settings = runner.check_settings(copy.deepcopy(TINY), "tiny")
    return runner.run(settings, ctx), ctx


def test_the_shipped_claim_validates_with_the_declared_criteria():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    assert claim.runner == "isp_stage_drop"
    assert [(k.measure, k.criterion) for k in claim.checks] == [
        ("wb_tone_minus_others", {"name": "greater_than", "threshold": 0, "min_effect": 5}),
        ("weakest_wb_tone_minus_strongest_other", {"name": "greater_than", "threshold": 0, "min_effect": 0}),
        # the same two criteria on the split whose test crops no training crop touches
        ("wb_tone_minus_others_unseen", {"name": "greater_than", "threshold": 0, "min_effect": 5}),
        ("weakest_wb_tone_minus_strongest_other_unseen", {"name": "greater_than", "threshold": 0, "min_effect": 0})]
    quick = claim.settings["quick"]
    # >= 100 test images per variant are asked for in quick mode (and checked on the built split)
    assert quick["min_test_examples"] >= 100 and quick["clients_per_device"] >= 2


def test_tiny_run_trains_only_baseline_clients_and_measures_per_seed(tiny_run):
    out, ctx = tiny_run
    assert set(out.measurements) == set(RUNNERS["isp_stage_drop"].measures)
    for m in out.measurements.values():
        assert len(m.samples) == 1 and len(m.samples[0]) == len(ctx.seeds)
    facts = out.facts
    assert facts["devices"] == ["baseline", "wb=none", "wb=white-patch", "tone=none", "tone=srgb-gamma+equalize",
                                "compress=none", "compress=jpeg50"]
    assert facts["wb_tone_variants"] == facts["devices"][1:5] and facts["other_variants"] == facts["devices"][5:]
    assert facts["seeds"] == [0, 1] and facts["trained_groups"] == ["baseline"]
    assert facts["clients"] == 14 and facts["trained_clients"] == 2
    assert "95% t interval over 2 training seed(s)" in facts["uncertainty"] and "last 1" in facts["metric"]
    # the checks' baseline is Table 3's own column (gray-world WB, no chroma or sharpening stage); the
    # phone-like baseline is a second reference, reported beside it
    assert facts["reference"] == "paper" and facts["split"].endswith("-paper-s0")
    paper = dict(kv.split("=") for kv in facts["baseline_pipeline"].split(","))
    assert (paper["wb"], paper["chroma"], paper["sharpen"], paper["compress"]) == ("gray-world", "none", "none", "jpeg85")
    phone = facts["other_references"]["phone"]
    assert "wb=grey-edge" in phone["baseline_pipeline"] and len(phone["variant_drop"]) == 6
    assert set(phone) >= {"wb_tone_minus_others", "weakest_wb_tone_minus_strongest_other", "baseline_accuracy"}
    # only the checks' reference's runs (random and unseen-region test crops) are where the settling rule reads;
    # the phone reference's are apart
    folders = sorted(p.name for p in ctx.runs.iterdir())
    assert len(folders) == 2 and "-paper-s0-" in folders[0] and "-paper-unseen-s0-" in folders[1]
    assert len(list((ctx.work / "references").rglob("fedavg-train_baseline-s*.json"))) == 2
    paper_runs = next(ctx.runs.glob("*-paper-s0-*"))
    docs = [json.loads(p.read_text()) for p in sorted(paper_runs.glob("fedavg-train_baseline-s*.json"))]
    assert len(docs) == 2
    measured = out.measurements["wb_tone_minus_others"].samples[0]
    strict = out.measurements["weakest_wb_tone_minus_strongest_other"].samples[0]
    for doc, a, b in zip(docs, measured, strict):
        # the trainer's own record: baseline clients only trained, every device was tested
        assert doc["config"]["train_groups"] == ["baseline"] and doc["split"]["num_clients"] == 2
        assert [g for g, v in doc["groups"].items() if v["trained_on"]] == ["baseline"]
        assert sorted(doc["groups"]) == sorted(facts["devices"])
        # test_examples is the size of every device's test set, as the trainer counted it
        assert {v["num_test"] for v in doc["groups"].values()} == {facts["test_examples"]}
        # the measurement is the contrast of the run's per-group last-k accuracies
        assert (a, b) == pytest.approx(contrasts(doc["final"]["last_k"]["group_accuracy"]))
    # the unseen-region split: the same devices, its test crops from each photograph's band, its contrasts measured
    unseen = facts["unseen_region"]
    assert unseen["split"].endswith("-paper-unseen-s0") and unseen["test_examples"] == 7  # one crop of 7 photographs
    unseen_runs = next(ctx.runs.glob("*-paper-unseen-s0-*"))
    docs = [json.loads(p.read_text()) for p in sorted(unseen_runs.glob("fedavg-train_baseline-s*.json"))]
    pairs = [contrasts(doc["final"]["last_k"]["group_accuracy"]) for doc in docs]
    assert out.measurements["wb_tone_minus_others_unseen"].samples[0] == pytest.approx([p[0] for p in pairs])
    assert out.measurements["weakest_wb_tone_minus_strongest_other_unseen"].samples[0] == pytest.approx(
        [p[1] for p in pairs])


def test_contrasts_group_the_variants_by_stage_and_the_criterion_decides():
    acc = {"baseline": 90.0, "wb=none": 40.0, "wb=white-patch": 80.0, "tone=none": 50.0,
           "tone=srgb-gamma+equalize": 85.0, "demosaic=bin": 88.0, "demosaic=ahd": 89.0,
           "denoise=none": 90.0, "denoise=bayes-shrink": 87.0, "compress=none": 91.0, "compress=jpeg50": 86.0,
           "gamut=none": 10.0}  # gamut is in neither group
    variant, stage = stage_drops(acc)
    assert variant["wb=none"] == 50.0 and stage == {"wb": 50.0, "tone": 40.0, "demosaic": 2.0, "denoise": 3.0,
                                                    "compress": 4.0, "gamut": 80.0}
    mean_gap, strict_gap = contrasts(acc)
    assert mean_gap == pytest.approx((50 + 10 + 40 + 5) / 4 - (2 + 1 + 0 + 3 - 1 + 4) / 6)
    assert strict_gap == 36.0  # min(50, 40) - max(2, 3, 4)
    declared = {c["measure"]: c["criterion"] for c in raw_claim(CLAIM)["checks"]}
    ok = evaluate(Measurement([[mean_gap, mean_gap + 1, mean_gap - 1]]), declared["wb_tone_minus_others"])
    assert ok.verdict == "reproduced"
    # a denoise option hurting more than the tone stage: the stage-by-stage check fails
    worse = dict(acc, **{"denoise=none": 45.0})
    assert contrasts(worse)[1] == -5.0
    assert evaluate(Measurement([[-5.0, -4.0, -4.5, -5.5, -3.5]]),
                    declared["weakest_wb_tone_minus_strongest_other"]).verdict == "not reproduced"


@pytest.mark.parametrize("edit, message", [
    ({"stages": "wb,demosaic"}, "'stages' must list wb, tone and at least one of demosaic, denoise, compress"),
    ({"stages": "wb,tone"}, "'stages' must list wb, tone and at least one of"),
    ({"stages": "wb,tone,vignette"}, "'stages': unknown"),
    ({"clients_per_device": 1}, "'clients_per_device' must be at least 2"),
    ({"test_fraction": 1.5}, "'test_fraction' must be in (0, 1)"),
    ({"crop_size": 16}, "'crop_size' must be at least 32 pixels"),
    ({"size": 8}, "'size': size must be between 16 and 4096"),
    ({"min_test_examples": 0}, "'min_test_examples' must be a positive integer"),
    ({"split_seed": -1}, "'split_seed' must be a non-negative integer"),
    ({"epochs": 3}, "unknown setting 'epochs'"),
    ({"references": ["film"]}, "'references': unknown reference pipeline 'film'"),
    ({"references": ["paper", "paper"]}, "'references' must be a non-empty list of distinct strings"),
    ({"train": {"rounds": 2, "clients_per_round": 5}}, "'clients_per_round' 5 exceeds clients_per_device 4"),
    ({"train": {"rounds": 2}}, "'clients_per_round' must be given"),
    ({"train": {"clients_per_round": 2, "device": "cpu"}}, "settings.quick.train: unknown option 'device'"),
])
def test_bad_settings_are_one_clear_error(edit, message):
    data = raw_claim(CLAIM)
    data["settings"]["quick"].update(edit)
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "x.yaml")
    assert str(exc.value).startswith("x.yaml: settings.quick") and message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_test_set_below_min_test_examples_is_refused_before_training(tmp_path):
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    settings = dict(copy.deepcopy(TINY), stages="wb,tone,denoise", crops_per_photo=1, min_test_examples=100)
    with pytest.raises(HetbenchError, match=r"test sets are too small: baseline \d+, .* \(min_test_examples 100\)"):
        RUNNERS["isp_stage_drop"].run(settings, ctx)
    assert not ctx.runs.exists()
