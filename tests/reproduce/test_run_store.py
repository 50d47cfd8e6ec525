"""The run store of ``hetbench reproduce``: runs keyed by content, kept as they finish, reused when asked
again; ``--budget`` runs what fits and the same command continues; a process killed at any moment loses
at most the run in flight, and the resumed output's claims.json equals an uninterrupted one's (less wall
times); corrupt or foreign records and folders are refused in one line."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce import run_inputs as run_module  # where the claims are loaded and checked
from hetbench.reproduce.claims import load_claim
from hetbench.reproduce.store import MARKER, RunStore, run_key

#: hsu-fedavgm at toy scale: 2 rates x 2 algorithms x 1 tuning seed + 2 algorithms x 3 seeds = 10 runs
TINY = {
    "source": "builtin:digits", "clients": 6, "alpha": 0.1, "test_fraction": 0.2, "split_seed": 0,
    "tune_split_seed": 5, "tune_seeds": [9], "seeds": [0, 1, 2], "server_momentum": 0.9,
    "effective_steps": [0.05, 0.2],
    "train": {"model": "digits-cnn", "rounds": 2, "clients_per_round": 2, "batch_size": 32, "eval_every": 1,
              "last_k": 1},
}
RUNS = 10


def tiny_claim():
    claim = load_claim("hsu-fedavgm")
    return dataclasses.replace(claim, settings={**claim.settings, "quick": copy.deepcopy(TINY)})


@pytest.fixture
def tiny(monkeypatch):
    real = run_module.load_claim
    monkeypatch.setattr(run_module, "load_claim", lambda i: tiny_claim() if i == "hsu-fedavgm" else real(i))


def claims_doc(out: Path) -> dict:
    """claims.json less what depends on the clock: wall times (the invocation's, and its runs' training)."""
    doc = json.loads((out / "claims.json").read_text())
    for c in doc["claims"]:
        c.pop("seconds")
        c.get("runs", {}).pop("train_seconds", None)
    return doc


def stored(folder: Path) -> list[Path]:
    return sorted((folder / "hsu-fedavgm").glob("*.json"))


def test_a_record_comes_back_and_a_foreign_or_corrupt_one_is_refused(tmp_path):
    store = RunStore.open(tmp_path / "s")
    store.begin_claim("c")
    a, b = {"seed": 0}, {"seed": 1}
    assert store.get(a) is None and not (tmp_path / "s").exists()  # nothing written before the first record
    result = {"final": {"accuracy": 1.0, "last_k": {"accuracy": 1.0}}, "curves": {"round": [1], "accuracy": [1.0]},
              "groups": {}, "split": {"fingerprint": "ab", "path": "/tmp/scratch"}}
    store.put(a, {**result, "clients": [1] * 500}, seconds=2.0)
    record = json.loads(store.path(run_key("c", a)).read_text())
    assert "clients" not in record["result"] and record["identity"] == a and record["machine"]["host"]
    assert record["result"]["split"] == {"fingerprint": "ab"}  # no local path in a record
    assert store.get(a) == {**result, "split": {"fingerprint": "ab"}} and (tmp_path / "s" / MARKER).is_file()
    # a record copied under another run's name is foreign: refused, never used
    store.path(run_key("c", b)).write_text(store.path(run_key("c", a)).read_text())
    with pytest.raises(HetbenchError, match=r"is not a run record hetbench wrote for this run") as exc:
        store.get(b)
    assert "\n" not in str(exc.value)
    store.path(run_key("c", a)).write_text('{"format": "hetbench-run/1", "key": ')  # cut short
    with pytest.raises(HetbenchError, match="corrupt or foreign"):
        store.get(a)
    # a record without what the verdicts read (an older schema, a hand edit) is refused too
    store.put(a, {"final": {"accuracy": 1.0}}, seconds=1.0)
    with pytest.raises(HetbenchError, match="corrupt or foreign"):
        store.get(a)


def test_a_claim_takes_a_run_of_the_same_identity_from_a_claim_it_borrows_from_and_no_other(tmp_path):
    store = RunStore.open(tmp_path / "s")
    result = {"final": {"accuracy": 1.0, "last_k": {"accuracy": 1.0}}, "curves": {"round": [1], "accuracy": [1.0]},
              "groups": {}}
    store.begin_claim("dapperfl-domains")
    store.put({"seed": 0}, result, seconds=50.0)
    store.begin_claim("other")
    assert store.get({"seed": 0}) is None  # a claim that borrows nothing trains its own
    store.begin_claim("dapperfl-ablation", borrows=("dapperfl-domains",))
    assert store.get({"seed": 1}) is None  # another identity is not there
    assert store.get({"seed": 0}) == result and (store.done, store.trained) == (1, 0)
    copied = json.loads(store.path(run_key("dapperfl-ablation", {"seed": 0})).read_text())
    assert copied["borrowed_from"] == "dapperfl-domains" and copied["claim"] == "dapperfl-ablation"
    assert copied["seconds"] == 50.0 and copied["identity"] == {"seed": 0}
    store.begin_claim("dapperfl-ablation")  # the copy is the claim's own now: found without borrowing
    assert store.get({"seed": 0}) == result


def test_a_run_that_diverged_is_kept_as_diverged_and_not_trained_again(tmp_path, monkeypatch):
    """A grid point that diverges (hsu-fedavgm's largest rates) is stored as such: a resumed run raises
    the same TrainingDiverged without training, so resuming loses nothing and chooses the same rates."""
    from hetbench.sweep import plan as plan_module
    from hetbench.reproduce import reproduce

    real_claim = run_module.load_claim
    settings = {**copy.deepcopy(TINY), "effective_steps": [0.05, 50.0]}  # 50: FedAvg at client rate 50 diverges
    claim = dataclasses.replace(load_claim("hsu-fedavgm"),
                                settings={**load_claim("hsu-fedavgm").settings, "quick": settings})
    monkeypatch.setattr(run_module, "load_claim", lambda i: claim if i == "hsu-fedavgm" else real_claim(i))
    first = reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True)
    records = [json.loads(p.read_text()) for p in stored(tmp_path / "o" / "runs")]
    assert any("diverged" in r["result"] for r in records)
    trained = []
    real_train = plan_module.Plan._train
    monkeypatch.setattr(plan_module.Plan, "_train", lambda self, *a, **k: trained.append(1) or real_train(self, *a, **k))
    again = reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True, overwrite=True)
    assert trained == [] and again.doc["claims"][0]["facts"] == first.doc["claims"][0]["facts"]


def test_a_folder_that_is_not_a_store_is_refused_before_anything_is_written(tmp_path, run_cli):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint", "--store", other, "--out", tmp_path / "o")
    assert code == 2 and "--store" in err and "is not a run store hetbench wrote" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("budget", ["0", "-5", "nan", "inf"])
def test_a_budget_that_is_not_a_positive_number_is_one_line(tmp_path, run_cli, budget):
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint", "--budget", budget, "--out", tmp_path / "o")
    assert code == 2 and "--budget must be a positive number of seconds" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_an_unknown_claim_id_is_one_line_and_writes_nothing(tmp_path, run_cli):
    code, _, err = run_cli("reproduce", "--claims", "hsu-nonsense", "--out", tmp_path / "o")
    assert code == 2 and "hsu-nonsense" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_budget_runs_what_fits_and_the_same_command_continues_to_the_uninterrupted_result(tmp_path, tiny,
                                                                                        monkeypatch):
    from hetbench.reproduce import reproduce
    from hetbench.reproduce.store import BudgetSpent

    whole = reproduce("hsu-fedavgm", out=tmp_path / "whole", quiet=True)
    assert len(stored(tmp_path / "whole" / "runs")) == RUNS
    record = whole.doc["claims"][0]
    assert record["runs"]["done"] == record["runs"]["needed"] == RUNS

    real = RunStore.check_budget

    def four_then_stop(self):  # the budget "runs out" after four runs have trained
        if self.trained >= 4:
            raise BudgetSpent(self.claim)
        real(self)

    monkeypatch.setattr(RunStore, "check_budget", four_then_stop)
    part = reproduce("hsu-fedavgm", out=tmp_path / "part", quiet=True, budget=3600)
    claim = part.doc["claims"][0]
    assert claim["verdict"] == "not run" and claim["runs"]["done"] == 4 and claim["runs"]["needed"] == RUNS
    assert "4 of 10 runs" in claim["checks"][0]["reason"] and "(4 of 10 runs)" in (tmp_path / "part" / "claims.md").read_text()
    monkeypatch.setattr(RunStore, "check_budget", real)
    resumed = reproduce("hsu-fedavgm", out=tmp_path / "part", quiet=True, overwrite=True)
    assert resumed.doc["claims"][0]["runs"]["done"] == RUNS
    assert claims_doc(tmp_path / "part") == claims_doc(tmp_path / "whole")
    # the resumed command trained only the six missing runs: the four first records are untouched
    assert len(stored(tmp_path / "part" / "runs")) == RUNS


def test_a_real_budget_lets_no_run_start_once_spent(tmp_path, tiny):
    from hetbench.reproduce import reproduce

    done = reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True, budget=1e-9)
    claim = done.doc["claims"][0]
    assert claim["verdict"] == "not run" and claim["runs"] == {**claim["runs"], "done": 0, "needed": RUNS}
    assert not (tmp_path / "o" / "runs").exists()


KILLED = """
import sys, dataclasses, copy
sys.path.insert(0, {tests!r})
from reproduce.test_run_store import tiny_claim
from hetbench.reproduce import run_inputs as run_module
run_module.load_claim = lambda i: tiny_claim()
from hetbench.reproduce import reproduce
reproduce("hsu-fedavgm", out={out!r}, quiet=True)
"""


@pytest.mark.slow
def test_a_process_killed_mid_run_loses_at_most_the_run_in_flight(tmp_path, tiny):
    """SIGKILL once three runs are stored: the same command (no --overwrite: an interrupted output) keeps
    them, trains the rest, and writes the uninterrupted claims.json."""
    from hetbench.reproduce import reproduce

    out = tmp_path / "killed"
    code = KILLED.format(tests=str(Path(__file__).parents[1]), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[2], start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while len(stored(out / "runs")) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    kept = {p.name: p.read_bytes() for p in stored(out / "runs")}
    assert 3 <= len(kept) < RUNS and not (out / "claims.json").exists()
    reproduce("hsu-fedavgm", out=out, quiet=True)  # continues without --overwrite
    assert all((out / "runs" / "hsu-fedavgm" / name).read_bytes() == data for name, data in kept.items())
    reproduce("hsu-fedavgm", out=tmp_path / "whole", quiet=True)
    assert claims_doc(out) == claims_doc(tmp_path / "whole")


def test_an_output_whose_budget_ran_out_continues_without_overwrite(tmp_path, tiny, monkeypatch):
    """The documented flow: `--budget` now, the same command later (no --overwrite), until every run is in."""
    from hetbench.reproduce import reproduce
    from hetbench.reproduce.store import BudgetSpent

    real = RunStore.check_budget
    monkeypatch.setattr(RunStore, "check_budget",
                        lambda self: (_ for _ in ()).throw(BudgetSpent(self.claim)) if self.trained >= 3 else real(self))
    reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True, budget=3600)
    monkeypatch.setattr(RunStore, "check_budget", real)
    done = reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True)  # no overwrite: it was not finished
    assert done.doc["claims"][0]["runs"]["done"] == RUNS
    with pytest.raises(HetbenchError, match="already exists"):  # finished: now it takes --overwrite
        reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True)
    assert not list((tmp_path / "o").glob(".work-*")) and not (tmp_path / "o" / ".hetbench-reproduce").exists()


def test_a_store_inside_the_output_other_than_its_runs_folder_is_refused(tmp_path, run_cli):
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint", "--store", tmp_path / "o" / "plots",
                           "--out", tmp_path / "o")
    assert code == 2 and "inside it, where reports are replaced" in err and not (tmp_path / "o").exists()


def test_scratch_of_a_killed_process_is_removed_and_the_output_continues(tmp_path, tiny):
    """A process killed before any run was stored leaves only its marked scratch: the same command
    accepts the folder and removes the dead process's scratch."""
    import socket

    from hetbench.reproduce import reproduce

    out = tmp_path / "o"
    (out / ".work-dead").mkdir(parents=True)
    (out / ".work-dead" / ".hetbench-pid").write_text(f"999999999 {socket.gethostname()}")
    (out / ".hetbench-reproduce").write_text('{"format": "hetbench-claims-in-progress/1"}')
    reproduce("dapperfl-footprint", out=out, quiet=True)
    assert not (out / ".work-dead").exists() and (out / "claims.json").is_file()


def test_prune_store_removes_only_the_records_a_claim_no_longer_reads(tmp_path, tiny, monkeypatch):
    """New settings train new runs beside the old ones; --prune-store then keeps exactly what the claim read,
    and never prunes a claim that --budget stopped (its unread records may be the next runs' neighbours)."""
    from hetbench.reproduce import reproduce
    from hetbench.reproduce.store import BudgetSpent

    reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True)
    first = stored(tmp_path / "o" / "runs")
    longer = copy.deepcopy(TINY)
    longer["train"]["rounds"] = 3
    changed = dataclasses.replace(load_claim("hsu-fedavgm"), settings={**load_claim("hsu-fedavgm").settings,
                                                                       "quick": longer})
    monkeypatch.setattr(run_module, "load_claim", lambda i: changed)

    def stop_at_once(self):
        raise BudgetSpent(self.claim)

    real = RunStore.check_budget
    monkeypatch.setattr(RunStore, "check_budget", stop_at_once)
    reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True, overwrite=True, budget=3600, prune_store=True)
    assert stored(tmp_path / "o" / "runs") == first  # stopped by the budget: nothing pruned
    monkeypatch.setattr(RunStore, "check_budget", real)
    done = reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True, overwrite=True, prune_store=True)
    now = stored(tmp_path / "o" / "runs")
    assert len(now) == RUNS and not set(now) & set(first)  # the old settings' records are gone
    assert done.doc["claims"][0]["runs"]["done"] == RUNS
    again = reproduce("hsu-fedavgm", out=tmp_path / "o", quiet=True, overwrite=True, prune_store=True)
    assert stored(tmp_path / "o" / "runs") == now and again.doc["claims"][0]["runs"]["done"] == RUNS
