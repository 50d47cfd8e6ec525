"""DapperFL (Jia et al. 2024): fusion schedule (Eq. 2), L1 channel pruning, recovery (Eq. 6), DAR loss (Eq. 5)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hetbench.train.algorithms import make_algorithm
from hetbench.train.algorithms.channel_pruning import l1_channel_mask, prune_groups
from hetbench.train.algorithms.dapperfl import dar_loss, fusion_factor, recover
from hetbench.train.flat import FlatModel
from hetbench.train.models import build_model

pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_dapperfl_recovery_and_footprint(tiny_data, train):
    local = torch.tensor([1.0, 2.0, 0.0, 0.0])
    mask = torch.tensor([1.0, 1.0, 0.0, 0.0])
    prev = torch.tensor([9.0, 9.0, 7.0, 5.0])
    assert torch.equal(recover(local, mask, prev), torch.tensor([1.0, 2.0, 7.0, 5.0]))  # Eq. 6
    data = tiny_data(sizes=(8, 8, 8, 8, 8))
    algo = make_algorithm("dapperfl")
    doc, run = train(data, algo, rounds=2, clients_per_round=5, model="lenet", local_epochs=2)
    by_ratio = np.argsort(doc["clients"]["pruning_ratio"], kind="stable")  # the clients from level 1 to 5
    params = [doc["clients"]["parameters"][k] for k in by_ratio]
    macs = [doc["clients"]["macs"][k] for k in by_ratio]
    assert params[0] == doc["model"]["parameters"]  # level 1: rho = 0
    assert params == sorted(params, reverse=True) and len(set(params)) == 5
    assert macs == sorted(macs, reverse=True)
    kept = [doc["clients"]["mask_parameters"][k] for k in by_ratio]
    assert kept[0] == doc["model"]["parameters"] and kept == sorted(kept, reverse=True)
    assert sorted(doc["clients"]["pruning_ratio"]) == [0.0, 0.2, 0.4, 0.6, 0.8]  # one client per level
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


def test_dapperfl_flops_dense_equivalent_is_table_5s_linear_count(tiny_data, train):
    """Table 5's FLOPs = (1 - rho) x dense MACs; the structural MACs fall faster, about as (1 - rho)^2."""
    data = tiny_data(sizes=(8, 8, 8, 8, 8))
    doc, _ = train(data, make_algorithm("dapperfl"), rounds=1, clients_per_round=5, model="lenet")
    order = np.argsort(doc["clients"]["pruning_ratio"], kind="stable")  # level 1 (rho = 0) first
    clients = {k: [v[i] for i in order] for k, v in doc["clients"].items() if isinstance(v, list)}
    dense = doc["model"]["macs"]
    assert clients["pruning_ratio"] == [0.0, 0.2, 0.4, 0.6, 0.8]
    assert clients["flops_dense_equivalent"] == [round((1 - rho) * dense) for rho in clients["pruning_ratio"]]
    assert clients["flops_dense_equivalent"][0] == clients["macs"][0] == dense  # rho = 0: nothing pruned
    for rho, structural, linear in zip(clients["pruning_ratio"][1:], clients["macs"][1:],
                                       clients["flops_dense_equivalent"][1:]):
        assert structural < linear  # both sides of a layer lose channels
        assert structural == pytest.approx((1 - rho) ** 2 * dense, rel=0.3)  # lenet's classifier is never pruned


def test_dapperfl_without_fusion_pruning_and_dar_is_fedavg_with_momentum_across_epochs(tiny_data, train):
    """Its local epochs are one optimisation: with Eq. 1's fusion, the pruning and the DAR switched off,
    DapperFL is FedAvg, momentum included (before, the momentum restarted after the first epoch)."""
    data = tiny_data(sizes=(12, 12, 12, 12))
    off = make_algorithm("dapperfl", alpha0=0.0, alpha_min=0.0, dar_gamma=0.0, pruning_ratios=(0.0,))
    config = dict(rounds=2, clients_per_round=4, model="lenet", local_epochs=3, momentum=0.9, batch_size=4)
    dapper, run_d = train(data, off, **config)
    fedavg, run_f = train(data, make_algorithm("fedavg"), **config)
    assert torch.equal(run_d.global_params, run_f.global_params)
    assert dapper["curves"]["loss"] == fedavg["curves"]["loss"]


