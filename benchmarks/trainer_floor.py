"""The compute floor of ``bench_trainer.py`` (a): FedAvg written as a plain PyTorch loop.

This is the loop a person would write by hand to run FedAvg (McMahan et al. 2017, Algorithm 1) on one
machine: an ``nn.Module``, ``torch.optim.SGD`` and ``state_dict`` averaging, nothing else. It uses none of
hetbench's trainer machinery (no flat parameter vector, workspace, client pool, algorithm object, finite
checks or results document); it takes from hetbench only what makes its steps the same as
``hetbench train --algo fedavg``:

* the split, already read by ``hetbench.train.data.load_federated`` (uint8 images, labels, every client's
  row indices, the train split's per-channel mean and std);
* the model's architecture and initial weights: ``torch.manual_seed(seed)`` then
  ``hetbench.train.models.build_model`` (the model is the workload, not the trainer);
* the clients of round r: ``hetbench.train.sampling.select_uniform(seed, r, num_clients, per_round)``;
* the batches of client k in round r: ``hetbench.train.local.epoch_batches`` with the generator
  ``numpy.random.default_rng([seed, r, 1, k])`` (``RunState.rng(r, k, stream=1)`` in
  ``hetbench/train/algorithms/base.py``).

The rest is its own: the images are normalised once, up front, into one float tensor ((u8 / 255 - mean) /
std, the same element-wise operations hetbench applies per batch); a client loads the global
``state_dict``, takes one ``torch.optim.SGD`` step per batch (plain SGD, mean cross-entropy); the server
averages with weights n_k / sum n_k. The average is written as the pseudo-gradient form
``theta - sum_k (n_k / n) (theta - theta_k)`` (float32, clients in increasing order), which is FedAvg with
server learning rate 1 and rounds exactly as hetbench does, so on the same torch thread count the two
loops produce bit-identical models (``max_abs_diff`` in the benchmark's report). The global model is
evaluated on every test row in batches of 256 every ``eval_every`` rounds and after the last one.

Example (in-process, on a split folder built by ``hetbench partition``)::

    from hetbench.train.data import load_federated
    from trainer_floor import fedavg_plain
    result = fedavg_plain(load_federated("SPLIT"), model_name="lenet", rounds=20, per_round=10)
    print(result.seconds, result.accuracy)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from hetbench.train.local import epoch_batches
from hetbench.train.models import build_model
from hetbench.train.sampling import select_uniform

EVAL_BATCH = 256  # test rows per forward pass (as hetbench's evaluation)


@dataclass
class FloorResult:
    """What :func:`fedavg_plain` returns."""

    seconds: float  # wall time of the whole call: normalising the data, the model, every round, evaluations
    cpu_seconds: float  # CPU time of this process over the same call (every thread)
    accuracy: float  # final test accuracy, percent
    curve: list[tuple[int, float]] = field(default_factory=list)  # (round, accuracy) of every evaluation
    params: torch.Tensor | None = None  # the final global parameters, flattened in model.parameters() order


def _normalised(x_u8, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """uint8 (N, C, H, W) (a tensor, or an array such as a memory map, read into memory) -> float32
    ((x / 255) - mean) / std, all rows at once."""
    x = x_u8 if isinstance(x_u8, torch.Tensor) else torch.from_numpy(np.array(x_u8))
    return (x.float().div_(255.0) - mean) / std


@torch.no_grad()
def _accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = 0
    for a in range(0, y.numel(), EVAL_BATCH):
        correct += int((model(x[a : a + EVAL_BATCH]).argmax(1) == y[a : a + EVAL_BATCH]).sum())
    return 100.0 * correct / max(y.numel(), 1)


def fedavg_plain(
    data,
    *,
    model_name: str = "lenet",
    rounds: int = 20,
    per_round: int = 10,
    local_epochs: int = 1,
    batch_size: int = 10,
    lr: float = 0.05,
    seed: int = 0,
    eval_every: int = 5,
    norm: str = "group",
) -> FloorResult:
    """FedAvg on ``data`` as a plain PyTorch loop; the steps of ``hetbench train --algo fedavg``.

    Parameters
    ----------
    data : hetbench.train.data.FederatedData
        The split as ``load_federated`` returns it; only its arrays are read (``x_train``, ``y_train``,
        ``x_test``, ``y_test``, ``client_rows``, ``mean``, ``std``, ``label_names``).
    model_name, norm : str
        Passed to ``build_model`` (the same architecture and initial weights as hetbench's run).
    rounds, per_round, local_epochs, batch_size, lr, seed, eval_every
        As ``hetbench train``'s ``--rounds``, ``--clients-per-round``, ``--local-epochs``,
        ``--batch-size``, ``--lr``, ``--seed`` and ``--eval-every`` (no momentum, no weight decay).

    Returns
    -------
    FloorResult
        Wall and CPU time of the call, final accuracy, the accuracy curve and the final parameters.
    """
    t0, cpu0 = time.perf_counter(), time.process_time()
    c = int(data.x_train.shape[1])
    mean = torch.tensor(np.asarray(data.mean), dtype=torch.float32).reshape(1, c, 1, 1)
    std = torch.tensor(np.asarray(data.std), dtype=torch.float32).reshape(1, c, 1, 1)
    x_train = _normalised(data.x_train, mean, std)
    x_test = _normalised(data.x_test, mean, std)
    y_train = torch.as_tensor(data.y_train)
    y_test = torch.as_tensor(data.y_test)
    client_rows = list(data.client_rows)

    torch.manual_seed(int(seed))
    model = build_model(model_name, c, len(data.label_names), int(data.x_train.shape[-1]), norm)
    param_keys = [name for name, _ in model.named_parameters()]
    buffer_keys = [name for name, b in model.named_buffers() if b.is_floating_point()]
    global_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.0, weight_decay=0.0)

    curve: list[tuple[int, float]] = []
    for r in range(1, rounds + 1):
        deltas = {k: torch.zeros_like(global_state[k]) for k in param_keys}
        buffers = {k: torch.zeros_like(global_state[k]) for k in buffer_keys}
        total = 0.0
        for k in select_uniform(seed, r, len(client_rows), per_round):
            rows = client_rows[int(k)]
            model.load_state_dict(global_state)
            model.train()
            rng = np.random.default_rng([int(seed), r, 1, int(k)])
            for batch in epoch_batches(rows, batch_size, local_epochs, rng):
                idx = torch.from_numpy(batch)
                loss = F.cross_entropy(model(x_train.index_select(0, idx)), y_train.index_select(0, idx))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            n = float(rows.size)
            local = model.state_dict()
            for key in param_keys:
                deltas[key].add_(global_state[key] - local[key], alpha=n)
            for key in buffer_keys:
                buffers[key].add_(local[key], alpha=n)
            total += n
        if total > 0:
            for key in param_keys:
                global_state[key] = global_state[key] - deltas[key].div_(total)
            for key in buffer_keys:
                global_state[key] = buffers[key].div_(total)
        if r % eval_every == 0 or r == rounds:
            model.load_state_dict(global_state)
            curve.append((r, _accuracy(model, x_test, y_test)))
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    params = torch.cat([global_state[k].reshape(-1) for k in param_keys])
    return FloorResult(seconds=seconds, cpu_seconds=cpu_seconds, accuracy=curve[-1][1], curve=curve, params=params)
