"""Threads that never oversubscribe (issue 27): concurrent runs share the cores, and the runs whose bits
depend on the thread count (the centralised run, models with dropout) do not follow the machine's load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from hetbench.cores import RunRegistration, share_of_cores


def test_live_runs_are_counted_and_stale_entries_removed(tmp_path):
    holder = subprocess.Popen(  # another process holding a registration: a live run
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from hetbench.cores import RunRegistration\n"
         f"r = RunRegistration(Path({str(tmp_path)!r})).__enter__(); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        (tmp_path / "12345-dead.run").write_text("")  # left by a run that died: no lock on it
        with RunRegistration(tmp_path) as me:
            assert me.live_runs() == 2  # this one and the holder
            assert not (tmp_path / "12345-dead.run").exists()
            assert share_of_cores(2, me.live_runs()) == 1
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert RunRegistration(tmp_path).live_runs() == 0  # the kernel dropped the killed holder's lock


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and two CPUs")
def test_two_concurrent_runs_on_two_cores_keep_at_most_two_threads_busy(tmp_path):
    """Two ``hetbench train`` processes pinned to the same two CPUs, sharing a registry: in every round
    both were live, each kept one worker (one torch thread) busy, two in all; alone, a run uses both."""
    cpus = sorted(os.sched_getaffinity(0))[:2]
    env = dict(os.environ, HETBENCH_RUNS_DIR=str(tmp_path / "runs"))

    def start(name: str) -> subprocess.Popen:
        code = (f"import os; os.sched_setaffinity(0, {set(cpus)!r}); from hetbench.cli.main import main; "
                f"main(['train', '--algo', 'fedavg', '--rounds', '40', '--clients-per-round', '6', '--batch-size', '16', "
                f"'--eval-every', '40', '--out', {str(tmp_path / name)!r}, '-q'])")
        return subprocess.Popen([sys.executable, "-c", code], env=env)

    procs = [start("a")]
    deadline = time.monotonic() + 120
    while not list((tmp_path / "runs").glob("*.run")) and time.monotonic() < deadline:
        time.sleep(0.05)
    procs.append(start("b"))
    try:
        assert [p.wait(timeout=600) for p in procs] == [0, 0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    docs = [json.loads(next((tmp_path / n).rglob("fedavg-s0.json")).read_text()) for n in ("a", "b")]
    for doc in docs:
        assert doc["timing"]["client_threads"] == 1
        for _, runs, workers in doc["timing"]["concurrency"]:
            assert workers == share_of_cores(2, runs)
    # b started while a was training: its first rounds saw two runs, so it kept one worker busy
    assert docs[1]["timing"]["concurrency"][0][1:] == [2, 1]
    assert any(runs == 2 for _, runs, _ in docs[0]["timing"]["concurrency"])  # a stepped down while b ran
    assert docs[0]["final"]["accuracy"] == docs[1]["final"]["accuracy"]  # same science, whatever the share


def test_the_centralised_run_trains_on_one_thread_unless_asked(tmp_path):
    from hetbench.sweep import sweep
    from hetbench.train.algorithms import TrainConfig

    cfg = TrainConfig(rounds=1, batch_size=64)
    (default,) = sweep(None, "central", [0], cfg, out=tmp_path / "d", quiet=True)
    (two,) = sweep(None, "central", [0], cfg, out=tmp_path / "t", quiet=True, threads=2)
    assert default.doc["timing"]["client_threads"] == 1
    assert two.doc["timing"]["client_threads"] == 2
