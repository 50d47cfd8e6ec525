"""Local training on one client: mini-batch SGD on the flat parameter vector.

The step is PyTorch's SGD (weight decay added to the gradient, heavy-ball momentum, buffer fresh on every
client and round) written on the flat vector so algorithms can change the gradient (FedProx, SCAFFOLD),
the loss (FedIR, DapperFL), the inputs (HeteroSwitch) or act after each step (SWA, pruning masks) with
small hooks instead of copies of the loop.

Batches are gathered from the split's memory-mapped uint8 images (:func:`hetbench.train.data.gather_rows`)
and moved to the workspace's device, from pinned memory without blocking on CUDA; with ``amp`` the forward
pass runs under bf16 autocast (CUDA only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from hetbench.errors import HetbenchError
from hetbench.train.data import FederatedData, gather_rows
from hetbench.train.device import autocast, to_device
from hetbench.train.flat import FlatModel


class TrainingDiverged(HetbenchError):
    """The loss became NaN or infinite; the run stops (exit code 3)."""

    exit_code = 3


#: ``loss_fn(model, x, y, *loss_args) -> scalar loss``: ``x`` the normalised batch, ``y`` its labels and
#: ``loss_args`` the client's own tensors (FedIR's class weights). It must depend on the client only through
#: ``loss_args``, so that lockstep execution can apply one function to every client at once (a
#: ``functools.partial`` of a module-level function is the way to bind constants).
LossFn = Callable[..., torch.Tensor]


@dataclass
class LocalResult:
    steps: int
    mean_loss: float  # running mean of the mini-batch losses (HeteroSwitch Alg. 1 line 14)
    num_samples: int
    #: the momentum buffer after the last step (None without momentum): pass it back to ``local_sgd`` to
    #: continue the same optimisation (DapperFL's epochs around its pruning step)
    velocity: Any = None


class Workspace:
    """What every client of a run shares: the data, the working model (on ``device``) and its flat vectors.

    ``amp``: run forward passes under bf16 autocast (CUDA only; :func:`hetbench.train.device.check_amp`).
    ``params`` / ``buffers``: rows of stacked tensors to bind the model to (a slot of a
    :class:`~hetbench.train.lockstep.LockstepGroup`, which then computes this workspace's gradients together
    with its other slots'); by default the model gets flat vectors of its own.
    """

    def __init__(self, data: FederatedData, model: torch.nn.Module,
                 device: torch.device | str = "cpu", amp: bool = False,
                 params: torch.Tensor | None = None, buffers: torch.Tensor | None = None) -> None:
        self.data = data
        self.device = torch.device(device)
        self.amp = bool(amp)
        self.model = model.to(self.device)
        self.flat = FlatModel(self.model, params, buffers)
        #: the lockstep group this workspace is a slot of (None: it computes its own gradients)
        self.lockstep: Any = None
        self.slot = -1
        c = data.in_channels
        self.mean = torch.tensor(data.mean, dtype=torch.float32).reshape(1, c, 1, 1).to(self.device)
        self.std = torch.tensor(data.std, dtype=torch.float32).reshape(1, c, 1, 1).to(self.device)
        self.round = 0
        self.client = -1
        self.draw = 0  # which of the round's updates of this client (FedVC draws clients with replacement)

    def raw(self, x_u8: torch.Tensor) -> torch.Tensor:
        """uint8 images -> float in [0, 1]."""
        return x_u8.float().div_(255.0)

    def normalise(self, x01: torch.Tensor) -> torch.Tensor:
        return (x01 - self.mean) / self.std

    @property
    def pinned(self) -> bool:
        """Whether batches are staged in pinned memory (for non-blocking copies to a CUDA device)."""
        return self.device.type == "cuda"

    def autocast(self):
        """The forward pass's autocast context (bf16 with ``amp``, else none)."""
        return autocast(self.device, self.amp)

    def train_batch(self, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Training rows ``rows`` on the device: ([0, 1] float images, int64 labels)."""
        pin = self.pinned
        x = gather_rows(self.data.x_train, rows, pin)
        y = self.data.y_train.index_select(0, torch.from_numpy(np.asarray(rows, dtype=np.int64)))
        return self.raw(to_device(x, self.device)), to_device(y, self.device)

    def check_finite(self, value: float, what: str = "loss") -> None:
        if not math.isfinite(value):
            cid = int(self.data.client_ids[self.client]) if self.client >= 0 else -1
            where = f"round {self.round}, client {cid}" if cid >= 0 else f"round {self.round}"
            raise TrainingDiverged(f"training diverged: the {what} became {value} in {where}; lower `lr` and rerun")


def epoch_batches(rows: np.ndarray, batch_size: int, epochs: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``epochs`` shuffled passes over ``rows`` in mini-batches of ``batch_size`` (last one may be short)."""
    out: list[np.ndarray] = []
    for _ in range(epochs):
        perm = rows[rng.permutation(rows.size)]
        out.extend(perm[i : i + batch_size] for i in range(0, perm.size, batch_size))
    return out


def cross_entropy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy of ``model`` on the batch (FedAvg's client loss)."""
    return F.cross_entropy(model(x), y)


def _param_grads(flat: FlatModel, loss: torch.Tensor) -> list[torch.Tensor]:
    """The gradient of ``loss`` per parameter (zeros for parameters it does not reach), as new tensors."""
    grads = torch.autograd.grad(loss, flat.param_list, allow_unused=True)
    return [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, flat.param_list)]


def local_sgd(
    ws: Workspace,
    batches: list[np.ndarray],
    lr: float,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    loss_fn: LossFn = cross_entropy,
    grad_hook: Callable[[torch.Tensor], torch.Tensor] | None = None,
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    after_step: Callable[[int], None] | None = None,
    velocity: Any = None,
    loss_args: tuple[torch.Tensor, ...] = (),
) -> LocalResult:
    """Run one SGD step per batch on ``ws.flat.params`` in place; return the steps and mean batch loss.

    ``transform`` maps a [0, 1] batch to a [0, 1] batch before normalisation; ``grad_hook`` may change the
    flat gradient (it gets weight decay already added); ``after_step(i)`` runs after step ``i`` (0-based).
    ``velocity``: the momentum buffer of an earlier call (its ``LocalResult.velocity``) to continue from,
    so that two calls train as one continuous optimisation; by default the buffer starts at zero.
    ``loss_fn(model, x, y, *loss_args)`` is the loss of a batch (:data:`LossFn`).

    When ``ws`` is a slot of a :class:`~hetbench.train.lockstep.LockstepGroup`, the loss and its gradient
    come from the group, which computes them for every slot at the same step in one batched pass; the rest
    of the step (weight decay, ``grad_hook``, momentum, ``after_step``) runs here on this slot's row.
    """
    flat = ws.flat
    model = ws.model
    if not model.training:
        model.train()
    # Without a hook on the flat gradient, the step runs on the per-parameter gradients that autograd returns
    # (the same arithmetic, element by element, as on the flat vector, so the same bits) and skips
    # concatenating them into one vector on every step.
    per_tensor = grad_hook is None
    if momentum and velocity is not None:  # continue an earlier call's optimisation, in this call's layout
        if per_tensor and not isinstance(velocity, list):
            velocity = [velocity[a:b].view_as(p).clone() for p, (a, b) in zip(flat.param_list, flat.offsets)]
        elif not per_tensor and isinstance(velocity, list):
            velocity = torch.cat([v.reshape(-1) for v in velocity])
    elif momentum:
        velocity = [torch.zeros_like(p) for p in flat.param_list] if per_tensor else torch.zeros_like(flat.params)
    mean_loss = 0.0
    seen = 0
    for i, rows in enumerate(batches):
        x01, y = ws.train_batch(rows)
        if transform is not None:
            x01 = transform(x01)
        group = ws.lockstep
        if group is not None:  # the group computes every slot's loss and gradient of this step together
            value, g_parts = group.gradient(ws, ws.normalise(x01), y, loss_fn, loss_args)
            ws.check_finite(value)
        else:
            with ws.autocast():
                loss = loss_fn(model, ws.normalise(x01), y, *loss_args)
            value = float(loss.detach())
            ws.check_finite(value)
        if per_tensor:
            if group is not None:
                grads = g_parts
            else:
                grads = _param_grads(flat, loss)
            with torch.no_grad():
                if weight_decay:
                    torch._foreach_add_(grads, flat.param_list, alpha=weight_decay)
                if momentum:
                    torch._foreach_mul_(velocity, momentum)
                    torch._foreach_add_(velocity, grads)
                    grads = velocity
                torch._foreach_add_(flat.param_list, grads, alpha=-lr)
        else:
            g = torch.cat([t.reshape(-1) for t in g_parts]) if group is not None else flat.grad_of(loss)
            with torch.no_grad():
                if weight_decay:
                    g.add_(flat.params, alpha=weight_decay)
                g = grad_hook(g)
                if momentum:
                    velocity.mul_(momentum).add_(g)
                    g = velocity
                flat.params.add_(g, alpha=-lr)
        mean_loss = (mean_loss * i + value) / (i + 1)
        seen += rows.size
        if after_step is not None:
            after_step(i)
    return LocalResult(steps=len(batches), mean_loss=mean_loss, num_samples=seen, velocity=velocity if momentum else None)


@torch.no_grad()
def dataset_loss(ws: Workspace, rows: np.ndarray, batch_size: int = 512) -> float:
    """Mean cross-entropy of the current model on training ``rows`` (eval mode, no augmentation)."""
    model = ws.model
    was_training = model.training
    model.eval()
    total = 0.0
    for start in range(0, rows.size, batch_size):
        x01, y = ws.train_batch(rows[start : start + batch_size])
        with ws.autocast():
            total += float(F.cross_entropy(model(ws.normalise(x01)), y, reduction="sum"))
    model.train(was_training)
    return total / max(rows.size, 1)
