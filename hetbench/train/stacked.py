"""A round's clients as one computation: stacked parameters, one batched pass and one fused update per step.

The clients of a lockstep chunk start from the same model; their parameters live as the rows of one
``(C, size)`` tensor, viewed per parameter as ``(C, *shape)`` tensors. A local step is

1. one gather of every client's mini-batch (the round's sample indices are laid out as one
   ``(steps, C, B)`` array before the step loop, labels likewise);
2. one ``vmap(grad_and_value(loss))`` over the stacked parameters and the ``(C, B, ...)`` inputs
   (:mod:`torch.func`; a convolution becomes a grouped one, a linear layer a ``bmm``);
3. one fused SGD update over the stacked tensors with ``torch._foreach_*``: weight decay, FedProx's proximal
   term, heavy-ball momentum and the step, exactly the element-wise arithmetic of
   :func:`hetbench.train.local.local_sgd`, with no optimizer object per client.

There is no Python loop over clients and no thread inside the step loop, so the ATen operations a step
dispatches do not grow with the clients (``benchmarks/trainer_dispatch.py``).

Clients of different sizes
--------------------------
A client with fewer rows than the batch size, or a short last batch, is *padded*: the missing rows repeat one
of its rows and carry the label -100, which ``F.cross_entropy`` ignores (its mean runs over the other rows),
so the loss and gradient are those of the real rows. The clients train in order of their steps, most
first, so the clients still training at a step are a prefix of the rows: a step computes that prefix (views
of the stacked tensors, no copy) and a finished client's row is left exactly as its last step left it, with
no computation spent on it. Padding needs
every layer to treat a row on its own: a model with batch statistics (BatchNorm in training mode) would mix
the padded rows into them, so those models keep the thread group (:mod:`hetbench.train.lockstep`), which
batches only equal shapes (:func:`stacked_refusal`).

Which clients can train this way is declared by their algorithm: ``Algorithm.stacked`` and its
:meth:`~hetbench.train.algorithms.base.Algorithm.local_plan` (the batches and the gradient terms, as data).

Examples
--------
>>> import numpy as np, torch
>>> from hetbench.sweep import default_split
>>> from hetbench.train.data import load_federated
>>> from hetbench.train.models import build_model
>>> from hetbench.train.stacked import LocalPlan, StackedClients
>>> data = load_federated(default_split(quiet=True), quiet=True)
>>> make = lambda: build_model("digits-cnn", data.in_channels, data.num_classes, data.image_size, "group")
>>> engine = StackedClients(data, make, torch.device("cpu"))
>>> start = torch.cat([p.detach().reshape(-1) for p in make().parameters()])
>>> plans = [LocalPlan([data.client_rows[0][:8], data.client_rows[0][8:11]]), LocalPlan([data.client_rows[1][:5]])]
>>> out = engine.train(plans, start, torch.zeros(0), lr=0.05)
>>> out.params.shape[0], out.steps, out.num_samples
(2, [2, 1], [11, 5])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hetbench.errors import HetbenchError
from hetbench.train.data import gather_rows
from hetbench.train.device import autocast, to_device

#: the label of a padding row: ``F.cross_entropy`` leaves it out of the mean
IGNORE = -100


@dataclass
class LocalPlan:
    """One client's local SGD as data, so that a round's clients can be trained as one computation.

    Parameters
    ----------
    batches : list of numpy.ndarray
        The training rows of each step, in order (:meth:`Algorithm.batches`).
    prox_mu : float
        FedProx's proximal weight mu: the gradient gets ``mu (w - w_global)`` (Li et al. 2020, Eq. 2); 0: none.
    """

    batches: list[np.ndarray]
    prox_mu: float = 0.0

    @property
    def num_samples(self) -> int:
        return int(sum(b.size for b in self.batches))


@dataclass
class StackedResult:
    """What :meth:`StackedClients.train` returns: each client's parameters and buffers (rows), steps, mean
    mini-batch loss and training samples, in plan order."""

    params: torch.Tensor
    buffers: torch.Tensor
    steps: list[int]
    mean_loss: list[float]
    num_samples: list[int]


def has_batch_statistics(model: nn.Module) -> bool:
    """Whether a layer of ``model`` normalises with its batch's statistics in training (BatchNorm).

    Examples
    --------
    >>> from hetbench.train.models import build_model
    >>> has_batch_statistics(build_model("resnet10", 3, 10, 32, "group"))
    False
    >>> has_batch_statistics(build_model("resnet10", 3, 10, 32, "batch"))
    True
    """
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def stacked_refusal(algorithm, model: nn.Module) -> str | None:
    """Why a lockstep run cannot train its clients as one stacked computation (None: it can); it then uses the
    thread group of :mod:`hetbench.train.lockstep`.

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> from hetbench.train.models import build_model
    >>> stacked_refusal(make_algorithm("fedprox"), build_model("digits-cnn", 1, 10, 8, "group")) is None
    True
    >>> stacked_refusal(make_algorithm("fedavg"), build_model("resnet10", 3, 10, 32, "batch"))
    'the model normalises with batch statistics (padded rows would enter them)'
    """
    if not getattr(algorithm, "stacked", False):
        return f"{algorithm.name}'s client update is code of its own, not a local plan"
    if has_batch_statistics(model):
        return "the model normalises with batch statistics (padded rows would enter them)"
    return None


#: Images per stacked step at most (clients x batch size): a round's clients train as one computation up to
#: this many, in chunks of whole clients beyond it, so the activations of one step stay bounded. On a CPU one
#: chunk keeps one core busy (a round bigger than the bound gives the other workers chunks of their own). The
#: GPU bound is a first setting, not yet measured on a GPU (the probe script records peak memory there).
STACKED_IMAGES = {"cpu": 2048, "cuda": 8192}


def stacked_chunk(device: torch.device, clients_per_round: int, batch_size: int) -> int:
    """Clients per stacked computation: the round's, up to :data:`STACKED_IMAGES` images a step. It depends on
    the device and the options only, never on the workers, so a client's update does not either.

    Examples
    --------
    >>> import torch
    >>> stacked_chunk(torch.device("cpu"), 50, 10), stacked_chunk(torch.device("cpu"), 500, 10)
    (50, 204)
    """
    cap = STACKED_IMAGES["cpu" if device.type == "cpu" else "cuda"]
    return max(1, min(int(clients_per_round), cap // max(1, int(batch_size))))


def round_layout(plans: Sequence[LocalPlan]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The round laid out before its step loop: ``idx``, the sample indices as one ``(steps, C, B)`` array with
    the clients in *training order* (most steps first, ties in plan order); ``real``, which of them are real
    rows (the others pad a short batch); ``order``, the plan position of each row; ``live``, how many clients
    still train at each step (a prefix of the rows). See the module's *Clients of different sizes*.

    Examples
    --------
    >>> import numpy as np
    >>> idx, real, order, live = round_layout([LocalPlan([np.array([9])]),
    ...                                        LocalPlan([np.array([4, 5]), np.array([6])])])
    >>> order.tolist(), live.tolist()
    ([1, 0], [2, 1])
    >>> idx[:, 0].tolist(), real[:, 0].astype(int).tolist()  # the two-step client, its short batch padded
    ([[4, 5], [6, 6]], [[1, 1], [1, 0]])
    """
    if not plans or any(not p.batches or any(b.size == 0 for b in p.batches) for p in plans):
        raise HetbenchError("every client of a stacked round needs at least one non-empty batch")
    counts = np.array([len(p.batches) for p in plans])
    order = np.argsort(-counts, kind="stable")
    steps = int(counts.max())
    width = max(b.size for p in plans for b in p.batches)
    idx = np.zeros((steps, len(plans), width), dtype=np.int64)
    real = np.zeros((steps, len(plans), width), dtype=bool)
    for c, j in enumerate(order.tolist()):  # index arithmetic before the step loop; the steps loop over no client
        for s, rows in enumerate(plans[j].batches):
            idx[s, c, : rows.size] = rows
            idx[s, c, rows.size :] = rows[0]
            real[s, c, : rows.size] = True
    live = (counts[None, :] > np.arange(steps)[:, None]).sum(axis=1)
    return idx, real, order, live