@pytest.mark.parametrize("first_hook, then_hook", [(False, False), (True, True), (False, True), (True, False)])
def test_local_sgd_continues_an_earlier_calls_momentum_in_either_layout(tiny_data, train, first_hook, then_hook):
    """Two ``local_sgd`` calls that pass the velocity on train as one call over all the batches, whether
    each keeps the momentum per parameter (no gradient hook) or as one flat vector (a hook)."""
    from hetbench.train.local import local_sgd

    _, run = train(tiny_data(sizes=(16, 16)), "fedavg", model="lenet")
    ws, rows = run.ws, run.data.client_rows[0]
    batches = [rows[i : i + 4] for i in range(0, 16, 4)]
    start = ws.flat.params.clone()
    hook = {True: (lambda g: g), False: None}
    local_sgd(ws, batches, 0.05, 0.9)
    whole = ws.flat.params.clone()
    ws.flat.load(start)
    first = local_sgd(ws, batches[:2], 0.05, 0.9, grad_hook=hook[first_hook])
    local_sgd(ws, batches[2:], 0.05, 0.9, grad_hook=hook[then_hook], velocity=first.velocity)
    assert torch.allclose(ws.flat.params, whole, rtol=0, atol=1e-6)
    ws.flat.load(start)
    first = local_sgd(ws, batches[:2], 0.05, 0.9)
    local_sgd(ws, batches[2:], 0.05, 0.9)  # momentum restarted: another optimisation
    assert not torch.allclose(ws.flat.params, whole, rtol=0, atol=1e-6)


def test_dapperfl_unsquared_dar_is_cross_entropy_plus_gamma_times_the_plain_norm():
    """--dar-form unsquared (the released code's term): CE + gamma * mean_b ||z_b||_2, by hand."""
    import math

    torch.manual_seed(0)
    model = build_model("digits-cnn", 1, 3, 8)
    x = torch.randn(4, 1, 8, 8)
    y = torch.tensor([0, 1, 2, 1])
    with torch.no_grad():
        z = model.features(x).tolist()
        ce = float(F.cross_entropy(model(x), y))
    norms = [math.sqrt(sum(v * v for v in row)) for row in z]
    expected = ce + 0.3 * sum(norms) / len(norms)
    squared = ce + 0.3 * sum(n * n for n in norms) / len(norms)  # Eq. 3, the default
    with torch.no_grad():
        assert float(dar_loss(model, x, y, 0.3, "unsquared")) == pytest.approx(expected, rel=1e-5)
        assert float(dar_loss(model, x, y, 0.3)) == pytest.approx(squared, rel=1e-5)
        assert float(dar_loss(model, x, y, 0.3, "squared")) == pytest.approx(squared, rel=1e-5)
    assert abs(expected - squared) > 1e-3  # the two forms are different objectives here


def test_dapperfl_unsquared_dar_has_a_finite_gradient_at_a_zero_representation():
    z = torch.zeros(2, 5, requires_grad=True)
    torch.linalg.vector_norm(z, dim=1).mean().backward()
    assert torch.isfinite(z.grad).all()


def test_dapperfl_dar_form_is_declared_and_a_misspelt_one_is_refused(run_cli, tmp_path):
    from hetbench.errors import HetbenchError

    assert make_algorithm("dapperfl").params["dar_form"] == "squared"
    assert make_algorithm("dapperfl", dar_form="unsquared").params["dar_form"] == "unsquared"
    with pytest.raises(HetbenchError) as exc:
        make_algorithm("dapperfl", dar_form="unsqared")
    assert str(exc.value) == "dar_form must be one of squared, unsquared (got 'unsqared')"
    code, _, err = run_cli("train", "--algo", "dapperfl", "--dar-form", "unsqared", "--out", tmp_path / "out")
    assert code == 2 and "--dar-form" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("train", "--algo", "fedavg", "--dar-form", "unsquared", "--out", tmp_path / "out")
    assert code == 2 and "--dar-form is not an option of fedavg" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_dapperfl_unsquared_form_trains_another_model(tiny_data, train):
    data = tiny_data(sizes=(8, 8))
    config = dict(rounds=1, clients_per_round=2, model="lenet", local_epochs=2)
    _, squared = train(data, make_algorithm("dapperfl", dar_gamma=0.5), **config)
    doc, unsquared = train(data, make_algorithm("dapperfl", dar_gamma=0.5, dar_form="unsquared"), **config)
    assert doc["algorithm"]["params"]["dar_form"] == "unsquared"
    assert not torch.equal(squared.global_params, unsquared.global_params)


def test_dapperfl_achieved_ratio_is_filled_by_the_server_from_what_the_client_sends(tiny_data, train):
    """A client only reports its fraction (in ``extra``); ``achieved`` is the server's, so an engine that runs
    clients in another process keeps it."""
    data = tiny_data(sizes=(8, 8, 8, 8, 8))
    algo = make_algorithm("dapperfl")
    _, run = train(data, algo, rounds=1, clients_per_round=5, model="lenet")
    achieved = dict(algo.achieved)
    algo.achieved.clear()
    update = algo.client_update(run, 2, 4)
    assert algo.achieved == {}  # the client side leaves the server's record alone
    assert update.extra["pruned_fraction"] == achieved[0.8]
    algo.begin_round(run, 2)
    algo.accumulate(run, 2, update)
    assert algo.achieved == {0.8: achieved[0.8]} and "pruned_fraction" not in update.extra


