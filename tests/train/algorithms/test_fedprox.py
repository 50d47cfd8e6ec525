"""FedProx (Li et al. 2020): the proximal term vanishes with mu = 0."""

from __future__ import annotations

import pytest
import torch

from hetbench.train.algorithms import make_algorithm

pytestmark = pytest.mark.usefixtures("one_thread")


def test_fedprox_with_mu_zero_is_fedavg(tiny_data, train):
    data = tiny_data(sizes=(6, 9, 12, 5), skew=True)
    doc_a, a = train(data, "fedavg", rounds=3, clients_per_round=3)
    doc_p, p = train(data, make_algorithm("fedprox", mu=0.0), rounds=3, clients_per_round=3)
    assert torch.equal(a.global_params, p.global_params)
    assert doc_a["curves"]["train_loss"] == doc_p["curves"]["train_loss"]
    _, p1 = train(data, make_algorithm("fedprox", mu=1.0), rounds=3, clients_per_round=3)
    assert not torch.allclose(a.global_params, p1.global_params)
