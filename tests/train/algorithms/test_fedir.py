"""FedIR (Hsu et al. 2020, Eq. 3-4): importance weights and the self-normalised loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hetbench.train.algorithms.fedir import importance_weights, self_normalised_loss

pytestmark = pytest.mark.usefixtures("one_thread")


def test_fedir_weights_self_normalise_and_are_one_when_client_matches_population():
    pop = np.array([10.0, 30.0, 60.0])
    assert np.allclose(importance_weights(pop, pop * 0.1), 1.0)
    w = importance_weights(pop, np.array([5.0, 5.0, 0.0]))
    assert np.allclose(w, [0.2, 0.6, 0.0])
    losses = torch.tensor([1.0, 2.0, 4.0, 3.0])
    ww = torch.tensor([0.5, 1.5, 2.0, 1.0])
    assert torch.isclose(self_normalised_loss(losses, ww), (losses * ww).sum() / ww.sum())
    assert torch.isclose(self_normalised_loss(losses, ww * 7.3), self_normalised_loss(losses, ww))  # scale-free
    assert torch.isclose(self_normalised_loss(losses, torch.ones(4)), losses.mean())


def test_fedir_equals_fedavg_on_iid_clients_with_population_labels(tiny_data, train):
    data = tiny_data(sizes=(6, 6), classes=3)
    y = data.y_train.numpy()
    y[:6] = [0, 1, 2, 0, 1, 2]
    y[6:] = [2, 1, 0, 2, 1, 0]  # every client's q_k = p: w = 1 everywhere
    _, a = train(data, "fedavg", rounds=2, clients_per_round=2)
    _, b = train(data, "fedir", rounds=2, clients_per_round=2)
    assert torch.allclose(a.global_params, b.global_params, atol=1e-6)
