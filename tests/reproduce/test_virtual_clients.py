"""hsu-fedvc-fedir's runner: splits of growing client-size imbalance with label skew, FedVC's and FedIR's
paired differences from FedAvg, facts saying what each number rests on, and bad settings as one clear
error naming the file."""

from __future__ import annotations

import copy

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners.base import Context
from hetbench.reproduce.runners.virtual_clients import MIN_CLIENT_ROWS, VirtualClientsRunner, imbalanced_sizes
from claim_definitions import raw_claim

TINY = {
    "source": "builtin:digits", "clients": 6, "alpha": 0.5, "size_sigmas": [0, 2], "test_fraction": 0.2,
    "split_seed": 0, "vc_size": 100,
    "train": {"model": "digits-cnn", "rounds": 2, "clients_per_round": 2, "batch_size": 32, "lr": 0.05,
              "eval_every": 1, "last_k": 1},
}


def test_tiny_run_measures_paired_differences_over_the_imbalance_grid(tmp_path):
    (tmp_path / "work").mkdir()
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", threads=1)
    runner = VirtualClientsRunner()
    out = runner.run(runner.check_settings(copy.deepcopy(TINY), "t"), ctx)
    gain, facts = out.measurements["fedvc_gain_vs_imbalance"], out.facts
    assert gain.x == [0.0, 2.0] and [len(s) for s in gain.samples] == [2, 2]
    for i in range(2):
        assert gain.samples[i] == pytest.approx([v - a for a, v in zip(facts["fedavg_accuracy"][i],
                                                                        facts["fedvc_accuracy"][i])])
    assert out.measurements["fedvc_minus_fedavg"].samples == [gain.samples[-1]]
    fedir = out.measurements["fedir_minus_fedavg"]
    assert fedir.samples[0] == pytest.approx([v - a for a, v in zip(facts["fedavg_accuracy"][-1],
                                                                     facts["fedir_accuracy"])])
    # equal sizes at sigma 0, unequal at sigma 2; the labels give the imbalance
    splits = facts["splits"]
    assert splits[0]["size_cv"] < 0.05 < splits[1]["size_cv"]
    assert splits[1]["train_rows_max"] > splits[0]["train_rows_max"]
    assert gain.labels[1].startswith("sigma=2 (cv ")
    assert facts["test_examples"] and facts["seeds"] == [0, 1] and "95% t interval" in facts["uncertainty"]
    assert "last 1" in facts["metric"] and facts["vc_size"] == 100
    names = sorted(p.name for p in (tmp_path / "runs").rglob("*.json"))
    assert sum(n.startswith("fedavg-s") for n in names) == 4 and sum(n.startswith("fedvc-") for n in names) == 4
    assert sum(n.startswith("fedir-s") for n in names) == 2


def test_imbalanced_sizes_keep_the_clients_and_grow_with_sigma():
    flat, mid, wide = (imbalanced_sizes(5000, 20, s, 0) for s in (0.0, 1.0, 2.0))
    assert len(set(flat)) == 1 and sum(mid) == sum(wide) == 5000
    assert min(wide) >= MIN_CLIENT_ROWS and max(wide) > max(mid) > max(flat)
    assert mid.index(max(mid)) == wide.index(max(wide))  # the same client is the largest
    with pytest.raises(HetbenchError, match="cannot give 20 clients"):
        imbalanced_sizes(50, 20, 1.0, 0)


@pytest.mark.parametrize("edit, message", [
    (lambda q: q.update(size_sigmas=[0]), "settings.quick: 'size_sigmas' must list at least two distinct increasing"),
    (lambda q: q.update(size_sigmas=[2, 1]), "'size_sigmas' must list at least two distinct increasing"),
    (lambda q: q.update(size_sigmas=[0, -1]), "'size_sigmas' must list at least two distinct increasing"),
    (lambda q: q.pop("split_seed"), "settings.quick: missing setting 'split_seed'"),
    (lambda q: q.update(vc_size=0), "settings.quick: 'vc_size' must be a positive integer"),
    (lambda q: q.update(alpha=-1), "settings.quick: 'alpha' must be a positive number"),
    (lambda q: q["train"].update(rounds=0), "settings.quick.train: rounds must be a positive number"),
])
def test_bad_settings_are_one_clear_error(edit, message):
    data = copy.deepcopy(raw_claim("hsu-fedvc-fedir"))
    edit(data["settings"]["quick"])
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "manifests/claims/x.yaml")
    assert str(exc.value).startswith("manifests/claims/x.yaml: ") and message in str(exc.value)


def test_the_declared_criteria_decide_from_the_numbers():
    checks = {c["measure"]: c["criterion"] for c in raw_claim("hsu-fedvc-fedir")["checks"]}
    grows = checks["fedvc_gain_vs_imbalance"]
    rising = [[0.1, -0.2, 0.0, 0.3, -0.1], [1.5, 2.5, 2.0, 2.2, 1.8], [4.0, 5.0, 4.4, 4.7, 4.2]]
    assert evaluate(Measurement(rising, x=[0, 1, 2]), grows).verdict == "reproduced"
    flat = [[0.0, 0.2, 0.1, 0.3, 0.1], [0.5, 0.4, 0.3, 0.6, 0.5], [0.6, 0.9, 0.7, 0.8, 0.6]]
    assert evaluate(Measurement(flat, x=[0, 1, 2]), grows).verdict == "not reproduced"
    not_worse = checks["fedvc_minus_fedavg"]
    assert evaluate(Measurement([[-0.2, 0.3, 0.1]]), not_worse).verdict == "reproduced"
    assert evaluate(Measurement([[-3.0, -4.0, -3.5]]), not_worse).verdict == "not reproduced"
    assert checks["fedir_minus_fedavg"] == not_worse
