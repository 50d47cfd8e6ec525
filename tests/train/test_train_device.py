"""Devices (hetbench.train.device): the CPU path gives the results it always gave, bad --device / --amp
values are one line, and a smoke test on CUDA where a GPU is present."""

from __future__ import annotations

import json
import math

import pytest
import torch

from hetbench.errors import HetbenchError
from hetbench.train.device import check_amp, device_info, resolve_device, to_device

pytestmark = pytest.mark.usefixtures("one_thread")

CUDA = torch.cuda.is_available()


def _without_timing(doc: dict) -> str:
    doc = {k: v for k, v in doc.items() if k != "timing"}
    return json.dumps(doc, sort_keys=True, default=str)


def test_explicit_cpu_is_the_default_run_on_a_machine_without_a_gpu(tiny_data, train):
    data = tiny_data(sizes=(12, 9, 7, 12), seed=3)
    cpu, run = train(data, "fedavg", rounds=2, clients_per_round=3, device="cpu")
    assert run.global_params.device.type == "cpu" and run.main_ws.model.training
    if not CUDA:
        auto, _ = train(data, "fedavg", rounds=2, clients_per_round=3, device="auto")
        assert _without_timing(auto) == _without_timing(cpu)


@pytest.mark.parametrize("algo", ["fedavg", "heteroswitch", "fedir", "scaffold"])
def test_cpu_results_do_not_depend_on_the_number_of_workers(tiny_data, train, algo):
    data = tiny_data(sizes=(12, 9, 7, 12, 5), seed=4, skew=True)
    docs = [train(data, algo, rounds=3, clients_per_round=4, device="cpu", workers=w)[0] for w in (1, 2, 4)]
    assert _without_timing(docs[0]) == _without_timing(docs[1]) == _without_timing(docs[2])
    assert [d["timing"]["workers"] for d in docs] == [1, 2, 4]


@pytest.mark.parametrize("name, match", [
    ("tpu", "device 'tpu' is not one of auto, cpu, cuda, cuda:N, mps"),
    ("cuda:x", "is not one of"),
])
def test_unknown_devices_are_one_line(name, match):
    with pytest.raises(HetbenchError, match=match):
        resolve_device(name)


@pytest.mark.skipif(CUDA, reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_is_refused_before_training(tiny_data, train):
    with pytest.raises(HetbenchError, match="device cuda: torch found no CUDA GPU on this machine"):
        resolve_device("cuda")
    with pytest.raises(HetbenchError, match="device cuda:1: torch found no CUDA GPU"):
        train(tiny_data(), "fedavg", device="cuda:1")


def test_amp_off_cuda_is_refused_in_one_line(tiny_data, train):
    with pytest.raises(HetbenchError, match=r"^amp \(bf16 autocast\) needs a CUDA device; this run is on cpu") as info:
        train(tiny_data(), "fedavg", device="cpu", amp=True)
    assert "\n" not in str(info.value)
    with pytest.raises(HetbenchError, match="amp"):
        device_info("cpu", amp=True)
    check_amp(torch.device("cpu"), False)  # no amp: nothing to refuse


def test_device_info_on_the_cpu_and_copies_that_stay_put():
    assert device_info(torch.device("cpu")) == {"type": "cpu", "name": "cpu", "amp": False, "deterministic": None}
    t = torch.arange(3)
    assert to_device(t, torch.device("cpu")) is t


@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("amp", [False, True])
def test_gpu_smoke_two_rounds_of_fedavg(tiny_data, train, amp):  # pragma: no cover - runs only on a GPU
    data = tiny_data(sizes=(48, 48, 48, 48), classes=3, seed=5)
    doc, run = train(data, "fedavg", rounds=2, clients_per_round=4, lr=0.1, device="cuda", amp=amp)
    assert run.global_params.device.type == "cuda" and run.main_ws.amp is amp
    assert math.isfinite(doc["final"]["loss"]) and doc["final"]["accuracy"] > 100 / 3 + 10
    info = device_info(run.main_ws.device, amp)
    assert info["type"] == "cuda" and info["amp"] is amp and info["name"]
    assert info["deterministic"]["cudnn_deterministic"] and not info["deterministic"]["cudnn_benchmark"]
    assert info["deterministic"]["deterministic_algorithms"]
    again, _ = train(data, "fedavg", rounds=2, clients_per_round=4, lr=0.1, device="cuda", amp=amp)
    assert again["final"]["accuracy"] == doc["final"]["accuracy"]  # the determinism settings repeat the run


@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("algo", ["heteroswitch", "fedir", "scaffold", "fedprox", "qfedavg", "fedvc", "dapperfl"])
def test_every_algorithm_runs_on_the_gpu(tiny_data, train, algo):  # pragma: no cover - runs only on a GPU
    doc, _ = train(tiny_data(sizes=(16, 16, 16, 16)), algo, rounds=2, clients_per_round=4, device="cuda")
    assert math.isfinite(doc["final"]["loss"])
