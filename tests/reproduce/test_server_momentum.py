"""hsu-fedavgm's runner: the tuned step is chosen on the tuning split only, the measurement is the paired
FedAvgM - FedAvg difference at the chosen steps, the facts say what each number rests on, and bad settings
are one clear error naming the file."""

from __future__ import annotations

import copy
import json

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners.base import Context
from hetbench.reproduce.runners.server_momentum import ServerMomentumRunner, momentum_hyper
from hetbench.reproduce.runners.tuning import choose_step
from claim_definitions import raw_claim

TINY = {
    "source": "builtin:digits", "clients": 6, "alpha": 0.1, "test_fraction": 0.2, "split_seed": 0,
    "tune_split_seed": 5, "tune_seeds": [9], "server_momentum": 0.9, "effective_steps": [0.05, 0.2],
    "train": {"model": "digits-cnn", "rounds": 2, "clients_per_round": 2, "batch_size": 32,
              "eval_every": 1, "last_k": 1},
}


def test_tiny_run_measures_the_paired_difference_at_the_steps_chosen_on_the_tuning_split(tmp_path):
    (tmp_path / "work").mkdir()
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", threads=1)
    out = ServerMomentumRunner().run(ServerMomentumRunner().check_settings(copy.deepcopy(TINY), "t"), ctx)
    m, facts = out.measurements["fedavgm_gain"], out.facts
    assert len(m.samples) == 1 and len(m.samples[0]) == 2 and m.x == [0.1]
    assert m.samples[0] == pytest.approx([b - a for a, b in zip(facts["fedavg_accuracy"], facts["fedavgm_accuracy"])])
    # the chosen step is the tuning split's best (mean over the tuning seeds), for each algorithm
    for algo in ("fedavg", "fedavgm"):
        tuned = facts["tuning_accuracy"][algo]
        assert set(tuned) == {"0.05", "0.2"}
        assert facts["chosen_step"][algo] == choose_step([0.05, 0.2], [tuned["0.05"], tuned["0.2"]])
    # Hsu et al.'s convention: server rate 1, the client rate eta = eta_eff (1 - beta)
    assert facts["client_lr"]["fedavgm"] == pytest.approx(facts["chosen_step"]["fedavgm"] * 0.1)
    assert facts["client_lr"]["fedavg"] == facts["chosen_step"]["fedavg"] and facts["server_lr"] == 1.0
    assert facts["chosen_on_grid_edge"] == ["fedavg", "fedavgm"]  # a grid of two has no inside
    assert facts["test_examples"] > 0 and facts["tune_test_examples"] > 0 and facts["seeds"] == [0, 1]
    assert facts["tune_seeds"] == [9] and "95% t interval" in facts["uncertainty"] and "last 1" in facts["metric"]
    # the runs: every grid step on the tuning split (seed 9 only), the chosen steps only on the evaluation split
    # results folders are eta_eff-<rate>/<split name>-<fingerprint[:12]>; split names end with their split seed.
    # The tuning runs stay in the scratch folder: only the runs the numbers rest on are judged for settling
    runs = [p.relative_to(tmp_path / "runs") for p in (tmp_path / "runs").rglob("*.json")]
    tuning = tmp_path / "work" / "tuning"
    tune = [p.relative_to(tuning) for p in tuning.rglob("*.json")]
    evaluation = [p for p in runs if p.parent.name.rsplit("-", 1)[0].endswith("-s0")]
    assert len(tune) == 4 and all(p.name.endswith("-s9.json") for p in tune)
    assert {p.parts[0] for p in tune} == {"eta_eff-0.05", "eta_eff-0.2"}
    assert len(evaluation) == len(runs) == 4 and {p.name[-8:] for p in evaluation} == {"-s0.json", "-s1.json"}
    docs = [json.loads(p.read_text()) for p in [*(tmp_path / "runs").rglob("*.json"), *tuning.rglob("*.json")]]
    momentum = {d["algorithm"]["params"].get("server_momentum", 0.0) for d in docs}
    assert momentum == {0.0, 0.9}
    for d in docs:  # every run: server rate 1, the client at eta_eff (1 - beta) of a grid rate
        beta = d["algorithm"]["params"].get("server_momentum", 0.0)
        assert d["algorithm"]["params"]["server_lr"] == 1.0
        assert min(abs(d["config"]["lr"] / (1 - beta) - s) for s in (0.05, 0.2)) < 1e-9
    # the verdict is the declared criterion's on these numbers
    criterion = raw_claim("hsu-fedavgm")["checks"][0]["criterion"]
    assert evaluate(m, criterion).verdict == evaluate(Measurement([list(m.samples[0])]), criterion).verdict


@pytest.mark.parametrize("edit, message", [
    (lambda q: q.update(tune_split_seed=0), "settings.quick: 'tune_split_seed' must differ from 'split_seed'"),
    (lambda q: q.pop("tune_split_seed"), "settings.quick: missing setting 'tune_split_seed'"),
    (lambda q: q.update(server_momentum=1.0), "settings.quick: 'server_momentum' must be in (0, 1)"),
    (lambda q: q.update(effective_steps=[1, 0.3162]), "'effective_steps' must be distinct and increasing"),
    (lambda q: q.update(effective_steps=[0, 1]), "'effective_steps' must be a non-empty list of positive numbers"),
    (lambda q: q.update(alpha=0), "settings.quick: 'alpha' must be a positive number"),
    (lambda q: q["train"].update(server_lr=1.0), "settings.quick.train: unknown option 'server_lr'"),
    (lambda q: q["train"].update(lr=0.05), "settings.quick.train: 'lr' is not a setting of this claim"),
])
def test_bad_settings_are_one_clear_error(edit, message):
    data = copy.deepcopy(raw_claim("hsu-fedavgm"))
    edit(data["settings"]["quick"])
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "manifests/claims/x.yaml")
    assert str(exc.value).startswith("manifests/claims/x.yaml: ") and message in str(exc.value)


def test_an_effective_rate_is_hsus_eta_over_one_minus_beta_with_server_rate_one():
    """ECCV 2020 App. A.1: eta_eff = eta / (1 - beta), eta the client rate, the server rate 1. Before, the
    client rate was fixed and the server rate moved (the other convention, another optimiser)."""
    for step in (0.01, 0.0316, 0.1):
        (avg, lr_avg), (avgm, lr_avgm) = momentum_hyper("fedavg", step, 0.9), momentum_hyper("fedavgm", step, 0.9)
        assert avg["server_lr"] == avgm["server_lr"] == 1.0
        assert lr_avg == step and lr_avgm / (1 - avgm["server_momentum"]) == pytest.approx(step)
    assert choose_step([1.0, 2.0, 3.0], [10.0, 30.0, 20.0]) == 2.0


def test_the_declared_criterion_decides_from_the_numbers():
    criterion = raw_claim("hsu-fedavgm")["checks"][0]["criterion"]
    assert evaluate(Measurement([[5.0, 6.0, 7.0]]), criterion).verdict == "reproduced"
    assert evaluate(Measurement([[0.2, 0.4, 0.3, 0.5, 0.1]]), criterion).verdict == "not reproduced"  # surely below 1
    assert evaluate(Measurement([[0.5, 3.0, 1.5, 2.5, 1.0]]), criterion).verdict == "inconclusive"
    assert evaluate(Measurement([[-2.0, 0.5, -1.0, -0.5, -1.5]]), criterion).verdict == "not reproduced"
