"""q-FedAvg (Li et al. 2020): q = 0 is the uniform average of the local models."""

from __future__ import annotations

import pytest
import torch

from hetbench.train.algorithms import make_algorithm

pytestmark = pytest.mark.usefixtures("one_thread")


def test_qfedavg_with_q_zero_is_the_uniform_average(tiny_data, train):
    data = tiny_data(sizes=(4, 12, 8))
    _, q = train(data, make_algorithm("qfedavg", q=0.0), rounds=1, clients_per_round=3)
    _, s = train(data, "scaffold", rounds=1, clients_per_round=3)  # round one: uniform mean of local models
    assert torch.allclose(q.global_params, s.global_params, atol=1e-5)
