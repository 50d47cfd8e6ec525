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
no computation spent on it. A layer with batch statistics (BatchNorm in training mode) would mix the
padding rows into them: its statistics are taken over the real rows only (:mod:`hetbench.train.masked_norm`),
and each client's running statistics are rows of its own, updated in place under ``vmap``.

Which clients can train this way is declared by their algorithm: ``Algorithm.stacked`` and its
:meth:`~hetbench.train.algorithms.base.Algorithm.local_plan` (the batches and the gradient terms, as data).

Examples
--------
>>> import numpy as np, torch
>>> from hetbench.sweep import default_split
>>> from hetbench.train.data import load_federated
>>> from hetbench.train.models import build_model
>>> from hetbench.train.local_plan import LocalPlan
>>> from hetbench.train.stacked import StackedClients
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

from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from hetbench.errors import HetbenchError
from hetbench.train.data import gather_rows
from hetbench.train.device import autocast, to_device
from hetbench.train.local_plan import (IGNORE, STACKED_IMAGES, LocalPlan, StackedResult, has_batch_statistics,
                                       plans_share, round_layout)
from hetbench.train.lockstep import LossCall, loss_key
from hetbench.train.masked_norm import RowMask, mask_batch_norm


#: The most bytes of decoded training images a stacked engine keeps on a GPU, and at most half its free
#: memory: a split that fits (CIFAR-10's 50,000 images at 32 px are 154 MB) is copied there once, so a step
#: gathers its batch on the device instead of copying it from the host; a larger one is gathered on the host
#: as on a CPU.
RESIDENT_IMAGES_BYTES = 4 * 2**30


