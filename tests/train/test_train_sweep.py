"""The library's sweep (hetbench.train.sweep): what ``hetbench train`` does, in one call."""

from __future__ import annotations

import json

import pytest
import torch

from hetbench.errors import HetbenchError
from hetbench.train import sweep
from hetbench.train.algorithms import TrainConfig

CONFIG = TrainConfig(rounds=1, clients_per_round=2, batch_size=16)


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("split") / "digits"
    make_split("builtin:digits", DirichletPartitioner(4, alpha=0.5), out, quiet=True)
    return out


def test_sweep_runs_central_first_per_seed_and_writes_one_file_per_run(split, tmp_path):
    threads = torch.get_num_threads()
    runs = sweep(split, ["fedavg", "central"], [0, 1], CONFIG, out=tmp_path, quiet=True, threads=1)
    assert [(r.algorithm, r.seed, r.path.name) for r in runs] == [
        ("central", 0, "central-s0.json"), ("fedavg", 0, "fedavg-s0.json"),
        ("central", 1, "central-s1.json"), ("fedavg", 1, "fedavg-s1.json"),
    ]
    assert torch.get_num_threads() == threads  # restored
    for r in runs:
        assert r.path.parent == tmp_path / "digits"
        assert json.loads(r.path.read_text()) == json.loads(json.dumps(r.doc))
        assert r.doc["config"]["seed"] == r.seed and r.doc["config"]["rounds"] == 1
    central, fedavg = runs[0].doc["final"], runs[1].doc["final"]
    assert fedavg["relative_accuracy"] == pytest.approx(fedavg["accuracy"] / central["accuracy"], rel=1e-4)


def test_sweep_checks_everything_before_training(split, tmp_path):
    with pytest.raises(HetbenchError, match="--algo names an algorithm twice"):
        sweep(split, "fedavg,FedAvg", config=CONFIG, out=tmp_path, quiet=True)
    with pytest.raises(HetbenchError, match="--mu must be in"):
        sweep(split, "fedprox", config=CONFIG, hyper={"mu": -1.0}, out=tmp_path, quiet=True)
    with pytest.raises(HetbenchError, match="--rounds must be a positive number"):
        sweep(split, "fedavg", config=TrainConfig(rounds=0), out=tmp_path, quiet=True)
    with pytest.raises(HetbenchError, match="--threads must be a positive number"):
        sweep(split, "fedavg", config=CONFIG, out=tmp_path, quiet=True, threads=0)
    assert not any(tmp_path.iterdir())
    (runs,) = sweep(split, "fedprox", 3, CONFIG, hyper={"mu": 0.01}, out=tmp_path, quiet=True, threads=1)
    assert runs.path.name == "fedprox-mu0.01-s3.json"
    with pytest.raises(HetbenchError, match="--overwrite"):
        sweep(split, "fedprox", 3, CONFIG, hyper={"mu": 0.01}, out=tmp_path, quiet=True)
