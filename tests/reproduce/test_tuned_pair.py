"""scaffold-collapse's runner (tuned_pair): each algorithm's client learning rate is chosen on the tuning
split only, the measurement is the paired method - baseline difference at the chosen rates, the split is
the per-class Dirichlet the benchmarks use, and bad settings are one clear error naming the file."""

from __future__ import annotations

import copy
import json

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.runners.tuning import choose_step
from claim_definitions import raw_claim

CLAIM = "scaffold-collapse"

TINY = {
    "source": "builtin:digits", "clients": 6, "alpha": 0.5, "scheme": "class", "min_size": 10,
    "test_fraction": 0.2, "split_seed": 0, "tune_split_seed": 5, "tune_seeds": [9],
    "algorithms": ["fedavg", "scaffold"], "learning_rates": [0.02, 0.1],
    "train": {"model": "digits-cnn", "rounds": 2, "clients_per_round": 2, "batch_size": 32, "eval_every": 1,
              "last_k": 1},
}


def test_tiny_run_measures_the_paired_difference_at_the_rates_chosen_on_the_tuning_split(tmp_path):
    (tmp_path / "work").mkdir()
    runner = RUNNERS["tuned_pair"]
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", threads=1)
    out = runner.run(runner.check_settings(copy.deepcopy(TINY), "t"), ctx)
    m, facts = out.measurements["accuracy_gap"], out.facts
    acc = facts["accuracy"]
    assert m.samples[0] == pytest.approx([s - f for f, s in zip(acc["fedavg"], acc["scaffold"])]) and m.x == [0.5]
    for algo in ("fedavg", "scaffold"):  # each algorithm's rate is its own best on the tuning split
        tuned = facts["tuning_accuracy"][algo]
        assert set(tuned) == {"0.02", "0.1"}
        assert facts["chosen_lr"][algo] == choose_step([0.02, 0.1], [tuned["0.02"], tuned["0.1"]])
    assert facts["scheme"] == "class" and facts["client_sizes"]["min"] >= 10 and facts["server_lr"] == 1.0
    assert (facts["baseline"], facts["method"]) == ("fedavg", "scaffold") and facts["tune_seeds"] == [9]
    # the tuning runs stay in the scratch folder; the evaluation runs (the numbers) train at the chosen rates
    tune = list((tmp_path / "work" / "tuning").rglob("*.json"))
    runs = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("*.json")]
    assert len(tune) == 4 and all(p.name.endswith("-s9.json") for p in tune)
    assert len(runs) == 4 and {(d["algorithm"]["name"], d["config"]["lr"]) for d in runs} == {
        (a, facts["chosen_lr"][a]) for a in ("fedavg", "scaffold")}
    assert {d["config"]["seed"] for d in runs} == {0, 1}


def test_the_shipped_claim_expects_a_collapse_of_ten_points_and_tunes_on_another_split():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    assert claim.runner == "tuned_pair" and claim.checks[0].paper["values"] == [-36.86]
    for mode in ("quick", "full"):
        s = claim.settings[mode]
        assert (s["alpha"], s["scheme"], s["algorithms"]) == (0.5, "class", ["fedavg", "scaffold"])
        assert s["split_seed"] != s["tune_split_seed"]
    criterion = claim.checks[0].criterion
    assert evaluate(Measurement([[-37.0, -35.0, -36.5, -38.0, -36.0]]), criterion).verdict == "reproduced"
    assert evaluate(Measurement([[0.4, -0.6, 0.1, -0.2, 0.3]]), criterion).verdict == "not reproduced"
    assert evaluate(Measurement([[-2.0, -20.0, -9.0, -15.0, -4.0]]), criterion).verdict == "inconclusive"


@pytest.mark.parametrize("edit, message", [
    (lambda q: q.update(tune_split_seed=0), "settings.quick: 'tune_split_seed' must differ from 'split_seed'"),
    (lambda q: q.update(scheme="shards"), "settings.quick: 'scheme' must be one of client, class"),
    (lambda q: q.update(scheme="client"), "settings.quick: 'min_size' applies to scheme class only"),
    (lambda q: q.update(algorithms=["fedavg"]), "'algorithms' must name two algorithms"),
    (lambda q: q.update(algorithms=["fedavg", "central"]), "unknown federated algorithm 'central'"),
    (lambda q: q.update(algorithms=["fedavg", "scafold"]), "unknown federated algorithm 'scafold'"),
    (lambda q: q.update(learning_rates=[0.1, 0.01]), "'learning_rates' must be distinct and increasing"),
    (lambda q: q.update(alpha=0), "settings.quick: 'alpha' must be a positive number"),
    (lambda q: q["train"].update(lr=0.05), "settings.quick.train: 'lr' is not a setting of this claim"),
])
def test_bad_settings_are_one_clear_error(edit, message):
    data = copy.deepcopy(raw_claim(CLAIM))
    edit(data["settings"]["quick"])
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, f"manifests/claims/{CLAIM}.yaml")
    assert message in str(exc.value) and "\n" not in str(exc.value)