class StackedClients:
    """Trains a chunk of clients as one computation (see the module).

    Parameters
    ----------
    data : FederatedData
        The run's data.
    make_model : callable
        Builds a model of the run's architecture (the base ``functional_call`` binds the stacked rows to).
    device : torch.device
        Where the stacked tensors live.
    amp : bool
        bf16 autocast of the batched forward pass (CUDA only).
    """

    def __init__(self, data, make_model: Callable[[], nn.Module], device: torch.device, amp: bool = False) -> None:
        from torch.func import functional_call, grad_and_value, vmap

        self.data = data
        self.device = torch.device(device)
        self.amp = bool(amp)
        self.base = make_model().to(self.device)
        self.base.train()
        if has_batch_statistics(self.base):
            raise HetbenchError("stacked clients need a model without batch statistics")
        params = list(self.base.parameters())
        self.names = [n for n, _ in self.base.named_parameters()]
        self.shapes = [tuple(p.shape) for p in params]
        sizes = [p.numel() for p in params]
        self.bounds = list(zip(np.cumsum([0] + sizes[:-1]).tolist(), np.cumsum(sizes).tolist()))
        self.size = int(sum(sizes))
        #: buffers (none are updated by a model without batch statistics): the same for every client, loaded
        #: from the run's global ones at the start of each round; the float ones in the flat buffer order
        self.buffers = {n: b for n, b in self.base.named_buffers()}
        self.float_buffers = [b for b in self.base.buffers() if b.is_floating_point()]
        c = data.in_channels
        self.mean = torch.tensor(data.mean, dtype=torch.float32).reshape(1, c, 1, 1).to(self.device)
        self.std = torch.tensor(data.std, dtype=torch.float32).reshape(1, c, 1, 1).to(self.device)
        base, buffers = self.base, self.buffers

        def loss(p: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(functional_call(base, {**p, **buffers}, (x,)), y, ignore_index=IGNORE)

        self._step = vmap(grad_and_value(loss), in_dims=(0, 0, 0), randomness="error")
        self.batched_calls = 0  # batched passes computed (for the results' timing block)
        self.client_steps = 0  # client steps they covered

    def _views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Per parameter, the ``(C, *shape)`` view of the stacked rows ``flat``."""
        k = flat.shape[0]
        return [flat[:, a:b].view(k, *shape) for (a, b), shape in zip(self.bounds, self.shapes)]

    def train(self, plans: Sequence[LocalPlan], start: torch.Tensor, buffers: torch.Tensor, lr: float,
              momentum: float = 0.0, weight_decay: float = 0.0, anchor: torch.Tensor | None = None) -> StackedResult:
        """Train every plan from the flat parameters ``start`` (and ``buffers``, kept); returns each client's
        result. ``anchor`` is FedProx's ``w_global`` (default: ``start``).

        The step is :func:`hetbench.train.local.local_sgd`'s: ``g += weight_decay * w``, ``g += mu (w -
        anchor)``, ``v = momentum * v + g`` and ``w -= lr * v`` (PyTorch's SGD, buffer fresh each round).
        """
        idx, real, order, live = round_layout(plans)
        if buffers.numel():  # the run's buffers, the same for every client (FlatModel's order: the float ones)
            vec, at = buffers.to(self.device, torch.float32), 0
            with torch.no_grad():
                for b in self.float_buffers:
                    b.copy_(vec[at : at + b.numel()].view_as(b))
                    at += b.numel()
        steps, k, _ = idx.shape
        labels = self.data.y_train.numpy()[idx]
        labels[~real] = IGNORE
        labels_t = to_device(torch.from_numpy(labels), self.device)
        flat = start.to(self.device, torch.float32).reshape(1, -1).expand(k, -1).clone()  # rows in training order
        params = self._views(flat)
        mus = np.array([p.prox_mu for p in plans], dtype=np.float64)
        prox = bool(mus.any())
        if prox:
            if not (mus == mus[0]).all():
                raise HetbenchError("the clients of a stacked round share one proximal weight mu")
            centre = (start if anchor is None else anchor).to(self.device, torch.float32).reshape(1, -1)
            centres = [centre[:, a:b].view(1, *shape) for (a, b), shape in zip(self.bounds, self.shapes)]
        velocity = [torch.zeros_like(p) for p in params] if momentum else None
        loss_sum = torch.zeros(k, dtype=torch.float32, device=self.device)
        pin = self.device.type == "cuda"
        x_shape = self.data.x_train.shape[1:]
        for s in range(steps):
            n = int(live[s])  # the clients still training: a prefix of the training order, views of its rows
            rows = params if n == k else [p[:n] for p in params]
            x = to_device(gather_rows(self.data.x_train, idx[s, :n].reshape(-1), pin), self.device)
            x = ((x.float().div_(255.0) - self.mean) / self.std).view(n, -1, *x_shape)
            with autocast(self.device, self.amp):
                grads, values = self._step(dict(zip(self.names, rows)), x, labels_t[s, :n])
            g = [grads[name] if grads[name].dtype == torch.float32 else grads[name].float() for name in self.names]
            with torch.no_grad():
                if weight_decay:
                    torch._foreach_add_(g, rows, alpha=weight_decay)
                if prox:
                    torch._foreach_add_(g, torch._foreach_sub(rows, centres), alpha=float(mus[0]))
                if velocity is not None:
                    v = velocity if n == k else [t[:n] for t in velocity]
                    torch._foreach_mul_(v, momentum)
                    torch._foreach_add_(v, g)
                    g = v
                torch._foreach_add_(rows, g, alpha=-lr)
                (loss_sum if n == k else loss_sum[:n]).add_(values.float())
            self.batched_calls += 1
        self.client_steps += int(live.sum())
        back = torch.from_numpy(np.argsort(order)).to(self.device)  # training order -> plan order
        flat = flat.index_select(0, back)
        counts = [len(p.batches) for p in plans]
        means = (loss_sum.index_select(0, back) / torch.tensor(counts, dtype=torch.float32, device=self.device)).tolist()
        out_buffers = buffers.reshape(1, -1).expand(k, -1).clone() if buffers.numel() else buffers.reshape(1, 0).expand(k, 0)
        return StackedResult(params=flat, buffers=out_buffers, steps=counts, mean_loss=means,
                             num_samples=[p.num_samples for p in plans])

    def close(self) -> None:
        """Nothing to stop: a stacked computation starts no thread (the pool closes every group it holds)."""