def test_dapperfl_records_the_fusion_factor_and_the_mean_achieved_ratio_per_round(tiny_data, train):
    data = tiny_data(sizes=(8, 8, 8, 8, 8))
    algo = make_algorithm("dapperfl")
    doc, run = train(data, algo, rounds=3, clients_per_round=5, model="lenet")
    assert run.log["fusion_alpha"] == [0.9, 0.72, 0.576]  # Eq. 2, round by round
    mean_achieved = sum(algo.achieved.values()) / 5  # every level takes part in every round
    assert run.log["pruned_fraction"] == [pytest.approx(mean_achieved, abs=1e-6)] * 3
    assert 0.35 < mean_achieved < 0.45  # levels 0, 0.2, ..., 0.8
    assert doc["curves"]["algorithm"]["fusion_alpha"] == [0.9, 0.72, 0.576]
    assert doc["curves"]["algorithm"]["pruned_fraction"] == run.log["pruned_fraction"]
    pair = make_algorithm("dapperfl", pruning_ratios=(0.0, 0.8))
    _, two = train(tiny_data(sizes=(8, 8)), pair, rounds=1, clients_per_round=2, model="lenet")
    assert two.log["pruned_fraction"] == [pytest.approx(pair.achieved[0.8] / 2, abs=1e-6)]  # (0 + 0.8) / 2


def test_a_clients_pruning_ratio_is_independent_of_its_domain():
    """Jia et al. sec. 4.1: device levels are the devices' capabilities; clients go to domains at random. A
    domain split numbers its clients in blocks by domain (here 3, 3, 2 and 2 clients in four domains): with the
    ratio tied to the client index (k mod 5, as it was) the first domain's clients were always pruned 0-40% and
    the last domain's 60-80%; drawn per run, every domain's mean ratio over many runs is the overall mean, and
    every level keeps two clients."""
    from hetbench.train.algorithms.dapperfl import device_levels

    ratios = np.array([0.0, 0.2, 0.4, 0.6, 0.8])
    domains = [range(0, 3), range(3, 6), range(6, 8), range(8, 10)]
    drawn = np.array([ratios[device_levels(10, 5, seed)] for seed in range(400)])  # runs x clients
    assert all(np.bincount(device_levels(10, 5, seed), minlength=5).tolist() == [2] * 5 for seed in range(400))
    for members in domains:
        assert abs(drawn[:, list(members)].mean() - 0.4) < 0.03  # k mod 5 gave 0.2 for the first, 0.7 for the last
    assert all(len(set(drawn[:, k])) == 5 for k in range(10))  # every client meets every level
    assert (device_levels(10, 5, 7) == device_levels(10, 5, 7)).all()  # one run, one draw


def test_a_run_prunes_its_clients_at_the_levels_its_seed_draws(tiny_data, train):
    from hetbench.train.algorithms.dapperfl import device_levels

    data = tiny_data(sizes=(8, 8, 8, 8, 8))
    for seed in (0, 3):
        doc, _ = train(data, make_algorithm("dapperfl"), rounds=1, clients_per_round=5, model="lenet", seed=seed)
        want = [[0.0, 0.2, 0.4, 0.6, 0.8][v] for v in device_levels(5, 5, seed)]
        assert doc["clients"]["pruning_ratio"] == want


def test_dapperfl_applies_dar_from_the_second_local_epoch():
    """Algorithm 1 line 1: local epoch 1 fine-tunes the global model (cross-entropy); the DAR objective
    (Eq. 5) is the update rule of epochs 2..E (Algorithm 2 lines 2-3). With E = 1 the DAR weight changes
    nothing; with E = 2 it does. Before, epoch 1 already trained with the DAR term."""
    from tests.train.conftest import make_tiny_data, run_short

    data = make_tiny_data(sizes=(8, 8))

    def model(epochs: int, gamma: float) -> torch.Tensor:
        algo = make_algorithm("dapperfl", dar_gamma=gamma)
        return run_short(data, algo, rounds=1, clients_per_round=2, model="lenet", local_epochs=epochs)[1].global_params

    assert torch.equal(model(1, 0.0), model(1, 1.0))
    assert not torch.equal(model(2, 0.0), model(2, 1.0))


def test_dapperfl_trains_five_local_epochs_unless_told_otherwise(tiny_data, train):
    """Table 4: five local epochs, the default when ``--local-epochs`` is not given (other algorithms: 1)."""
    data = tiny_data(sizes=(8, 8))
    doc, _ = train(data, make_algorithm("dapperfl"), rounds=1, clients_per_round=2, model="lenet", batch_size=4)
    assert doc["config"]["local_epochs"] == 5
    fedavg, _ = train(data, make_algorithm("fedavg"), rounds=1, clients_per_round=2, model="lenet", batch_size=4)
    assert fedavg["config"]["local_epochs"] == 1
