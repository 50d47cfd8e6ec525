"""Settled runs: a claim whose training runs were still moving when they stopped is inconclusive, and its
record says which runs and by how much."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import load_claim, parse_claim
from hetbench.reproduce.criteria import INCONCLUSIVE, REPRODUCED, Measurement
from hetbench.reproduce.runners.base import Runner, RunOutput
from hetbench.reproduce.settling import check_settle, fitted_change, run_settling, settling_report
from claim_definitions import raw_claim

SETTLE = {"evaluations": 4, "max_change": 3.0}


@settings(max_examples=100, deadline=None)
@given(st.floats(-5, 5), st.floats(0, 100), st.lists(st.integers(1, 5), min_size=2, max_size=10))
def test_the_fitted_change_of_a_straight_line_is_its_rise(slope, start, gaps):
    rounds = np.cumsum(gaps).astype(float)
    acc = start + slope * rounds
    assert fitted_change(rounds, acc) == pytest.approx(slope * (rounds[-1] - rounds[0]), abs=1e-6)


def test_a_run_settles_when_its_last_evaluations_are_flat():
    rising = {"curves": {"round": [2, 4, 6, 8], "accuracy": [40.0, 55.0, 63.0, 70.0]}}
    flat = {"curves": {"round": [2, 4, 6, 8, 10, 12], "accuracy": [40.0, 55.0, 70.0, 71.0, 69.5, 70.5]}}
    assert run_settling(rising, SETTLE)["settled"] is False
    assert run_settling(rising, SETTLE)["change"] == pytest.approx(fitted_change([2, 4, 6, 8], [40, 55, 63, 70]), abs=1e-4)
    got = run_settling(flat, SETTLE)
    assert got["settled"] and got["rounds"] == [6, 8, 10, 12]
    # fewer evaluations than the declaration reads: not shown to have settled
    short = {"curves": {"round": [10, 20], "accuracy": [70.0, 70.0]}}
    assert run_settling(short, SETTLE) == {"rounds": [10, 20], "change": None, "settled": False}


def test_settling_report_reads_every_result_under_the_runs_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "fedavg-s0.json").write_text(json.dumps(
        {"curves": {"round": [1, 2, 3, 4], "accuracy": [70.0, 70.5, 69.5, 70.0]}}))
    (tmp_path / "a" / "fedavg-s1.json").write_text(json.dumps(
        {"curves": {"round": [1, 2, 3, 4], "accuracy": [30.0, 40.0, 50.0, 60.0]}}))
    (tmp_path / "a" / "notes.json").write_text("{}")  # not a results document
    (tmp_path / "a" / "fedvc-s0.json").write_text(json.dumps(
        {"curves": {"round": [1, 2, 3, 4], "accuracy": [70.0, 70.5, 69.5, 70.0]}}))
    report = settling_report(tmp_path, SETTLE)
    assert sorted(report["runs"]) == ["a/fedavg-s0.json", "a/fedavg-s1.json", "a/fedvc-s0.json"]
    assert report["runs"]["a/fedavg-s1.json"] == {"condition": "a/fedavg", "rounds": [1, 2, 3, 4], "change": 30.0}
    # a condition is judged on its seed-mean curve: fedavg's two seeds rise by (30 - 0.3) / 2 points
    assert report["conditions"]["a/fedavg"] == {"runs": 2, "rounds": [1, 2, 3, 4], "change": 14.85, "settled": False}
    assert report["conditions"]["a/fedvc"]["settled"] is True
    assert report["unsettled"] == ["a/fedavg-s0.json", "a/fedavg-s1.json"]
    assert settling_report(tmp_path / "missing", SETTLE)["runs"] == {}


def test_runs_that_swing_around_a_flat_trend_settle_as_a_condition(tmp_path):
    """Seeds whose evaluations swing by several points in opposite phases: each run's fitted line moves by
    7.2 points, beyond a 3-point bound; their mean curve is flat, so the condition has settled."""
    swings = [[66.0, 74.0, 68.0, 76.0], [76.0, 68.0, 74.0, 66.0]]
    for i, acc in enumerate(swings):
        (tmp_path / f"fedavg-s{i}.json").write_text(json.dumps({"curves": {"round": [2, 4, 6, 8], "accuracy": acc}}))
    report = settling_report(tmp_path, SETTLE)
    assert all(abs(r["change"]) > 3 for r in report["runs"].values())
    assert report["conditions"]["fedavg"]["settled"] and report["unsettled"] == []


class _Fixed(Runner):
    """A runner that 'trains' by writing given curves, so the claim-level rule can be seen on its own."""

    trains = True
    seeded = True
    measures = {"gain": "a paired difference"}
    curves: list = []

    def run(self, settings, ctx):
        ctx.runs.mkdir(parents=True, exist_ok=True)
        for i, acc in enumerate(self.curves):
            (ctx.runs / f"fedavg-s{i}.json").write_text(json.dumps({"curves": {"round": [2, 4, 6, 8], "accuracy": acc}}))
        return RunOutput({"gain": Measurement([[5.0, 6.0, 5.5, 6.5, 5.2]], unit="points")})


@pytest.mark.parametrize("curves, verdict", [
    ([[60.0, 61.0, 60.5, 61.0]] * 5, REPRODUCED),
    # one seed still rising by 30 points lifts the seed-mean curve by 6.6: the condition has not settled
    ([[60.0, 61.0, 60.5, 61.0]] * 4 + [[30.0, 40.0, 50.0, 60.0]], INCONCLUSIVE),
])
def test_an_unsettled_condition_makes_the_claim_inconclusive(tmp_path, monkeypatch, curves, verdict):
    from hetbench.reproduce import claim_run as run_module
    from hetbench.reproduce.runners import Context

    runner = _Fixed()
    runner.curves = curves
    monkeypatch.setitem(run_module.RUNNERS._entries, "fixed", runner)
    claim = replace(load_claim("hsu-fedavgm"), runner="fixed",
                    checks=(replace(load_claim("hsu-fedavgm").checks[0], measure="gain"),))
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1, 2, 3, 4], mode="quick")
    (tmp_path / "plots").mkdir()
    record = run_module.run_claim(claim, "quick", ctx.seeds, ctx, tmp_path / "plots")
    assert record["verdict"] == verdict
    assert len(record["settling"]["runs"]) == 5
    check = record["checks"][0]
    if verdict == INCONCLUSIVE:
        every = [f"fedavg-s{i}.json" for i in range(5)]
        assert record["settling"]["unsettled"] == every
        assert record["settling"]["conditions"]["fedavg"]["change"] == pytest.approx(6.6)
        assert check["numbers"]["unsettled_verdict"] == REPRODUCED  # what the numbers alone say
        assert check["measurement"]["unsettled"] == every


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("settle"), "missing key 'settle' (its runner trains"),
    (lambda d: d.update(settle={"evaluations": 2, "max_change": 3}), "settle.evaluations must be an integer of at least 3"),
    (lambda d: d.update(settle={"evaluations": 4, "max_change": -1}), "settle.max_change must be a non-negative number"),
    (lambda d: d.update(settle={"evaluations": 4}), "'settle' must be a mapping of evaluations and max_change"),
    (lambda d: d["settings"]["quick"].update(seeds=[0, 1, 2]),
     "settings.quick.seeds: hsu-label-skew needs at least 5 seeds for its 95% t intervals (got 3)"),
])
def test_bad_settle_and_seed_declarations_are_one_line(edit, message):
    data = raw_claim("hsu-label-skew")
    edit(data)
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "manifests/claims/hsu-label-skew.yaml")
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_a_claim_that_trains_nothing_declares_no_settle():
    data = raw_claim("dapperfl-footprint")
    data["settle"] = dict(SETTLE)
    with pytest.raises(HetbenchError, match="'settle' is for claims whose runner trains"):
        parse_claim(data, "manifests/claims/dapperfl-footprint.yaml")
    assert check_settle({"evaluations": 3, "max_change": 0}, "x") == {"evaluations": 3, "max_change": 0.0}


def test_a_run_at_chance_or_with_a_non_finite_loss_is_diverged_never_settled(tmp_path):
    """A flat curve at chance says nothing was learnt: before, such runs counted as settled."""
    flat = {"round": [1, 2, 3, 4], "accuracy": [10.0, 10.2, 9.9, 10.1]}
    (tmp_path / "a").mkdir()
    for seed, (loss, acc) in enumerate([(2.3, 10.05), (2.3, 10.1)]):
        (tmp_path / "a" / f"fedavg-s{seed}.json").write_text(json.dumps(
            {"curves": flat, "split": {"num_classes": 10}, "final": {"loss": loss, "last_k": {"accuracy": acc}}}))
    (tmp_path / "a" / "fedvc-s0.json").write_text(json.dumps(
        {"curves": {"round": [1, 2, 3, 4], "accuracy": [70.0, 70.5, 69.5, 70.0]}, "split": {"num_classes": 10},
         "final": {"loss": "NaN", "last_k": {"accuracy": 70.0}}}).replace('"NaN"', "NaN"))
    (tmp_path / "a" / "fedir-s0.json").write_text(json.dumps(
        {"curves": {"round": [1, 2, 3, 4], "accuracy": [70.0, 70.5, 69.5, 70.0]}, "split": {"num_classes": 10},
         "final": {"loss": 0.9, "last_k": {"accuracy": 70.0}}}))
    report = settling_report(tmp_path, SETTLE)
    assert report["conditions"]["a/fedavg"]["settled"] is False and report["conditions"]["a/fedavg"]["diverged"] == 2
    assert report["conditions"]["a/fedvc"]["settled"] is False and report["conditions"]["a/fedir"]["settled"] is True
    assert report["diverged"]["a/fedavg-s0.json"].startswith("at chance") and "nan" in report["diverged"]["a/fedvc-s0.json"]
    assert "a/fedir-s0.json" not in report["unsettled"] and "a/fedavg-s1.json" in report["unsettled"]
