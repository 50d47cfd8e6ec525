"""Checkpoints and resume (hetbench.train.checkpoint, run_training(checkpoint=..., resume=True)): a resumed
run's results equal an uninterrupted run's, timing aside, for every algorithm; bad checkpoints are refused
in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hetbench.errors import HetbenchError
from hetbench.train.algorithms import ALGORITHMS, TrainConfig, make_algorithm
from hetbench.train.checkpoint import check_resumable, checkpoint_path, remove_checkpoint
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]
SIZES = (10, 14, 8, 12, 9, 11)


class Interrupted(Exception):
    pass


def _config(name: str | None = None, **options) -> TrainConfig:
    # 3 of 6 clients per round: SCAFFOLD's c_i, q-FedAvg's and HeteroSwitch's per-client paths differ by
    # round; eval_every=2: the checkpoint at round 3 holds an evaluation from round 2. An algorithm that keeps
    # normalisation layers per client (FedBN) gets a model with GroupNorm layers (BatchNorm cannot train on
    # the one-row batches of these tiny clients)
    norm = {"model": "resnet10", "norm": "group"} if getattr(ALGORITHMS[name] if name else None, "requires_norm",
                                                             False) else {}
    return TrainConfig(**{"rounds": 5, "clients_per_round": 3, "batch_size": 4, "lr": 0.1, "eval_every": 2,
                          **norm, **options})


def _algo(name: str):
    return make_algorithm(name, **({"vc_size": 16} if name == "fedvc" else {}))  # FedVC: 16 examples per virtual client


def _without_timing(doc: dict) -> str:
    return json.dumps({k: v for k, v in doc.items() if k != "timing"}, sort_keys=True)


def _interrupt_at(round_index: int):
    def on_round(r: int, summary: dict) -> None:
        if r == round_index:
            raise Interrupted
    return on_round


@pytest.mark.parametrize("name", ALGORITHMS.names())
def test_a_resumed_run_equals_an_uninterrupted_one_for_every_algorithm(tiny_data, tmp_path, name):
    data = tiny_data(sizes=SIZES, skew=True)
    reference = run_training(data, _algo(name), _config(name))
    ckpt = tmp_path / "run.ckpt"
    # every 2 rounds, killed in round 3 (resumes at 3), then every round (resumes at 4); resumed with 2 workers
    for every, workers in ((2, 1), (1, 2)):
        with pytest.raises(Interrupted):
            run_training(data, _algo(name), _config(name, checkpoint_every=every), checkpoint=ckpt,
                         on_round=_interrupt_at(3))
        saved = torch.load(ckpt, weights_only=True)["round"]
        assert saved == (2 if every == 2 else 3)
        rounds_seen: list[int] = []
        resumed = run_training(data, _algo(name), _config(name, checkpoint_every=every, workers=workers),
                               checkpoint=ckpt, resume=True, on_round=lambda r, s: rounds_seen.append(r))
        assert rounds_seen == list(range(saved + 1, 6))
        assert _without_timing(resumed) == _without_timing(reference), (name, every)
    # writing checkpoints changes nothing either
    with_ckpt = run_training(data, _algo(name), _config(name, checkpoint_every=1), checkpoint=ckpt)
    assert _without_timing(with_ckpt) == _without_timing(reference)


def test_a_stateful_algorithm_resumed_without_its_state_differs(tiny_data, tmp_path, monkeypatch):
    """The comparison above can fail: SCAFFOLD resumed with fresh control variates gives other results."""
    data = tiny_data(sizes=SIZES, skew=True)
    reference = run_training(data, make_algorithm("scaffold"), _config())
    ckpt = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):
        run_training(data, make_algorithm("scaffold"), _config(checkpoint_every=2), checkpoint=ckpt,
                     on_round=_interrupt_at(3))
    monkeypatch.setattr(type(make_algorithm("scaffold")), "load_state_dict", lambda self, state: None)
    resumed = run_training(data, make_algorithm("scaffold"), _config(checkpoint_every=2), checkpoint=ckpt, resume=True)
    assert _without_timing(resumed) != _without_timing(reference)


def test_a_checkpoint_after_the_last_round_resumes_to_the_same_document(tiny_data, tmp_path):
    data = tiny_data(sizes=SIZES, skew=True)
    ckpt = tmp_path / "run.ckpt"
    first = run_training(data, make_algorithm("fedavgm"), _config(checkpoint_every=5), checkpoint=ckpt)
    seen: list[int] = []
    again = run_training(data, make_algorithm("fedavgm"), _config(), checkpoint=ckpt, resume=True,
                         on_round=lambda r, s: seen.append(r))
    assert seen == [] and _without_timing(again) == _without_timing(first)
    assert again["timing"]["train_s"] == first["timing"]["train_s"]  # the time spent before carries over


def test_the_checkpoint_loads_without_code_and_holds_the_run_state(tiny_data, tmp_path):
    data = tiny_data(sizes=SIZES, skew=True)
    ckpt = tmp_path / "run.ckpt"
    algo = make_algorithm("scaffold")
    _, run = run_training(data, algo, _config(rounds=2, checkpoint_every=2), checkpoint=ckpt, return_state=True)
    state = torch.load(ckpt, weights_only=True)
    assert state["format"] == "hetbench-train-checkpoint" and state["round"] == 2
    assert torch.equal(state["model"]["params"], run.global_params)
    assert torch.equal(state["algorithm"]["c"], algo.c)
    assert set(state["algorithm"]["c_i"]) == set(algo.c_i) and len(algo.c_i) > 0
    assert "_sum" not in state["algorithm"] and "_dc" not in state["algorithm"]  # rebuilt every round
    assert state["identity"]["algorithm"] == "scaffold" and state["identity"]["config.lr"] == 0.1
    assert "config.workers" not in state["identity"]  # runtime options: a run may resume on other workers
    assert state["history"]["curves"]["round"] == [2]
    assert state["history"]["last_correct"]["__ndarray__"].dtype == torch.bool
    assert [p.name for p in tmp_path.iterdir()] == ["run.ckpt"]  # no temporary file left


def test_a_failed_write_keeps_the_previous_checkpoint(tiny_data, tmp_path, monkeypatch):
    data = tiny_data(sizes=SIZES, skew=True)
    ckpt = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):
        run_training(data, make_algorithm("fedavg"), _config(checkpoint_every=1), checkpoint=ckpt,
                     on_round=_interrupt_at(2))
    before = ckpt.read_bytes()
    real_save = torch.save

    def half_save(obj, fh):  # writes part of the file, then fails
        fh.write(b"PK\x03\x04partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", half_save)
    with pytest.raises(OSError, match="disk full"):
        run_training(data, make_algorithm("fedavg"), _config(checkpoint_every=1), checkpoint=ckpt)
    monkeypatch.setattr(torch, "save", real_save)
    assert ckpt.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["run.ckpt"]


def test_bad_checkpoints_are_refused_in_one_line(tiny_data, tmp_path):
    data = tiny_data(sizes=SIZES, skew=True)
    ckpt = tmp_path / "fedavg-s0.ckpt"
    algo, config = make_algorithm("fedavg"), _config(checkpoint_every=2)

    def refused(match: str, path: Path = ckpt, algorithm=None, cfg=None) -> None:
        for call in (lambda: check_resumable(path, data, algorithm or make_algorithm("fedavg"), cfg or config),
                     lambda: run_training(data, algorithm or make_algorithm("fedavg"), cfg or config, checkpoint=path,
                                          resume=True)):
            with pytest.raises(HetbenchError, match=match) as err:
                call()
            assert "\n" not in str(err.value)

    refused("no checkpoint at")
    with pytest.raises(Interrupted):
        run_training(data, algo, config, checkpoint=ckpt, on_round=_interrupt_at(3))
    check_resumable(ckpt, data, make_algorithm("fedavg"), _config(workers=2))  # runtime options may differ
    refused(r"another run configuration: config\.lr is 0\.1 there, 0\.2 here", cfg=_config(lr=0.2))
    refused(r"algorithm is 'fedavg' there, 'fedprox' here", algorithm=make_algorithm("fedprox"))
    refused(r"algorithm\.server_lr is 1\.0 there, 0\.5 here", algorithm=make_algorithm("fedavg", server_lr=0.5))
    other_data = tiny_data(sizes=SIZES, skew=True)
    other_data.fingerprint = "1" * 64
    with pytest.raises(HetbenchError, match=r"split\.fingerprint is '0000"):
        check_resumable(ckpt, other_data, make_algorithm("fedavg"), config)

    state = torch.load(ckpt, weights_only=True)
    state["identity"]["hetbench_version"] = "0.0.1"
    torch.save(state, tmp_path / "old.ckpt")
    refused(r"hetbench_version is '0\.0\.1' there", path=tmp_path / "old.ckpt")

    good = ckpt.read_bytes()
    (tmp_path / "cut.ckpt").write_bytes(good[: len(good) // 2])
    refused(r"cut\.ckpt' is unreadable", path=tmp_path / "cut.ckpt")
    (tmp_path / "text.ckpt").write_text("not a checkpoint\n")
    refused("is unreadable", path=tmp_path / "text.ckpt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.ckpt")
    refused("is not a hetbench training checkpoint", path=tmp_path / "other.ckpt")
    # a pickle that would run code when loaded: weights_only refuses it, nothing runs
    torch.save({"format": "hetbench-train-checkpoint", "payload": Interrupted()}, tmp_path / "code.ckpt")
    refused("is unreadable", path=tmp_path / "code.ckpt")
    assert zipfile.is_zipfile(ckpt)
    with pytest.raises(HetbenchError, match="resume needs a checkpoint path"):
        run_training(data, make_algorithm("fedavg"), _config(), resume=True)
    with pytest.raises(HetbenchError, match="checkpoint_every needs a checkpoint path"):
        run_training(data, make_algorithm("fedavg"), _config(checkpoint_every=1))


def test_checkpoint_files_sit_beside_the_results_and_go_away_together(tmp_path):
    result = tmp_path / "split" / "fedavgm-server_lr0.5-s0.json"
    ckpt = checkpoint_path(result)
    assert ckpt == tmp_path / "split" / "fedavgm-server_lr0.5-s0.ckpt"
    ckpt.parent.mkdir()
    ckpt.write_bytes(b"x")
    partial = ckpt.parent / f".{ckpt.name}.partial"  # what a write killed half-way leaves
    partial.write_bytes(b"y")
    remove_checkpoint(ckpt)
    assert list(ckpt.parent.iterdir()) == []
    remove_checkpoint(ckpt)  # nothing there: no error


KILLED_RUN = """
import json, sys, time
from pathlib import Path
import torch
sys.path.insert(0, str(Path({root!r}) / "tests" / "train"))
from conftest import make_tiny_data
from hetbench.train.algorithms import TrainConfig, make_algorithm
from hetbench.train.simulation import run_training
torch.set_num_threads(1)
data = make_tiny_data(sizes={sizes!r}, skew=True)
config = TrainConfig(rounds={rounds}, clients_per_round=3, batch_size=4, lr=0.1, eval_every=2, checkpoint_every=2)
doc = run_training(data, make_algorithm("scaffold"), config, checkpoint=Path(sys.argv[1]),
                   resume=sys.argv[2] == "resume", on_round=lambda r, s: time.sleep(float(sys.argv[3])))
