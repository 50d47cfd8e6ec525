"""Threads that never oversubscribe (issue 27): concurrent runs share the cores, and the runs whose bits
depend on the thread count (the centralised run, models with dropout) do not follow the machine's load."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hetbench.cores import RunRegistration, available_cores, share_of_cores


def test_live_runs_are_counted_and_stale_entries_removed(tmp_path):
    holder = _holder(tmp_path)  # another process holding a registration: a live run
    try:
        (tmp_path / "12345-dead.run").write_text("")  # left by a run that died: no lock on it
        with RunRegistration(tmp_path) as me:
            assert me.live_runs() == 2  # this one and the holder
            assert not (tmp_path / "12345-dead.run").exists()
            assert share_of_cores(2, me.live_runs()) == 1
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert RunRegistration(tmp_path).live_runs() == 1  # unregistered: itself only; the killed holder's lock is gone
    assert not list(tmp_path.glob("*.run"))


def _holder(folder):
    """Another process registered as a live run in ``folder`` (stands for a concurrent training run)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from hetbench.cores import RunRegistration\n"
         f"r = RunRegistration(Path({str(folder)!r})).__enter__(); print('ready', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2
                    or available_cores() < 2, reason="needs CPU affinity and two usable CPUs")
def test_two_concurrent_runs_on_two_cores_keep_at_most_two_threads_busy(tmp_path):
    """``hetbench train`` pinned to two CPUs while another run is live keeps one worker (one torch thread)
    busy in every round, two in all; alone, it uses both cores. Same results either way."""
    cpus = sorted(os.sched_getaffinity(0))[:2]
    runs = tmp_path / "runs"
    env = dict(os.environ, HETBENCH_RUNS_DIR=str(runs))

    def train(name: str) -> dict:
        code = (f"import os; os.sched_setaffinity(0, {set(cpus)!r}); from hetbench.cli.main import main; "
                f"main(['train', '--algo', 'fedavg', '--rounds', '3', '--clients-per-round', '6', '--batch-size', '16', "
                f"'--out', {str(tmp_path / name)!r}, '-q'])")
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=600)
        return json.loads(next((tmp_path / name).rglob("fedavg-s0.json")).read_text())

    holder = _holder(runs)
    try:
        shared = train("shared")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    alone = train("alone")
    assert shared["timing"]["concurrency"] == [[1, 2, 1]]  # two live runs from round 1 on: one worker each
    assert alone["timing"]["concurrency"] == [[1, 1, 2]]
    assert shared["timing"]["client_threads"] == alone["timing"]["client_threads"] == 1
    assert shared["final"] == alone["final"]  # the share changes the speed, not the science


def test_a_run_steps_down_when_another_starts(tmp_path, monkeypatch):
    """The share is read again every round: a run that started alone takes one worker once another run
    registers, and both again when it has gone."""
    from hetbench.sweep import default_split
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.data import load_federated
    from hetbench.train.session import TrainingSession

    monkeypatch.setenv("HETBENCH_RUNS_DIR", str(tmp_path))
    monkeypatch.setattr("hetbench.train.client_pool.available_cores", lambda: 2)
    monkeypatch.setattr("hetbench.train.client_pool.default_workers", lambda: 2)
    session = TrainingSession.start(load_federated(default_split(quiet=True), quiet=True), make_algorithm("fedavg"),
                                    TrainConfig(clients_per_round=4))
    try:
        pool = session.pool
        assert pool.active_workers(1) == 2
        other = _holder(tmp_path)
        try:
            assert pool.active_workers(2) == 1
        finally:
            other.kill()
            other.wait(timeout=30)
        assert pool.active_workers(3) == 2
        assert pool.concurrency == [[1, 1, 2], [2, 2, 1], [3, 1, 2]]
    finally:
        session.close()


def test_the_centralised_run_trains_on_one_thread_unless_asked(tmp_path):
    from hetbench.sweep import sweep
    from hetbench.train.algorithms import TrainConfig

    cfg = TrainConfig(rounds=1, batch_size=64)
    (default,) = sweep(None, "central", [0], cfg, out=tmp_path / "d", quiet=True)
    (two,) = sweep(None, "central", [0], cfg, out=tmp_path / "t", quiet=True, threads=2)
    assert default.doc["timing"]["client_threads"] == 1
    assert two.doc["timing"]["client_threads"] == 2
