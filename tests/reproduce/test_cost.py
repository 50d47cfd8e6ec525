"""What a claim costs before it runs: workloads that count the runs the claim trains, timings of its
models on this machine, ``--dry-run`` and the refusal of ``--full`` on a CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetbench.reproduce.claims import claim_ids, load_claim
from hetbench.reproduce.cost import Timing, Workload, estimate, federated_workload
from hetbench.reproduce.runners import RUNNERS

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "claims" / "quick-a" / "claims.json"


def test_every_training_claim_lists_its_runs_as_the_committed_quick_run_trained_them():
    doc = json.loads(COMMITTED.read_text())
    for record in doc["claims"]:
        claim = load_claim(record["id"])
        runner = RUNNERS[claim.runner]
        work = runner.workloads(claim.settings["quick"], record["seeds"])
        if not runner.trains:
            assert work == [], claim.id
            continue
        assert sum(w.runs for w in work) == record["runs"]["needed"] <= record["runs"]["done"], claim.id
        if record["runs"]["done"] > record["runs"]["needed"]:  # the runs at a rate that diverged and was left
            assert any(record["facts"]["evaluation_fallbacks"].values()), claim.id
        assert len(record["settling"]["runs"]) <= record["runs"]["needed"], claim.id  # tuning runs are not judged
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


def test_the_estimate_counts_each_runs_fixed_cost_client_steps_and_evaluated_examples():
    timings = {("digits-cnn", 16, 1, 10, 20, 4, "fedavg", 1): Timing(client_step_seconds=0.01, round_seconds=0.02,
                                                                     run_seconds=0.5, eval_seconds_per_example=1e-4)}
    w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=1, train_examples=2000, eval_examples=1000,
                 clients_per_round=4, rounds=5)
    one = estimate([w], "cpu", timings=timings)
    assert one == pytest.approx(0.5 + 5 * 0.02 + 100 * 0.01 + 1000 * 1e-4)
    assert estimate([w, w], "cpu", timings=timings) == pytest.approx(2 * one)
    ragged = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=3, train_examples=2010, eval_examples=0,
                      clients_per_round=4)  # rounds 0: no per-round work counted
    assert estimate([ragged], "cpu", timings=timings) == pytest.approx(3 * (0.5 + 101 * 0.01))


def test_each_algorithm_of_a_workload_is_timed_with_its_own_training_and_epochs():
    """A workload shared by FedAvg and DapperFL (5 local epochs) costs each its own client steps at its own
    timing: DapperFL's pruning and regularised epochs are not priced as FedAvg's."""
    fast = Timing(client_step_seconds=0.01, round_seconds=0.0, run_seconds=0.0, eval_seconds_per_example=0.0)
    slow = Timing(client_step_seconds=0.03, round_seconds=0.0, run_seconds=0.0, eval_seconds_per_example=0.0)
    base = ("digits-cnn", 16, 1, 10, 20, 4)
    timings = {(*base, "fedavg", 1): fast, (*base, "dapperfl", 5): slow}
    w = federated_workload("fedavg, dapperfl", {"rounds": 2, "clients_per_round": 4, "batch_size": 20,
                                                "model": "digits-cnn", "image_size": 16, "eval_every": 2},
                           runs=2, client_rows=100, test_rows=0, in_channels=1, num_classes=10,
                           algorithms=["fedavg", "dapperfl"])
    assert w.shares() == [("fedavg", 1, 800.0), ("dapperfl", 5, 4000.0)]
    # one run of each: FedAvg 800 examples (40 steps at 0.01 s), DapperFL 4,000 (200 steps at 0.03 s)
    assert estimate([w], "cpu", timings=timings) == pytest.approx(40 * 0.01 + 200 * 0.03)


def test_the_calibration_times_the_real_trainer_and_predicts_a_real_run():
    """The estimate of a run whose clients train more batches than the calibration's is within a factor 2
    of the same run's measured time (a bare model's timing was 5x too low on a GPU, where per-step work
    dominates)."""
    import time

    from hetbench.reproduce.cost import calibrate, calibration_data
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.simulation import run_training

    w = Workload("fedavg", "lenet", 28, 1, 10, 16, runs=1, train_examples=0, eval_examples=0, clients_per_round=4)
    t = calibrate(w, "cpu")
    assert t.client_step_seconds > 0 and t.round_seconds >= 0 and t.run_seconds >= 0
    assert t.eval_seconds_per_example > 0
    data = calibration_data(w, steps_per_client=10, seed=1)
    rounds = 6
    config = TrainConfig(rounds=rounds, clients_per_round=4, batch_size=16, lr=0.01, model="lenet", image_size=28,
                         eval_every=3, device="cpu")
    start = time.perf_counter()
    run_training(data, make_algorithm("fedavg"), config)
    measured = time.perf_counter() - start
    run = Workload("fedavg", "lenet", 28, 1, 10, 16, runs=1, train_examples=rounds * 4 * 10 * 16,
                   eval_examples=2 * 1024, clients_per_round=4, rounds=rounds)
    predicted = estimate([run], "cpu", timings={("lenet", 28, 1, 10, 16, 4): t})
    assert 0.5 < predicted / measured < 2, (predicted, measured)


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


def test_a_dry_run_reports_each_claims_estimate_as_soon_as_it_is_made():
    """``reproduce --full --dry-run`` printed nothing for 15 minutes on a loaded machine: the header
    comes before the first estimate, and each claim's line when it is made, in order."""
    from hetbench.reproduce import dry_run

    events = []
    device, costs = dry_run("dapperfl-footprint,hsu-geo-clients", "full",
                            on_start=lambda dev, ids: events.append(("start", dev, tuple(ids))),
                            on_claim=lambda cost: events.append(("claim", cost.id, len(events))))
    assert events[0] == ("start", device, ("dapperfl-footprint", "hsu-geo-clients"))
    assert [e[1] for e in events[1:]] == [c.id for c in costs] == ["dapperfl-footprint", "hsu-geo-clients"]