Path(sys.argv[4]).write_text(json.dumps(doc))
"""


def test_a_run_killed_with_sigkill_resumes_to_the_uninterrupted_results(tiny_data, tmp_path):
    rounds = 30
    script = tmp_path / "run.py"
    script.write_text(KILLED_RUN.format(root=str(ROOT), sizes=SIZES, rounds=rounds))
    ckpt, out = tmp_path / "run.ckpt", tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, str(script), str(ckpt), "fresh", "0.1", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ckpt.exists(), proc.stderr.read().decode() if proc.poll() is not None else "no checkpoint in 120 s"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    saved = torch.load(ckpt, weights_only=True)["round"]
    assert 2 <= saved < rounds
    done = subprocess.run([sys.executable, str(script), str(ckpt), "resume", "0", str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    config = TrainConfig(rounds=rounds, clients_per_round=3, batch_size=4, lr=0.1, eval_every=2)
    reference = run_training(tiny_data(sizes=SIZES, skew=True), make_algorithm("scaffold"), config)
    assert _without_timing(json.loads(out.read_text())) == _without_timing(json.loads(json.dumps(reference)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_smoke_a_cuda_run_resumes_to_the_same_results(tiny_data, tmp_path):  # pragma: no cover - GPU only
    data = tiny_data(sizes=SIZES, skew=True)
    reference = run_training(data, make_algorithm("scaffold"), _config(device="cuda"))
    ckpt = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):
        run_training(data, make_algorithm("scaffold"), _config(device="cuda", checkpoint_every=1), checkpoint=ckpt,
                     on_round=_interrupt_at(3))
    state = torch.load(ckpt, weights_only=True)  # tensors saved from the GPU load on the CPU
    assert "cuda" in state["rng"] and state["model"]["params"].device.type == "cpu"
    resumed = run_training(data, make_algorithm("scaffold"), _config(device="cuda", checkpoint_every=1),
                           checkpoint=ckpt, resume=True)
    assert _without_timing(resumed) == _without_timing(reference)


def test_every_algorithms_state_is_portable_and_round_trips(tiny_data):
    from hetbench.train.algorithms.base import portable
    from hetbench.train.checkpoint import decode, encode

    data = tiny_data(sizes=SIZES, skew=True)
    for name in ALGORITHMS.names():
        algo = _algo(name)
        run_training(data, algo, _config(name, rounds=2))
        state = algo.state_dict()
        assert portable(state) and "params" not in state and not set(state) & set(algo.rebuilt), name
        back = decode(encode(state))
        assert list(back) == list(state), name
        for key, value in state.items():
            if isinstance(value, (torch.Tensor, np.ndarray)):
                assert type(back[key]) is type(value) and np.array_equal(np.asarray(back[key]), np.asarray(value))
            elif not isinstance(value, dict):
                assert back[key] == value, (name, key)
    dapper = _algo("dapperfl")
    run_training(data, dapper, _config(rounds=1))
    assert "achieved" in dapper.state_dict() and "groups" not in dapper.state_dict()  # prune groups: rebuilt by setup
