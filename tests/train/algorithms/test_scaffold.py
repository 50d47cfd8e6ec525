"""SCAFFOLD (Karimireddy et al. 2020): control variates, option II."""

from __future__ import annotations

import pytest
import torch

from hetbench.train.algorithms import make_algorithm
from hetbench.train.models import build_model

pytestmark = pytest.mark.usefixtures("one_thread")


def test_scaffold_round_one_with_zero_control_variates_is_fedavg(tiny_data, train):
    data = tiny_data(sizes=(8, 8, 8, 8), skew=True)  # equal sizes: n_k-weights = uniform weights
    _, a = train(data, "fedavg", rounds=1, clients_per_round=4)
    algo = make_algorithm("scaffold")
    _, s = train(data, algo, rounds=1, clients_per_round=4)
    assert torch.allclose(a.global_params, s.global_params, atol=1e-6)
    assert float(algo.c.abs().sum()) > 0  # the server control variate has moved for round two
    _, a2 = train(data, "fedavg", rounds=2, clients_per_round=4)
    _, s2 = train(data, make_algorithm("scaffold"), rounds=2, clients_per_round=4)
    assert not torch.allclose(a2.global_params, s2.global_params, atol=1e-6)


def test_scaffold_control_variate_option_two(tiny_data, train):
    data = tiny_data(sizes=(8, 8))
    algo = make_algorithm("scaffold")
    _, run = train(data, algo, rounds=1, clients_per_round=2, lr=0.1, batch_size=4)
    # option II: c_i = (x - y_i) / (K eta) with c = c_i = 0 before the round, K = 2 steps
    torch.manual_seed(0)
    x0 = torch.cat([p.reshape(-1) for p in build_model("digits-cnn", 1, 3, 8).parameters()])
    y_mean = x0 + (run.global_params - x0)  # server lr 1: x1 = mean_i y_i
    c_mean = (algo.c_i[0] + algo.c_i[1]) / 2
    assert torch.allclose(c_mean, (x0 - y_mean) / (2 * 0.1), atol=1e-5)
    assert torch.allclose(algo.c, c_mean * 2 / data.num_clients, atol=1e-6)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_scaffold_control_variate_is_the_mean_plain_gradient_whatever_the_momentum(tiny_data, train, monkeypatch, momentum):
    """Option II's c_i+ is the mean of the client's plain gradients under plain SGD; with client momentum
    (x - y) / (K eta) would be up to 1 / (1 - beta) larger, so c_i comes from the gradients themselves."""
    import hetbench.train.algorithms.scaffold as mod

    seen: list[list[torch.Tensor]] = []
    real = mod.local_sgd

    def recording(*args, grad_hook=None, **kwargs):
        mine: list[torch.Tensor] = []
        seen.append(mine)

        def hook(g):
            mine.append(g.clone())
            return grad_hook(g)

        return real(*args, grad_hook=hook, **kwargs)

    monkeypatch.setattr(mod, "local_sgd", recording)
    data = tiny_data(sizes=(12, 12))
    algo = make_algorithm("scaffold")
    train(data, algo, rounds=1, clients_per_round=2, lr=0.05, batch_size=4, local_epochs=2, momentum=momentum)
    assert len(seen) == 2 and all(len(g) == 6 for g in seen)
    means = [torch.stack(g).mean(0) for g in seen]
    assert any(torch.allclose(algo.c_i[k], means[0], atol=1e-6) for k in algo.c_i)
    assert any(torch.allclose(algo.c_i[k], means[1], atol=1e-6) for k in algo.c_i)


def test_scaffold_records_the_control_variate_norms_per_round(tiny_data, train):
    data = tiny_data(sizes=(8, 8, 8, 8), skew=True)
    algo = make_algorithm("scaffold")
    doc, run = train(data, algo, rounds=1, clients_per_round=4)
    assert run.log["c_norm"] == [pytest.approx(float(algo.c.norm()), rel=1e-5)]
    mean_ci = sum(float(c.norm()) for c in algo.c_i.values()) / 4  # every client took part
    assert run.log["c_i_norm_mean"] == [pytest.approx(mean_ci, rel=1e-5)]
    assert doc["curves"]["algorithm"]["c_norm"] == run.log["c_norm"]
    algo = make_algorithm("scaffold")
    doc, run = train(data, algo, rounds=3, clients_per_round=2)
    assert len(run.log["c_norm"]) == len(run.log["c_i_norm_mean"]) == 3
    assert run.log["c_norm"][-1] == pytest.approx(float(algo.c.norm()), rel=1e-5)
    assert all(v > 0 for v in run.log["c_norm"] + run.log["c_i_norm_mean"])


def test_scaffold_diagnostics_come_from_what_the_clients_send(tiny_data, train):
    """The server holds no c_i on an engine that runs clients elsewhere: a client sends ||c_i+|| beside dc."""
    data = tiny_data(sizes=(8, 8))
    algo = make_algorithm("scaffold")
    _, run = train(data, algo, rounds=1, clients_per_round=2)
    updates = [algo.client_update(run, 2, k) for k in (0, 1)]
    norms = [float(algo.c_i[k].norm()) for k in (0, 1)]
    assert [u.extra["c_i_norm"] for u in updates] == pytest.approx(norms, rel=1e-6)
    algo.c_i.clear()  # as on the Flower server
    algo.begin_round(run, 2)
    for u in updates:
        algo.accumulate(run, 2, u)
    algo.end_round(run, 2)
    assert run.log["c_i_norm_mean"][-1] == pytest.approx(sum(norms) / 2, rel=1e-5)
    assert run.log["c_norm"][-1] == pytest.approx(float(algo.c.norm()), rel=1e-5)
