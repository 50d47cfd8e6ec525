"""What a claim costs before it runs: workloads that count the runs the claim trains, timings of its
models on this machine, ``--dry-run`` and the refusal of ``--full`` on a CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetbench.reproduce.claims import claim_ids, load_claim
from hetbench.reproduce.cost import Timing, Workload, cpu_parallelism, estimate, federated_workload
from hetbench.reproduce.runners import RUNNERS

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "claims" / "quick" / "claims.json"


def test_every_training_claim_lists_its_runs_as_the_committed_quick_run_trained_them():
    doc = json.loads(COMMITTED.read_text())
    for record in doc["claims"]:
        claim = load_claim(record["id"])
        runner = RUNNERS[claim.runner]
        work = runner.workloads(claim.settings["quick"], record["seeds"])
        if not runner.trains:
            assert work == [], claim.id
            continue
        assert sum(w.runs for w in work) == len(record["settling"]["runs"]), claim.id
        for w in work:
            assert w.train_examples > 0 and w.eval_examples > 0 and w.batch_size > 0, (claim.id, w)


@pytest.mark.parametrize("claim_id", [c for c in claim_ids() if RUNNERS[load_claim(c).runner].trains])
def test_full_mode_does_more_training_than_quick_mode(claim_id):
    claim = load_claim(claim_id)
    runner = RUNNERS[claim.runner]
    seeds = [0, 1, 2, 3, 4]
    quick = runner.workloads(claim.settings["quick"], seeds)
    full = runner.workloads(claim.settings["full"], seeds)
    assert sum(w.runs * w.train_examples for w in full) > sum(w.runs * w.train_examples for w in quick)


def test_a_federated_workload_counts_rounds_clients_epochs_and_evaluations():
    train = {"rounds": 15, "clients_per_round": 4, "local_epochs": 2, "eval_every": 5, "batch_size": 16,
             "model": "digits-cnn", "image_size": 32}
    w = federated_workload("fedavg", train, runs=5, client_rows=105, test_rows=1155, in_channels=3, num_classes=7)
    assert (w.runs, w.train_examples, w.eval_examples, w.clients_per_round) == (5, 15 * 4 * 2 * 105, 3 * 1155, 4)
    ragged = federated_workload("x", {**train, "rounds": 16}, 1, 10, 100, 1, 10)
    assert ragged.eval_examples == 4 * 100  # rounds 5, 10, 15 and the last


def test_the_estimate_scales_with_the_work_and_divides_over_the_cores():
    timings = {("digits-cnn", 16, 1, 10, 20, 1): Timing(step_seconds=0.01, batch=20, eval_seconds_per_example=1e-4)}
    w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=1, train_examples=2000, eval_examples=1000,
                 clients_per_round=4)
    one = estimate([w], "cpu", cores=1, timings=timings)
    assert one == pytest.approx(100 * 0.01 + 1000 * 1e-4)
    assert estimate([w, w], "cpu", cores=1, timings=timings) == pytest.approx(2 * one)
    two = estimate([w], "cpu", cores=2, timings=timings)
    assert two == pytest.approx(100 * 0.01 / 2 + 0.1)
    assert [cpu_parallelism(k, 2) for k in (1, 2, 3, 5)] == [1, 2, 1.5, 5 / 3]


def test_a_model_is_timed_on_this_machine():
    from hetbench.reproduce.cost import calibrate

    w = Workload("fedavg", "lenet", 28, 1, 10, 32, runs=1, train_examples=32, eval_examples=32)
    t = calibrate(w, "cpu", budget_s=0.05)
    assert t.batch == 32 and 0 < t.step_seconds < 10 and 0 < t.eval_seconds_per_example < t.step_seconds


def test_dry_run_prints_each_claims_estimate_and_writes_nothing(run_cli, tmp_path):
    code, out, err = run_cli("reproduce", "--quick", "--dry-run", "--claims", "hsu-label-skew,dapperfl-footprint",
                             "--out", tmp_path / "o")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("quick mode on cpu: estimated training time")
    assert lines[1].split()[0] == "hsu-label-skew" and "30 training runs" in lines[1]
    assert lines[2].split()[0] == "dapperfl-footprint" and "no federated training" in lines[2]
    assert lines[3].split()[0] == "total"
    assert not (tmp_path / "o").exists()


def test_full_mode_on_a_cpu_is_refused_with_the_estimate_unless_allowed(run_cli, tmp_path):
    code, _, err = run_cli("reproduce", "--full", "--device", "cpu", "--quiet", "--claims",
                           "hsu-label-skew,dapperfl-footprint", "--out", tmp_path / "o")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("hetbench: error: --full trains on the CPU here (--device cpu): about ")
    assert "hsu-label-skew " in err and "--allow-cpu" in err and "dapperfl-footprint" not in err
    assert not (tmp_path / "o").exists()
    # claims that train nothing run in full mode anywhere
    code, _, err = run_cli("reproduce", "--full", "--device", "cpu", "--quiet", "--claims", "dapperfl-footprint",
                           "--out", tmp_path / "o")
    assert code == 0, err
    # --allow-cpu passes the device check: the next check (the output folder exists) is what stops it
    code, _, err = run_cli("reproduce", "--full", "--allow-cpu", "--device", "cpu", "--claims", "hsu-label-skew",
                           "--out", tmp_path / "o")
    assert code == 2 and "--full trains" not in err and "exists" in err, err
