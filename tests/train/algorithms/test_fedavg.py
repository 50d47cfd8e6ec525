"""FedAvg (McMahan et al. 2017): one client with one full batch takes exactly one SGD step."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hetbench.train.models import build_model

pytestmark = pytest.mark.usefixtures("one_thread")


def test_fedavg_one_client_one_step_is_one_sgd_step(tiny_data, train):
    data = tiny_data(sizes=(8,))
    _, run = train(data, "fedavg", batch_size=8, clients_per_round=1, lr=0.3)
    torch.manual_seed(0)
    model = build_model("digits-cnn", 1, 3, 8)
    x01 = torch.from_numpy(np.asarray(data.x_train)).float() / 255.0
    x = (x01 - torch.tensor(data.mean, dtype=torch.float32)) / torch.tensor(data.std, dtype=torch.float32)
    loss = F.cross_entropy(model(x), data.y_train)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    expected = torch.cat([(p - 0.3 * g).reshape(-1) for p, g in zip(model.parameters(), grads)])
    assert torch.allclose(run.global_params, expected, atol=1e-6)
    assert not torch.allclose(run.global_params, torch.cat([p.reshape(-1) for p in model.parameters()]))


def test_fedavgm_server_lr_defaults_to_one_minus_beta_and_a_given_one_is_kept():
    from hetbench.train.algorithms import ALGORITHMS, make_algorithm
    from hetbench.train.results import result_path

    def named(**params) -> str:
        algo = make_algorithm("fedavgm", **params)
        return result_path("out", "split", "fedavgm", algo.params, ALGORITHMS["fedavgm"].defaults, 0).name

    assert make_algorithm("fedavgm").params == {"server_lr": 0.1, "server_momentum": 0.9}  # effective step 1
    assert make_algorithm("fedavgm", server_momentum=0.99).params["server_lr"] == 0.01
    assert make_algorithm("fedavgm", server_momentum=0.0).params["server_lr"] == 1.0
    assert make_algorithm("fedavgm", server_lr=1.0).params == {"server_lr": 1.0, "server_momentum": 0.9}
    assert make_algorithm("fedavgm", server_lr=None, server_momentum=None).params["server_lr"] == 0.1
    # a default run keeps its plain name; values that differ from the defaults name the file
    assert named() == named(server_lr=0.1) == named(server_momentum=0.9) == "fedavgm-s0.json"
    assert named(server_lr=1.0) == "fedavgm-server_lr1-s0.json"
    assert named(server_momentum=0.5) == "fedavgm-server_lr0.5-server_momentum0.5-s0.json"
    # FedIR and FedVC on FedAvgM follow the same rule; without momentum their server_lr stays 1
    assert make_algorithm("fedvc", server_momentum=0.9).params["server_lr"] == 0.1
    assert make_algorithm("fedir").params["server_lr"] == 1.0


def test_fedavgm_velocity_builds_up_to_the_effective_step():
    import torch
    from hetbench.train.algorithms import make_algorithm

    algo = make_algorithm("fedavgm")
    run = type("Run", (), {})()
    run.global_params = torch.zeros(1)
    for _ in range(200):  # a constant update g_bar = -1: the step tends to server_lr / (1 - beta) = 1
        before = run.global_params.clone()
        algo.apply_server_update(run, torch.tensor([-1.0]))
    assert abs(float(run.global_params - before) - 1.0) < 1e-6
