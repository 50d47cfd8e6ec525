"""Stacked clients (hetbench.train.stacked): a round's clients trained as one computation equal their sequential
local SGD, whatever their sizes, and the operations a step dispatches do not grow with the clients."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
import torch

from hetbench.errors import HetbenchError
from hetbench.train.local import Workspace, epoch_batches, local_sgd
from hetbench.train.models import build_model
from hetbench.train.local_plan import LocalPlan, round_layout, stacked_refusal
from hetbench.train.stacked import StackedClients

#: where the engines train: the CPU, or ``HETBENCH_TEST_DEVICE=cuda`` on a GPU machine (benchmarks/gpu_trainer_probe.py)
DEVICE = torch.device(os.environ.get("HETBENCH_TEST_DEVICE", "cpu"))
#: parameters after training within this relative distance of the sequential ones: the batched kernels sum in
#: another order (grouped convolutions, bmm), a few float32 ulps per step; measured at most 3e-7 here
REL = 1e-5


@pytest.fixture(scope="module")
def data():
    from hetbench.sweep import default_split
    from hetbench.train.data import load_federated

    return load_federated(default_split(quiet=True), quiet=True)


def _make(data, name="digits-cnn", norm="group"):
    return lambda: build_model(name, data.in_channels, data.num_classes, data.image_size, norm)


def _start(make):
    torch.manual_seed(0)
    model = make()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    floats = [b.reshape(-1) for b in model.buffers() if b.is_floating_point()]
    return params.to(DEVICE), torch.cat(floats).to(DEVICE) if floats else torch.zeros(0)


def _plans(data, mu: float, clients: int = 6) -> list[LocalPlan]:
    """Clients of 3 to 28 rows in batches of 7 over 1 or 2 epochs: short last batches, a client smaller than a
    batch, and 1 to 8 steps, so padding and masking both happen."""
    rng = np.random.default_rng(0)
    return [LocalPlan(epoch_batches(data.client_rows[c][: 3 + 5 * c], 7, 1 + c % 2, rng), prox_mu=mu)
            for c in range(clients)]


@pytest.mark.parametrize("momentum, weight_decay, mu", [(0.0, 0.0, 0.0), (0.9, 1e-4, 0.0), (0.9, 1e-4, 0.1)])
def test_stacked_clients_equal_their_sequential_local_sgd(data, momentum, weight_decay, mu):
    make = _make(data)
    start, buffers = _start(make)
    plans = _plans(data, mu)
    out = StackedClients(data, make, DEVICE).train(plans, start, buffers, 0.05, momentum, weight_decay)
    ws = Workspace(data, make(), DEVICE)
    for c, plan in enumerate(plans):
        ws.flat.load(start, buffers)
        params, anchor = ws.flat.params, start.clone()
        hook = (lambda g: g.add_(params - anchor, alpha=mu)) if mu else None
        seq = local_sgd(ws, plan.batches, 0.05, momentum, weight_decay, grad_hook=hook)
        moved = float((ws.flat.params - start).norm())
        assert moved > 1e-3  # the clients trained
        assert float((ws.flat.params - out.params[c]).norm()) <= REL * float(ws.flat.params.norm()), c
        assert (out.steps[c], out.num_samples[c]) == (seq.steps, seq.num_samples)
        assert out.mean_loss[c] == pytest.approx(seq.mean_loss, rel=1e-5)


def test_scaffold_fedir_and_qfedavg_plans_equal_their_sequential_hooks(data):
    """The plan's options, together on padded and early-finishing clients: SCAFFOLD's gradient offset and the
    sums of the gradients before it, FedIR's self-normalised weighted loss (a padding row weighs nothing) and
    q-FedAvg's loss at the start model over the client's rows, each as the sequential hooks compute it."""
    from hetbench.train.algorithms.fedir import importance_weighted_loss
    from hetbench.train.local import dataset_loss

    make = _make(data)
    start, buffers = _start(make)
    gen = torch.Generator().manual_seed(1)
    plans = [LocalPlan(p.batches, grad_offset=0.05 * torch.randn(start.numel(), generator=gen).to(DEVICE),
                       sum_gradients=True,
                       loss_fn=importance_weighted_loss,
                       loss_args=(0.1 + torch.rand(data.num_classes, generator=gen).to(DEVICE),),
                       loss_rows=np.concatenate(p.batches[: 1 + c % 2]))
             for c, p in enumerate(_plans(data, 0.0))]
    out = StackedClients(data, make, DEVICE).train(plans, start, buffers, 0.05, 0.9, 1e-4)
    ws = Workspace(data, make(), DEVICE)
    for c, plan in enumerate(plans):
        ws.flat.load(start, buffers)
        assert out.initial_loss[c] == pytest.approx(dataset_loss(ws, plan.loss_rows), rel=1e-5)
        total = torch.zeros_like(start)

        def hook(g, offset=plan.grad_offset, total=total):
            total.add_(g)
            return g.add_(offset)

        seq = local_sgd(ws, plan.batches, 0.05, 0.9, 1e-4, loss_fn=importance_weighted_loss,
                        loss_args=plan.loss_args, grad_hook=hook)
        assert float((ws.flat.params - out.params[c]).norm()) <= REL * float(ws.flat.params.norm()), c
        assert float((total - out.grad_sums[c]).norm()) <= REL * float(total.norm()), c
        assert out.mean_loss[c] == pytest.approx(seq.mean_loss, rel=1e-5)
    with pytest.raises(HetbenchError, match="set grad_offset alike"):
        StackedClients(data, make, DEVICE).train([plans[0], LocalPlan(plans[1].batches)], start, buffers,
                                                              0.05)


def test_random_isp_and_weight_averaging_equal_heteroswitchs_hooks(data):
    """HeteroSwitch's switch 1 in a plan, on some clients only (padded and early-finishing among them): the
    random ISP draws applied to their images and the running weight average after every step equal
    ``random_isp`` and the SWA hook of its sequential client update; the other clients train unchanged."""
    from hetbench.train.algorithms.heteroswitch import isp_draw, random_isp

    make = _make(data)
    start, buffers = _start(make)
    plans = []
    for c, plan in enumerate(_plans(data, 0.0)):
        if c % 2:
            gen = torch.Generator().manual_seed(c)
            plan.isp_draws = [isp_draw(b.size, data.in_channels, 0.3, 0.9, gen) for b in plan.batches]
            plan.average_weights = True
        plans.append(plan)
    out = StackedClients(data, make, DEVICE).train(plans, start, buffers, 0.05, 0.9)
    ws = Workspace(data, make(), DEVICE)
    for c, plan in enumerate(plans):
        ws.flat.load(start, buffers)
        gen = torch.Generator().manual_seed(c)
        swa = start.clone()

        def average(i, swa=swa):
            swa.mul_(i / (i + 1)).add_(ws.flat.params, alpha=1.0 / (i + 1))

        switched = plan.average_weights
        local_sgd(ws, plan.batches, 0.05, 0.9, transform=(lambda x: random_isp(x, 0.3, 0.9, gen)) if switched else None,
                  after_step=average)
        assert float((ws.flat.params - out.params[c]).norm()) <= REL * float(ws.flat.params.norm()), c
        assert float((swa - out.averages[c]).norm()) <= REL * float(swa.norm()), c
    plain = StackedClients(data, make, DEVICE).train([LocalPlan(p.batches) for p in plans], start,
                                                                  buffers, 0.05, 0.9)
    assert not torch.allclose(plain.params[1], out.params[1])  # the draws changed what client 1 trained on
    assert torch.equal(plain.params[0], out.params[0]) or \
        float((plain.params[0] - out.params[0]).norm()) <= REL * float(out.params[0].norm())


def test_batchnorm_clients_train_masked_from_starts_of_their_own(data):
    """A BatchNorm model (ResNet-10), padded and early-finishing clients, some starting from parameters and
    running statistics of their own (FedBN's kept entries): each client's parameters and running statistics
    after the round equal its sequential local SGD, whose BatchNorm sees only its real rows. BatchNorm on 8 px
    digits amplifies float rounding (test_lockstep.py measures it), so two steps at a small rate keep the
    comparison at the float level; the tolerance is 1e-4 relative."""
    make = _make(data, "resnet10", "batch")
    start, buffers = _start(make)
    gen = torch.Generator().manual_seed(2)
    rng = np.random.default_rng(0)
    plans = []
    for c in range(4):
        plan = LocalPlan(epoch_batches(data.client_rows[c][: 5 + 6 * c], 12, 1, rng)[:2])
        if c % 2:
            plan.start_params = start + 0.01 * torch.randn(start.shape, generator=gen).to(DEVICE)
            plan.start_buffers = buffers + 0.1 * torch.rand(buffers.shape, generator=gen).to(DEVICE)
        plans.append(plan)
    assert len({b.size for p in plans for b in p.batches}) > 1  # padding happens
    out = StackedClients(data, make, DEVICE).train(plans, start, buffers, 0.01, 0.9)
    ws = Workspace(data, make(), DEVICE)
    for c, plan in enumerate(plans):
        ws.flat.load(start if plan.start_params is None else plan.start_params,
                     buffers if plan.start_buffers is None else plan.start_buffers)
        local_sgd(ws, plan.batches, 0.01, 0.9)
        assert float((ws.flat.params - out.params[c]).norm()) <= 1e-4 * float(ws.flat.params.norm()), c
        assert float((ws.flat.buffers - out.buffers[c]).norm()) <= 1e-4 * float(ws.flat.buffers.norm()), c
        assert not torch.allclose(ws.flat.buffers, buffers if plan.start_buffers is None else plan.start_buffers)


def test_images_held_on_the_device_train_the_same_bits_as_gathered_ones(data):
    """The resident path (the training images copied to the device once, each step's batch gathered there; the
    default on a GPU where they fit) gives exactly the batches of the host gather: the same bits after a round."""
    make = _make(data)
    start, buffers = _start(make)
    plans = _plans(data, 0.0)
    gathered = StackedClients(data, make, DEVICE).train(plans, start, buffers, 0.05, 0.9)
    engine = StackedClients(data, make, DEVICE, resident=True)
    assert engine.images is not None and engine.images.shape == tuple(data.x_train.shape)
    assert torch.equal(engine.train(plans, start, buffers, 0.05, 0.9).params, gathered.params)
    # by default the images stay in the memory map on a CPU and go to a GPU they fit
    assert (StackedClients(data, make, DEVICE).images is None) == (DEVICE.type == "cpu")


def test_a_finished_client_stays_where_its_last_step_left_it(data):
    """A client that finishes before the others (the round goes on without its row) ends where it would have
    ended in a stacked round of clients as long as itself."""
    make = _make(data)
    start, buffers = _start(make)
    plans = _plans(data, 0.0)
    engine = StackedClients(data, make, DEVICE)
    together = engine.train(plans, start, buffers, 0.05, 0.9)
    short = int(np.argmin([len(p.batches) for p in plans]))
    assert len(plans[short].batches) < max(len(p.batches) for p in plans)
    alone = engine.train([plans[short]] + [plans[short]], start, buffers, 0.05, 0.9)
    assert torch.equal(together.params[short], alone.params[0]) or \
        float((together.params[short] - alone.params[0]).norm()) <= REL * float(alone.params[0].norm())
    assert not torch.equal(together.params[short], start)


def test_the_round_layout_pads_short_batches_and_trains_a_shrinking_prefix():
    plans = [LocalPlan([np.array([7, 8])]), LocalPlan([np.array([1, 2, 3]), np.array([4])]), LocalPlan([np.array([5])])]
    idx, real, order, live = round_layout(plans)
    assert idx.shape == (2, 3, 3)
    assert order.tolist() == [1, 0, 2] and live.tolist() == [3, 1]  # most steps first; ties keep plan order
    assert idx[1, 0].tolist() == [4, 4, 4] and real[1, 0].tolist() == [True, False, False]
    assert idx[0, 1].tolist() == [7, 8, 7] and real[0, 1].tolist() == [True, True, False]
    with pytest.raises(HetbenchError, match="at least one non-empty batch"):
        round_layout([LocalPlan([])])


def test_which_runs_stack_and_why_the_others_do_not():
    from hetbench.train.algorithms import make_algorithm

    group = build_model("digits-cnn", 1, 10, 8, "group")
    from hetbench.train.algorithms import ALGORITHMS
    from hetbench.train.algorithms.fedavg import FedAvg

    batch = build_model("resnet10", 3, 10, 32, "batch")
    for name in sorted(set(ALGORITHMS) - {"central"}):  # every algorithm of the paper set
        assert stacked_refusal(make_algorithm(name), group) is None, name
        assert stacked_refusal(make_algorithm(name), batch) is None, name  # BatchNorm trains masked

    class OwnUpdate(FedAvg):  # a plugin whose client update is code of its own, with no plan declared
        name = "own-update"

        def client_update(self, run, round_index, client):
            return super().client_update(run, round_index, client)

    assert "code of its own" in stacked_refusal(OwnUpdate(), group)
    batch.stem[1].momentum = None  # a cumulative average: the masked form has no such update
    assert "running statistics" in stacked_refusal(make_algorithm("fedavg"), batch)


class _Tally:
    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()


def _count(fn) -> int:
    from torch.utils._python_dispatch import TorchDispatchMode

    tally = _Tally()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            tally.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return tally.n


def test_a_steps_operations_do_not_grow_with_the_clients(data):
    """What predicts a GPU's speed (issue 46, item 6): the ATen operations of a stacked round of 50 one-step
    clients are at most 1.1 times those of 5; a loop over clients dispatches ten times as many."""
    make = _make(data)
    start, buffers = _start(make)
    engine = StackedClients(data, make, DEVICE)
    rows = [data.client_rows[c % data.num_clients][:10] for c in range(50)]
    counts = {k: _count(lambda: engine.train([LocalPlan([r]) for r in rows[:k]], start, buffers, 0.05, 0.9, 1e-4, ))
              for k in (5, 50)}
    assert counts[50] <= 1.1 * counts[5], counts
    ws = Workspace(data, make(), DEVICE)

    def loop(k):
        for r in rows[:k]:
            ws.flat.load(start, buffers)
            local_sgd(ws, [r], 0.05, 0.9, 1e-4)

    assert _count(lambda: loop(50)) >= 8 * _count(lambda: loop(5))


def test_the_server_folds_a_stacked_chunk_in_as_it_folds_its_clients_one_by_one():
    from types import SimpleNamespace

    from hetbench.train.algorithms import make_algorithm
    from hetbench.train.algorithms.base import StackedUpdates

    torch.manual_seed(0)
    run = SimpleNamespace(global_params=torch.randn(50), global_buffers=torch.randn(3))
    stacked = StackedUpdates([4, 1, 7], run.global_params + 0.01 * torch.randn(3, 50), torch.randn(3, 3),
                             [12.0, 3.0, 40.0], [0.5, 0.7, 0.2], [2, 1, 4], [12, 3, 40])
    for name in ("fedavg", "fedprox", "fedadam"):
        together, one_by_one = make_algorithm(name), make_algorithm(name)
        for algo in (together, one_by_one):
            algo.begin_round(run, 1)
        together.accumulate_stacked(run, 1, stacked)
        for update in stacked.split():
            one_by_one.accumulate(run, 1, update)
        assert together._wsum == one_by_one._wsum == 55.0
        assert torch.allclose(together._sum, one_by_one._sum, rtol=1e-5, atol=1e-6)
        assert torch.allclose(together._bsum, one_by_one._bsum, rtol=1e-5, atol=1e-6)
    assert [u.client for u in stacked.split()] == [4, 1, 7]
    assert torch.equal(stacked.split()[2].params, stacked.params[2])


def test_an_algorithm_with_its_own_accumulate_gets_each_clients_update(monkeypatch):
    from types import SimpleNamespace

    from hetbench.train.algorithms import make_algorithm
    from hetbench.train.algorithms.base import StackedUpdates

    algo = make_algorithm("scaffold")
    seen = []
    monkeypatch.setattr(type(algo), "accumulate", lambda self, run, r, update: seen.append(update.client))
    run = SimpleNamespace(global_params=torch.zeros(4))
    stacked = StackedUpdates([3, 9], torch.ones(2, 4), torch.zeros(2, 0), [1.0, 1.0], [0.1, 0.2], [1, 1], [5, 5])
    algo.accumulate_stacked(run, 1, stacked)
    assert seen == [3, 9]
