"""dapperfl-domains: the definition validates, bad settings are one clear error, the per-domain comparison,
and the runner's measurements and facts on tiny settings (two one-round trainings)."""

from __future__ import annotations

import copy

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import load_claim, parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.runners.domains import compare, domain_accuracy
from claim_definitions import raw_claim

TINY = {"clients": 4, "fraction": 0.1, "seeds": [0],
        "train": {"model": "digits-cnn", "image_size": 8, "rounds": 1, "clients_per_round": 4, "local_epochs": 1,
                  "batch_size": 32, "lr": 0.05, "eval_every": 1, "last_k": 1},
        "published_fedavg": [95.89, 86.84, 78.39, 33.63], "published_dapperfl": [96.25, 86.30, 82.45, 37.26]}


def test_definition_validates():
    claim = load_claim("dapperfl-domains")
    assert [k.measure for k in claim.checks] == ["mean_gap", "domain_wins"]
    assert claim.settings["full"]["train"]["model"] == "resnet10" and claim.settings["full"]["train"]["rounds"] == 100


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(fraction=1.5), "'fraction' must be in (0, 1]"),
    (lambda s: s.update(clients=3), "'clients' must be at least 4"),
    (lambda s: s.update(published_fedavg=[95.89]), "'published_fedavg' needs Table 1's four domain accuracies"),
    (lambda s: s["train"].update(rounds=0), "settings.quick.train: rounds must be a positive number"),
    (lambda s: s.update(hyper={"dar_gamma": -1}), "settings.quick.hyper:"),
    (lambda s: s.update(split_seed=[0, 1]), "'split_seed' must list one seed"),
])
def test_bad_settings_are_one_clear_error(edit, message):
    data = copy.deepcopy(raw_claim("dapperfl-domains"))
    edit(data["settings"]["quick"])
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "x.yaml")
    assert str(exc.value).startswith("x.yaml: settings.quick") and message in str(exc.value)


def test_compare_pairs_domains_and_refuses_other_domains():
    assert compare({"a": 90.0, "b": 50.0, "c": 10.0}, {"a": 91.0, "b": 53.0, "c": 9.0}) == (1.0, 2)
    with pytest.raises(HetbenchError, match="scored other domains"):
        compare({"a": 1.0}, {"b": 1.0})
    with pytest.raises(HetbenchError, match="no per-domain accuracy"):
        domain_accuracy({"final": {"last_k": {"group_accuracy": {}}}})


def test_the_criteria_decide_from_the_numbers():
    gap = {"name": "greater_than", "threshold": 0, "min_effect": 1}
    assert evaluate(Measurement([[2.5, 3.0, 2.8]]), gap).verdict == "reproduced"
    assert evaluate(Measurement([[-4.0, -6.0, -5.0]]), gap).verdict == "not reproduced"
    assert evaluate(Measurement([[0.5, 3.0, 1.0, 2.5, 1.5]]), gap).verdict == "inconclusive"
    wins = {"name": "greater_than", "threshold": 2.5}
    assert evaluate(Measurement([[3.0, 3.0, 3.0]]), wins).verdict == "reproduced"
    assert evaluate(Measurement([[1.0, 0.0, 2.0, 1.0, 2.0]]), wins).verdict == "not reproduced"
    assert evaluate(Measurement([[1.0, 4.0, 2.0]]), wins).verdict == "inconclusive"


def facts_table1(facts):
    t = facts["published_table1"]
    return t["mean_gap"], t["wins"]


def test_runner_trains_both_algorithms_and_reports_every_domain(tmp_path):
    runner = RUNNERS["dapperfl_domains"]
    settings = runner.check_settings(copy.deepcopy(TINY), "tiny")
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    out = runner.run(settings, ctx)
    assert set(out.measurements) == {"mean_gap", "domain_wins"}
    gap, wins = out.measurements["mean_gap"], out.measurements["domain_wins"]
    assert len(gap.samples[0]) == 1 and 0 <= wins.samples[0][0] <= 4
    assert "Table 1: +1.88" in gap.labels[0] and wins.labels == ["domains won (Table 1: 3)"]
    assert facts_table1(out.facts) == (pytest.approx(1.8775), 3.0)
    facts = out.facts
    assert facts["domains"] == ["mnist", "mnistm", "syn", "usps"] and facts["seeds"] == [0]
    assert facts["test_examples"] == {"mnist": 100, "mnistm": 100, "syn": 100, "usps": 100}
    fed, dap = facts["fedavg_domain_accuracy"], facts["dapperfl_domain_accuracy"]
    assert gap.samples[0][0] == pytest.approx(sum(dap[g][0] - fed[g][0] for g in fed) / 4)
    assert sorted(p.name for p in ctx.runs.rglob("*.json")) == ["dapperfl-s0.json", "fedavg-s0.json"]
    for key in ("uncertainty", "metric", "train"):
        assert facts[key]
