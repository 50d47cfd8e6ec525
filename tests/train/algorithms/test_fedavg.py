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


def test_fedavgm_follows_hsu_et_al_server_step_one_and_client_rate_scaled_by_one_minus_beta():
    """Hsu et al. 2020 (sec. 6.5, Appendix A.1): server step 1, beta 0.9, effective rate eta / (1 - beta)."""
    from hetbench.train.algorithms import ALGORITHMS, TrainConfig, make_algorithm
    from hetbench.train.results import result_path

    def named(**params) -> str:
        algo = make_algorithm("fedavgm", **params)
        return result_path("out", "split", "fedavgm", algo.params, ALGORITHMS["fedavgm"].defaults, 0, fingerprint="").name

    def lr(name: str, given: float | None = None, **params) -> float:
        return TrainConfig(lr=given).for_algorithm(make_algorithm(name, **params)).lr

    assert make_algorithm("fedavgm").params == {"server_lr": 1.0, "server_momentum": 0.9}
    assert lr("fedavgm") == 0.005 and lr("fedavg") == 0.05  # eta_eff = 0.005 / (1 - 0.9) = FedAvg's 0.05
    assert lr("fedavgm", server_momentum=0.99) == 0.0005 and lr("fedavgm", server_momentum=0.0) == 0.05
    assert lr("fedavgm", 0.01) == 0.01  # a given --lr is used as it is
    assert make_algorithm("fedavgm", server_lr=0.3).params == {"server_lr": 0.3, "server_momentum": 0.9}
    # a default run keeps its plain name; values that differ from the defaults name the file
    assert named() == named(server_lr=1.0) == named(server_momentum=0.9) == "fedavgm-s0.json"
    assert named(server_lr=0.1) == "fedavgm-server_lr0.1-s0.json"
    # FedIR and FedVC on FedAvgM follow the same rule; without momentum they are FedAvg's
    assert make_algorithm("fedvc", server_momentum=0.9).params["server_lr"] == 1.0
    assert lr("fedvc", server_momentum=0.9) == lr("fedir", server_momentum=0.9) == 0.005
    assert lr("fedir") == lr("fedvc") == 0.05


def test_fedavgm_velocity_builds_up_to_the_effective_step():
    import torch
    from hetbench.train.algorithms import TrainConfig, make_algorithm

    algo = make_algorithm("fedavgm")
    eta = TrainConfig().for_algorithm(algo).lr
    run = type("Run", (), {})()
    run.global_params = torch.zeros(1, dtype=torch.float64)
    for _ in range(300):  # a client step of eta per round: the server's step tends to eta / (1 - beta) = 0.05
        before = run.global_params.clone()
        algo.apply_server_update(run, torch.tensor([-eta], dtype=torch.float64))
    assert abs(float(run.global_params - before) - 0.05) < 1e-9
