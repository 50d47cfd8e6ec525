"""Each FL algorithm's defining property, on tiny real training problems (real torch SGD, real models)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.train.algorithms import TrainConfig, make_algorithm
from hetbench.train.algorithms.dapperfl import (
    dar_loss,
    fusion_factor,
    l1_channel_mask,
    prune_groups,
    recover,
)
from hetbench.train.algorithms.fedir import importance_weights, self_normalised_loss
from hetbench.train.algorithms.fedvc import virtual_client_rows
from hetbench.train.algorithms.heteroswitch import ema_update, random_isp, switch_one, switch_two
from hetbench.train.data import FederatedData
from hetbench.train.flat import FlatModel
from hetbench.train.models import build_model
from hetbench.train.sampling import select_proportional, select_uniform
from hetbench.train.simulation import run_training


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def tiny_data(sizes=(8, 8, 8, 8), classes=3, side=8, seed=0, skew=False) -> FederatedData:
    """Clients with ``sizes`` rows of random 8x8 grayscale images whose label shifts the mean (learnable)."""
    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    if skew:  # client k holds mostly class k % classes
        y = np.concatenate([np.full(s, k % classes) for k, s in enumerate(sizes)])
        flip = rng.random(n) < 0.2
        y[flip] = rng.integers(0, classes, size=int(flip.sum()))
    else:
        y = rng.integers(0, classes, size=n)
    x = np.clip(rng.normal(80 + 50 * y[:, None, None, None], 30, size=(n, 1, side, side)), 0, 255).astype(np.uint8)
    cid = np.repeat(np.arange(len(sizes)), sizes)
    rows = [np.flatnonzero(cid == k) for k in range(len(sizes))]
    ny = 30
    yt = rng.integers(0, classes, size=ny)
    xt = np.clip(rng.normal(80 + 50 * yt[:, None, None, None], 30, size=(ny, 1, side, side)), 0, 255).astype(np.uint8)
    return FederatedData(
        name="tiny", path="tiny", fingerprint="0" * 64,
        x_train=torch.from_numpy(x), y_train=torch.from_numpy(y.astype(np.int64)),
        x_test=torch.from_numpy(xt), y_test=torch.from_numpy(yt.astype(np.int64)),
        client_ids=np.arange(len(sizes)), client_rows=rows, label_names=[str(c) for c in range(classes)],
        group_by="all", group_names=["all"], test_group=np.zeros(ny, dtype=np.int64),
        test_client=np.full(ny, -1), client_group=np.zeros(len(sizes), dtype=np.int64),
        mean=np.array([x.mean() / 255.0]), std=np.array([x.std() / 255.0]),
    )


def train(data, algo, rounds=1, **cfg):
    config = TrainConfig(rounds=rounds, eval_every=rounds, **{"batch_size": 4, "lr": 0.1, **cfg})
    doc, run = run_training(data, make_algorithm(algo) if isinstance(algo, str) else algo, config, return_state=True)
    return doc, run


def test_fedavg_one_client_one_step_is_one_sgd_step():
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


def test_fedprox_with_mu_zero_is_fedavg():
    data = tiny_data(sizes=(6, 9, 12, 5), skew=True)
    doc_a, a = train(data, "fedavg", rounds=3, clients_per_round=3)
    doc_p, p = train(data, make_algorithm("fedprox", mu=0.0), rounds=3, clients_per_round=3)
    assert torch.equal(a.global_params, p.global_params)
    assert doc_a["curves"]["train_loss"] == doc_p["curves"]["train_loss"]
    _, p1 = train(data, make_algorithm("fedprox", mu=1.0), rounds=3, clients_per_round=3)
    assert not torch.allclose(a.global_params, p1.global_params)


def test_scaffold_round_one_with_zero_control_variates_is_fedavg():
    data = tiny_data(sizes=(8, 8, 8, 8), skew=True)  # equal sizes: n_k-weights = uniform weights
    _, a = train(data, "fedavg", rounds=1, clients_per_round=4)
    algo = make_algorithm("scaffold")
    _, s = train(data, algo, rounds=1, clients_per_round=4)
    assert torch.allclose(a.global_params, s.global_params, atol=1e-6)
    assert float(algo.c.abs().sum()) > 0  # the server control variate has moved for round two
    _, a2 = train(data, "fedavg", rounds=2, clients_per_round=4)
    _, s2 = train(data, make_algorithm("scaffold"), rounds=2, clients_per_round=4)
    assert not torch.allclose(a2.global_params, s2.global_params, atol=1e-6)


def test_scaffold_control_variate_option_two():
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


def test_qfedavg_with_q_zero_is_the_uniform_average():
    data = tiny_data(sizes=(4, 12, 8))
    _, q = train(data, make_algorithm("qfedavg", q=0.0), rounds=1, clients_per_round=3)
    _, s = train(data, "scaffold", rounds=1, clients_per_round=3)  # round one: uniform mean of local models
    assert torch.allclose(q.global_params, s.global_params, atol=1e-5)


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


def test_fedir_equals_fedavg_on_iid_clients_with_population_labels():
    data = tiny_data(sizes=(6, 6), classes=3)
    y = data.y_train.numpy()
    y[:6] = [0, 1, 2, 0, 1, 2]
    y[6:] = [2, 1, 0, 2, 1, 0]  # every client's q_k = p: w = 1 everywhere
    _, a = train(data, "fedavg", rounds=2, clients_per_round=2)
    _, b = train(data, "fedir", rounds=2, clients_per_round=2)
    assert torch.allclose(a.global_params, b.global_params, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(n_k=st.integers(1, 600), n_vc=st.integers(1, 300), seed=st.integers(0, 2**31))
def test_fedvc_draws_exactly_n_vc_examples(n_k, n_vc, seed):
    rows = np.arange(1000, 1000 + n_k)
    got = virtual_client_rows(rows, n_vc, np.random.default_rng(seed))
    assert got.size == n_vc
    assert set(got.tolist()) <= set(rows.tolist())
    if n_k >= n_vc:
        assert np.unique(got).size == n_vc  # without replacement


def test_fedvc_client_batches_and_size_proportional_selection():
    data = tiny_data(sizes=(3, 40, 0, 9))
    algo = make_algorithm("fedvc", vc_size=20)
    doc, run = train(data, algo, rounds=2, clients_per_round=2, batch_size=6)
    for k in (0, 1, 3):
        b = algo.batches(run, 1, k)
        assert sum(x.size for x in b) == 20 and [x.size for x in b] == [6, 6, 6, 2]
    picks = np.concatenate([select_proportional(7, r, data.client_sizes, 2) for r in range(1, 400)])
    counts = np.bincount(picks, minlength=4)
    assert counts[2] == 0  # an empty client is never drawn
    assert counts[1] > counts[3] > counts[0]


def test_uniform_selection_is_per_round_and_repeatable():
    a = select_uniform(3, 5, 100, 10)
    assert np.array_equal(a, select_uniform(3, 5, 100, 10)) and np.unique(a).size == 10
    assert not np.array_equal(a, select_uniform(3, 6, 100, 10))
    assert select_uniform(0, 1, 4, 10).size == 4


def test_heteroswitch_switches_follow_algorithm_one():
    # EMA (Eq. 1): first loss seeds it, then alpha * current + (1 - alpha) * previous
    ema = None
    for loss, expected in [(2.0, 2.0), (1.0, 1.1), (0.5, 0.56)]:
        ema = ema_update(ema, loss, 0.9)
        assert ema == pytest.approx(expected)
    assert not switch_one(0.1, None)  # no EMA before the first round
    script = [  # (L_init, L_train, L_EMA) -> (switch 1, switch 2)
        ((0.5, 0.4, 1.0), (True, True)),
        ((0.5, 1.2, 1.0), (True, False)),
        ((1.5, 0.4, 1.0), (False, False)),
        ((1.0, 0.4, 1.0), (False, False)),  # strict inequality
    ]
    for (l_init, l_train, l_ema), (s1, s2) in script:
        got1 = switch_one(l_init, l_ema)
        assert (got1, switch_two(got1, l_train, l_ema)) == (s1, s2)


def test_heteroswitch_client_returns_swa_weights_when_both_switches_are_on():
    data = tiny_data(sizes=(12, 12))
    config = TrainConfig(rounds=1, batch_size=4, lr=0.1)
    algo = make_algorithm("heteroswitch")
    _, run = run_training(data, algo, config, return_state=True)
    # script the EMA: huge -> both switches on; the client returns the mean of its per-step weights
    algo.l_ema = 1e9
    seen = []
    import hetbench.train.algorithms.heteroswitch as hs

    original = hs.local_sgd

    def spy(ws, batches, *a, after_step=None, **kw):
        def record(i):
            seen.append(ws.flat.params.clone())
            after_step(i)

        return original(ws, batches, *a, after_step=record, **kw)

    hs.local_sgd = spy
    try:
        update = algo.client_update(run, 2, 0)
    finally:
        hs.local_sgd = original
    assert update.extra["switch1"] and update.extra["switch2"]
    assert len(seen) == 3
    assert torch.allclose(update.params, torch.stack(seen).mean(0), atol=1e-6)
    algo.l_ema = 1e-9  # tiny -> both off: the last weights come back, no augmentation
    update = algo.client_update(run, 2, 0)
    assert not update.extra["switch1"] and not update.extra["switch2"]


def test_random_isp_transform_eq2_eq3():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(16, 3, 4, 4, generator=gen)
    assert torch.allclose(random_isp(x.clone(), 0.0, 0.0, gen), x)
    y = random_isp(x.clone(), 0.5, 0.9, gen)
    assert float(y.min()) >= 0.0 and float(y.max()) <= 1.0 and not torch.allclose(x, y)
    # gamma only: a per-image exponent, so log(y)/log(x) is constant within an image
    z = random_isp(x.clone(), 0.0, 0.9, gen)
    ratio = torch.log(z) / torch.log(x)
    assert torch.allclose(ratio, ratio[:, :1, :1, :1].expand_as(ratio), atol=1e-3)
    assert float(ratio.std()) > 0.01  # differs between images


def test_dapperfl_fusion_schedule():
    assert fusion_factor(1) == pytest.approx(0.9)
    assert fusion_factor(2) == pytest.approx(0.72)
    assert fusion_factor(3) == pytest.approx(0.576)
    assert fusion_factor(11) == pytest.approx(0.1)  # 0.9 * 0.8^10 = 0.0966 < alpha_min
    assert fusion_factor(50) == pytest.approx(0.1)
    values = [fusion_factor(t) for t in range(1, 30)]
    assert all(a >= b for a, b in zip(values, values[1:]))


@pytest.mark.parametrize("ratio", [0.0, 0.2, 0.4, 0.6, 0.8])
def test_dapperfl_l1_pruning_achieves_the_ratio_and_drops_the_weakest_channels(ratio):
    torch.manual_seed(0)
    model = build_model("lenet", 3, 10, 32)
    flat = FlatModel(model)
    groups = prune_groups(model, {id(p): s for p, s in zip(flat.param_list, flat.offsets)})
    assert len(groups) == 4  # conv1, conv2, fc384, fc192; the classifier is kept
    mask, pruned, total = l1_channel_mask(flat.params, groups, ratio)
    assert total == 64 + 64 + 384 + 192
    assert pruned == sum(int(np.floor(ratio * c + 1e-9)) for c in (64, 64, 384, 192))
    assert abs(pruned / total - ratio) < 0.01
    w = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d)).weight
    l1 = w.detach().abs().sum(dim=(1, 2, 3))
    kept = mask[groups[0].weight[0]: groups[0].weight[1]].view(64, -1)[:, 0] > 0
    if 0 < kept.sum() < 64:
        assert float(l1[kept].min()) >= float(l1[~kept].max())


def test_dapperfl_recovery_and_footprint():
    local = torch.tensor([1.0, 2.0, 0.0, 0.0])
    mask = torch.tensor([1.0, 1.0, 0.0, 0.0])
    prev = torch.tensor([9.0, 9.0, 7.0, 5.0])
    assert torch.equal(recover(local, mask, prev), torch.tensor([1.0, 2.0, 7.0, 5.0]))  # Eq. 6
    data = tiny_data(sizes=(8, 8, 8, 8, 8))
    algo = make_algorithm("dapperfl")
    doc, run = train(data, algo, rounds=2, clients_per_round=5, model="lenet", local_epochs=2)
    params = doc["clients"]["parameters"]
    macs = doc["clients"]["macs"]
    assert params[0] == doc["model"]["parameters"]  # level 1: rho = 0
    assert params == sorted(params, reverse=True) and len(set(params)) == 5
    assert macs == sorted(macs, reverse=True)
    kept = doc["clients"]["mask_parameters"]
    assert kept[0] == doc["model"]["parameters"] and kept == sorted(kept, reverse=True)
    assert doc["clients"]["pruning_ratio"] == [0.0, 0.2, 0.4, 0.6, 0.8]
    assert all(p <= k for p, k in zip(params, kept))  # removing dead inputs too can only cut more
    assert doc["curves"]["algorithm"]["achieved_pruning_ratio"]["0.8"] == pytest.approx(0.8, abs=0.01)


def test_dapperfl_dar_loss_adds_feature_norm():
    torch.manual_seed(0)
    model = build_model("digits-cnn", 1, 3, 8)
    x = torch.randn(5, 1, 8, 8)
    y = torch.tensor([0, 1, 2, 0, 1])
    z = model.features(x)
    expected = F.cross_entropy(model(x), y) + 0.5 * z.pow(2).sum(1).mean()
    assert torch.isclose(dar_loss(model, x, y, 0.5), expected)
    assert torch.isclose(dar_loss(model, x, y, 0.0), F.cross_entropy(model(x), y))


def test_centralised_run_processes_an_average_rounds_worth_of_examples():
    data = tiny_data(sizes=(10, 20, 30))
    algo = make_algorithm("central")
    doc, run = train(data, algo, rounds=3, clients_per_round=2, batch_size=5)
    assert algo.per_round == 2 * 20
    assert doc["final"]["relative_accuracy"] == 1.0
    assert len(doc["curves"]["train_loss"]) == 3


def test_every_algorithm_learns_something_and_reports_finite_metrics():
    data = tiny_data(sizes=(10, 14, 8, 12), skew=False)
    for name in ("fedavg", "fedavgm", "fedprox", "scaffold", "qfedavg", "fedir", "fedvc", "heteroswitch", "dapperfl",
                 "central"):
        doc, _ = train(data, name, rounds=4, clients_per_round=4, lr=0.05)
        f = doc["final"]
        assert 0.0 <= f["accuracy"] <= 100.0 and np.isfinite(f["loss"]), name
        assert doc["curves"]["train_loss"][-1] < doc["curves"]["train_loss"][0] * 1.5, name


def test_library_callers_get_the_same_checks_as_the_cli():
    from hetbench.errors import HetbenchError

    with pytest.raises(HetbenchError, match="--ema-alpha must be in"):
        make_algorithm("heteroswitch", ema_alpha=1.5)
    with pytest.raises(HetbenchError, match="--pruning-ratios"):
        make_algorithm("dapperfl", pruning_ratios=(0.0, 1.0))
    with pytest.raises(HetbenchError, match="unknown algorithm"):
        make_algorithm("fedmagic")
    with pytest.raises(HetbenchError, match="--lr must be a positive number"):
        run_training(tiny_data(), make_algorithm("fedavg"), TrainConfig(lr=float("nan")))
