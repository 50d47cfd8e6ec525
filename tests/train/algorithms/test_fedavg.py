"""FedAvg (McMahan et al. 2017): one client with one full batch takes exactly one SGD step."""

from __future__ import annotations

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
    x = (data.x_train.float() / 255.0 - torch.tensor(data.mean, dtype=torch.float32)) / torch.tensor(
        data.std, dtype=torch.float32)
    loss = F.cross_entropy(model(x), data.y_train)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    expected = torch.cat([(p - 0.3 * g).reshape(-1) for p, g in zip(model.parameters(), grads)])
    assert torch.allclose(run.global_params, expected, atol=1e-6)
    assert not torch.allclose(run.global_params, torch.cat([p.reshape(-1) for p in model.parameters()]))