def resident_images(x_train: np.ndarray, device: torch.device, resident: bool | None = None) -> torch.Tensor | None:
    """The training images as one uint8 tensor on ``device``, or None to gather each step's rows on the host.

    ``resident`` None decides by the device: on a GPU when they fit :data:`RESIDENT_IMAGES_BYTES` and half the
    device's free memory; never on a CPU, where the memory-mapped cache already is host memory and a copy would
    only double it. True or False forces it (tests: the two paths give the same batches).

    Examples
    --------
    >>> import numpy as np, torch
    >>> x = np.zeros((4, 1, 8, 8), dtype=np.uint8)
    >>> resident_images(x, torch.device("cpu")) is None, resident_images(x, torch.device("cpu"), True).shape
    (True, torch.Size([4, 1, 8, 8]))
    """
    if resident is None:
        if device.type != "cuda":
            return None
        free, _ = torch.cuda.mem_get_info(device)
        resident = x_train.nbytes <= min(RESIDENT_IMAGES_BYTES, free // 2)
    if not resident:
        return None
    out = torch.empty(x_train.shape, dtype=torch.uint8, device=device)
    step = max(1, (64 << 20) // max(1, x_train[:1].nbytes))  # copied in pieces of about 64 MB
    for at in range(0, x_train.shape[0], step):
        out[at : at + step].copy_(torch.from_numpy(np.array(x_train[at : at + step])))
    return out


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
    resident : bool, optional
        Keep the training images on the device (:func:`resident_images`; None: where they fit a GPU).
    """

    def __init__(self, data, make_model: Callable[[], nn.Module], device: torch.device, amp: bool = False,
                 resident: bool | None = None) -> None:
        self.data = data
        self.device = torch.device(device)
        self.amp = bool(amp)
        #: the training images as one uint8 tensor on the device (None: gathered from the host every step)
        self.images = resident_images(data.x_train, self.device, resident)
        self.base = make_model().to(self.device)
        self.base.train()
        #: BatchNorm layers compute their statistics over a client's real rows only (padding rows are masked)
        self.rows = RowMask()
        self.masked = has_batch_statistics(self.base)
        if self.masked:
            mask_batch_norm(self.base, self.rows)
        params = list(self.base.parameters())
        self.names = [n for n, _ in self.base.named_parameters()]
        self.shapes = [tuple(p.shape) for p in params]
        sizes = [p.numel() for p in params]
        self.bounds = list(zip(np.cumsum([0] + sizes[:-1]).tolist(), np.cumsum(sizes).tolist()))
        self.size = int(sum(sizes))
        #: the float buffers in the flat buffer order (FlatModel's): BatchNorm's running statistics are each
        #: client's own, stacked per round; other buffers are the same for every client, loaded from the run's
        #: global ones at the start of each round
        self.buffers = {n: b for n, b in self.base.named_buffers()}
        self.float_buffers = [(n, b) for n, b in self.base.named_buffers() if b.is_floating_point()]
        c = data.in_channels
        self.mean = torch.tensor(data.mean, dtype=torch.float32).reshape(1, c, 1, 1).to(self.device)
        self.std = torch.tensor(data.std, dtype=torch.float32).reshape(1, c, 1, 1).to(self.device)
        base, buffers, rows = self.base, self.buffers, self.rows

        def logits(p: dict, b: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            with rows.set((y != IGNORE).to(x.dtype)):
                return functional_call(base, {**buffers, **p, **b}, (x,))

        def loss(p: dict, b: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(logits(p, b, x, y), y, ignore_index=IGNORE)

        self._b_dim = 0 if self.masked else None  # each client's own running statistics, or the shared buffers
        self._step = vmap(grad_and_value(loss), in_dims=(0, self._b_dim, 0, 0), randomness="error")
        self._call = LossCall(self.base)
        self.batched_calls = 0  # batched passes computed (for the results' timing block)
        self.client_steps = 0  # client steps they covered

    def _views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Per parameter, the ``(C, *shape)`` view of the stacked rows ``flat``."""
        k = flat.shape[0]
        return [flat[:, a:b].view(k, *shape) for (a, b), shape in zip(self.bounds, self.shapes)]

    def _load_buffers(self, buffers: torch.Tensor) -> None:
        """The run's buffers, the same for every client (FlatModel's order: the float ones)."""
        vec, at = buffers.to(self.device, torch.float32), 0
        with torch.no_grad():
            for _, b in self.float_buffers:
                b.copy_(vec[at : at + b.numel()].view_as(b))
                at += b.numel()

    def _images(self, rows: np.ndarray | torch.Tensor, clients: int, isp: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> torch.Tensor:
        """Training rows as normalised float images on the device, ``(clients, rows / clients, C, H, W)``;
        ``isp``: per image, the random ISP's gains ``(clients, B, C)`` and gamma ``(clients, B)``, applied to
        the [0, 1] images first (:func:`hetbench.train.algorithms.heteroswitch.random_isp`'s arithmetic)."""
        if self.images is not None:
            index = rows if isinstance(rows, torch.Tensor) else torch.from_numpy(np.asarray(rows, dtype=np.int64))
            x = self.images.index_select(0, index.to(self.device))
        else:
            x = to_device(gather_rows(self.data.x_train, rows, self.device.type == "cuda"), self.device)
        x = x.float().div_(255.0).view(clients, -1, *self.data.x_train.shape[1:])
        if isp is not None:
            gains, gamma = isp
            x = (x * gains[..., None, None]).clamp_(0.0, 1.0).pow_(gamma[..., None, None, None])
        return (x - self.mean) / self.std

    def _isp_layout(self, plans: Sequence[LocalPlan], order: np.ndarray, shape: tuple[int, int, int]
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The plans' random ISP draws as ``(steps, C, B, channels)`` gains and ``(steps, C, B)`` gammas in
        training order, ones (the identity, bit for bit) for clients without them and for padding rows."""
        steps, k, width = shape
        gains = torch.ones(steps, k, width, self.data.in_channels)
        gamma = torch.ones(steps, k, width)
        for c, j in enumerate(order.tolist()):  # before the step loop, as round_layout
            for s, (r, g) in enumerate(plans[j].isp_draws or ()):
                gains[s, c, : r.shape[0]] = r.reshape(r.shape[0], -1)
                gamma[s, c, : g.shape[0]] = g.reshape(-1)
        return gains.to(self.device), gamma.to(self.device)

    @torch.no_grad()
    def initial_losses(self, plans: Sequence[LocalPlan], start: torch.Tensor, buffers: torch.Tensor) -> list[float]:
        """Each plan's mean cross-entropy over its ``loss_rows`` at ``start`` (and ``buffers``), in evaluation
        mode: every client starts from the same model, so all their rows pass through it together (in passes
        of :data:`STACKED_IMAGES` rows) and the per-row losses are summed per client
        (:func:`hetbench.train.local.dataset_loss`, for a chunk)."""
        if any(p.start_params is not None or p.start_buffers is not None for p in plans):
            raise HetbenchError("a stacked round computes initial losses for clients that start from one model")
        if buffers.numel():
            self._load_buffers(buffers)
        rows = [np.asarray(p.loss_rows, dtype=np.int64) for p in plans]
        sizes = np.array([r.size for r in rows])
        every = np.concatenate(rows)
        owner = torch.from_numpy(np.repeat(np.arange(len(rows)), sizes)).to(self.device)
        flat = start.to(self.device, torch.float32)
        weights = {n: flat[a:b].view(shape) for n, (a, b), shape in zip(self.names, self.bounds, self.shapes)}
        labels = self.data.y_train
        total = torch.zeros(len(rows), dtype=torch.float64, device=self.device)
        width = STACKED_IMAGES["cpu" if self.device.type == "cpu" else "cuda"]
        self.base.eval()  # BatchNorm on its running statistics, as dataset_loss
        try:
            for at in range(0, every.size, width):
                part = every[at : at + width]
                y = to_device(labels.index_select(0, torch.from_numpy(part)), self.device)
                with autocast(self.device, self.amp):
                    logits = functional_call(self.base, {**self.buffers, **weights}, (self._images(part, 1)[0],))
                total.index_add_(0, owner[at : at + part.size],
                                 F.cross_entropy(logits.float(), y, reduction="none").double())
        finally:
            self.base.train()
        return (total / torch.from_numpy(np.maximum(sizes, 1)).to(self.device)).tolist()

    def train(self, plans: Sequence[LocalPlan], start: torch.Tensor, buffers: torch.Tensor, lr: float,
              momentum: float = 0.0, weight_decay: float = 0.0, anchor: torch.Tensor | None = None,
              initial_loss: list[float] | None = None, keep_velocity: bool = False) -> StackedResult:
        """Train every plan from the flat parameters ``start`` (and ``buffers``, kept); returns each client's
        result. ``anchor`` is FedProx's ``w_global`` (default: ``start``); ``initial_loss``: the plans'
        :meth:`initial_losses`, where the caller computed them already; ``keep_velocity``: return the momentum
        buffers (:attr:`StackedResult.velocity`), for a later call that goes on with the same optimisation.

        The step is :func:`hetbench.train.local.local_sgd`'s: ``g += weight_decay * w``, ``g += mu (w -
        anchor)``, then the plan's ``grad_offset`` (SCAFFOLD's ``c - c_i``; the gradient summed before it),
        ``v = momentum * v + g`` and ``w -= lr * v`` (PyTorch's SGD, buffer fresh each round).
        """
        idx, real, order, live = round_layout(plans)
        uses = {name: plans_share(plans, name) for name in ("grad_offset", "sum_gradients", "loss_fn", "loss_rows")}
        if buffers.numel():
            self._load_buffers(buffers)
        initial = initial_loss if initial_loss is not None or not uses["loss_rows"] else \
            self.initial_losses(plans, start, buffers)
        steps, k, _ = idx.shape
        labels = self.data.y_train.numpy()[idx]
        labels[~real] = IGNORE
        labels_t = to_device(torch.from_numpy(labels), self.device)
        index = torch.from_numpy(idx).to(self.device) if self.images is not None else None  # one copy a round
        flat = self._rows(start, plans, order, "start_params")  # rows in training order
        params = self._views(flat)
        own = self._own_buffers(buffers, plans, order)  # each client's running statistics (BatchNorm)
        mus = np.array([p.prox_mu for p in plans], dtype=np.float64)
        prox = bool(mus.any())
        if prox:
            if not (mus == mus[0]).all():
                raise HetbenchError("the clients of a stacked round share one proximal weight mu")
            centre = (start if anchor is None else anchor).to(self.device, torch.float32).reshape(1, -1)
            centres = [centre[:, a:b].view(1, *shape) for (a, b), shape in zip(self.bounds, self.shapes)]
        offsets = self._views(self._stack(plans, order, "grad_offset")) if uses["grad_offset"] else None
        sums = torch.zeros_like(flat) if uses["sum_gradients"] else None
        sum_views = self._views(sums) if sums is not None else None
        step, loss_args = self._step, ()
        if uses["loss_fn"]:
            step = self._loss_step(plans)
            loss_args = tuple(torch.stack([plans[j].loss_args[i] for j in order.tolist()]).to(self.device)
                              for i in range(len(plans[0].loss_args)))
        masks = self._views(self._stack(plans, order, "mask")) if plans_share(plans, "mask") else None
        isp = self._isp_layout(plans, order, idx.shape) if any(p.isp_draws for p in plans) else None
        averages = flat.clone() if any(p.average_weights for p in plans) else None
        velocity_rows = self._rows(torch.zeros_like(start), plans, order, "start_velocity") if momentum else None
        velocity = self._views(velocity_rows) if momentum else None
        loss_sum = torch.zeros(k, dtype=torch.float32, device=self.device)
        for s in range(steps):
            n = int(live[s])  # the clients still training: a prefix of the training order, views of its rows
            rows = params if n == k else [p[:n] for p in params]
            draws = None if isp is None else (isp[0][s, :n], isp[1][s, :n])
            x = self._images((idx if index is None else index)[s, :n].reshape(-1), n, draws)
            with autocast(self.device, self.amp):
                # the live prefix's statistics: separate tensors (an in-place update of a view under vmap would
                # not reach its base), copied back below
                b = own if n == k else {name: t[:n].clone() for name, t in own.items()}
                grads, values = step(dict(zip(self.names, rows)), b, x, labels_t[s, :n], *(a[:n] for a in loss_args))
            g = [grads[name] if grads[name].dtype == torch.float32 else grads[name].float() for name in self.names]
            with torch.no_grad():
                if n < k:
                    for name, t in own.items():
                        t[:n].copy_(b[name])
                if weight_decay:
                    torch._foreach_add_(g, rows, alpha=weight_decay)
                if prox:
                    torch._foreach_add_(g, torch._foreach_sub(rows, centres), alpha=float(mus[0]))
                if sum_views is not None:
                    torch._foreach_add_(sum_views if n == k else [t[:n] for t in sum_views], g)
                if offsets is not None:
                    torch._foreach_add_(g, offsets if n == k else [t[:n] for t in offsets])
                if velocity is not None:
                    v = velocity if n == k else [t[:n] for t in velocity]
                    torch._foreach_mul_(v, momentum)
                    torch._foreach_add_(v, g)
                    g = v
                torch._foreach_add_(rows, g, alpha=-lr)
                if masks is not None:  # a pruned weight stays 0 (DapperFL re-masks after every step)
                    torch._foreach_mul_(rows, masks if n == k else [t[:n] for t in masks])
                (loss_sum if n == k else loss_sum[:n]).add_(values.float())
                if averages is not None:  # W_SWA <- (W_SWA s + W) / (s + 1): the step index s is every live client's
                    averages[:n].mul_(s / (s + 1)).add_(flat[:n], alpha=1.0 / (s + 1))
            self.batched_calls += 1
        self.client_steps += int(live.sum())
        back = torch.from_numpy(np.argsort(order)).to(self.device)  # training order -> plan order
        if (order == np.arange(k)).all():  # the plans' own order (clients of equal steps): no copy of the rows
            def unorder(t: torch.Tensor) -> torch.Tensor:
                return t
        else:
            def unorder(t: torch.Tensor) -> torch.Tensor:
                return t.index_select(0, back)
        flat = unorder(flat)
        counts = [len(p.batches) for p in plans]
        means = (unorder(loss_sum) / torch.tensor(counts, dtype=torch.float32, device=self.device)).tolist()
        if own:
            out_buffers = unorder(torch.cat([own[name].reshape(k, -1) for name, _ in self.float_buffers], dim=1))
        else:
            out_buffers = buffers.reshape(1, -1).expand(k, -1).clone() if buffers.numel() else buffers.reshape(1, 0).expand(k, 0)
        return StackedResult(params=flat, buffers=out_buffers, steps=counts, mean_loss=means,
                             num_samples=[p.num_samples for p in plans],
                             grad_sums=unorder(sums) if sums is not None else None,
                             initial_loss=initial,
                             averages=unorder(averages) if averages is not None else None,
                             velocity=unorder(velocity_rows) if keep_velocity and momentum else None)

    def _rows(self, common: torch.Tensor, plans: Sequence[LocalPlan], order: np.ndarray, name: str) -> torch.Tensor:
        """``common`` as one row per plan, in training order, with the rows of plans that set ``name`` (a start
        of their own: FedBN's normalisation entries) replaced by theirs."""
        rows = common.to(self.device, torch.float32).reshape(1, -1).expand(len(plans), -1).clone()
        at = [c for c, j in enumerate(order.tolist()) if getattr(plans[j], name) is not None]
        if at:
            own = torch.stack([getattr(plans[j], name) for j in order[at].tolist()]).to(self.device, torch.float32)
            rows.index_copy_(0, torch.tensor(at, device=self.device), own)
        return rows

    def _own_buffers(self, buffers: torch.Tensor, plans: Sequence[LocalPlan], order: np.ndarray) -> dict:
        """Per float buffer of a model with batch statistics, each client's own ``(C, *shape)`` tensor (separate
        tensors, updated in place by the masked BatchNorm layers); {} for other models, whose buffers all
        clients share."""
        if not self.masked:
            if any(p.start_buffers is not None and p.start_buffers.numel() for p in plans):
                raise HetbenchError("clients of a stacked round keep buffers of their own only with batch statistics")
            return {}
        rows, at, out = self._rows(buffers, plans, order, "start_buffers"), 0, {}
        for name, b in self.float_buffers:
            out[name] = rows[:, at : at + b.numel()].reshape(len(plans), *b.shape).clone()
            at += b.numel()
        return out

    def _loss_step(self, plans: Sequence[LocalPlan]) -> Callable:
        """The vmapped gradient of the plans' own ``loss_fn(model, x, y, *loss_args)`` (one function for every
        client: DapperFL's DAR objective, FedIR's weighted loss); the loss must leave padding rows out."""
        loss_fn = plans[0].loss_fn
        if any(loss_key(p.loss_fn) != loss_key(loss_fn) for p in plans):
            raise HetbenchError("the clients of a stacked round share one loss function")
        call, rows, n_args = self._call, self.rows, len(plans[0].loss_args)

        def loss(p: dict, b: dict, x: torch.Tensor, y: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
            state = {f"base.{name}": t for name, t in {**p, **b}.items()}
            with rows.set((y != IGNORE).to(x.dtype)):
                return functional_call(call, state, (loss_fn, x, y, *args))

        return vmap(grad_and_value(loss), in_dims=(0, self._b_dim, 0, 0) + (0,) * n_args, randomness="error")

    def _stack(self, plans: Sequence[LocalPlan], order: np.ndarray, name: str) -> torch.Tensor:
        """The plans' tensors ``name`` as the rows of one tensor on the device, in training order."""
        return torch.stack([getattr(plans[j], name) for j in order.tolist()]).to(self.device, torch.float32)

    def close(self) -> None:
        """Nothing to stop: a stacked computation starts no thread (the pool closes every group it holds)."""
