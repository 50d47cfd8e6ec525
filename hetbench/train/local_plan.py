"""A client's local training as data, and a round of such plans laid out for one stacked computation.

:class:`LocalPlan` is what an algorithm declares a client trains (``Algorithm.local_plan``): its batches and
the terms its gradient, loss, inputs or weights take. :func:`round_layout` lays a chunk of plans out before
the step loop (one ``(steps, C, B)`` index array, the padding, the order clients train in), and
:class:`StackedResult` is what the stacked engine (:mod:`hetbench.train.stacked`) returns. Which runs can
train this way, and in chunks of how many clients, is decided here too (:func:`stacked_refusal`,
:func:`stacked_chunk`).

Examples
--------
>>> import numpy as np
>>> plan = LocalPlan([np.array([3, 4]), np.array([5])], prox_mu=0.1)
>>> plan.num_samples
3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from hetbench.errors import HetbenchError

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
    grad_offset : torch.Tensor, optional
        A flat vector added to every gradient after weight decay and the proximal term, before momentum:
        SCAFFOLD's correction ``c - c_i`` (Karimireddy et al. 2020, Alg. 1 line 10).
    sum_gradients : bool
        Return the sum of the client's gradients, taken before ``grad_offset`` is added
        (:attr:`StackedResult.grad_sums`; SCAFFOLD's option II control variate is their mean).
    loss_fn, loss_args : callable and tuple of torch.Tensor
        The batch loss ``loss_fn(model, x, y, *loss_args)`` instead of the mean cross-entropy (FedIR's
        importance-weighted loss, DapperFL's DAR objective): one function for every client of the round, the
        arguments the client's own tensors. Rows labelled :data:`IGNORE` pad a short batch: the loss must
        leave them out (``F.cross_entropy`` with its default ``ignore_index`` does).
    loss_rows : numpy.ndarray, optional
        Training rows whose mean cross-entropy at the start model is returned
        (:attr:`StackedResult.initial_loss`; q-FedAvg's ``F_k(w_t)``, Li et al. 2020, Alg. 2).
    isp_draws : list of (torch.Tensor, torch.Tensor), optional
        Per batch, the per-image channel gains ``(b, C)`` and gamma ``(b,)`` of HeteroSwitch's random ISP
        (Kim et al. 2024, Eq. 2-3): the [0, 1] images become ``clamp(x r, 0, 1) ** gamma`` before normalisation.
    average_weights : bool
        Keep the running average of the weights after every step (HeteroSwitch's SWA, Alg. 1 line 17;
        :attr:`StackedResult.averages`).
    start_params, start_buffers : torch.Tensor, optional
        Flat parameters and float buffers the client starts from instead of the round's global model: FedBN's
        client puts its own normalisation entries in (Li et al. 2021, Alg. 1). Buffers of its own need a
        model with batch statistics (they are its BatchNorm running statistics).
    start_velocity : torch.Tensor, optional
        The momentum buffer to start from (an earlier call's :attr:`StackedResult.velocity` row), so two calls
        train as one optimisation (DapperFL's epochs around its pruning step); zeros by default.
    mask : torch.Tensor, optional
        A flat 0/1 vector the parameters are multiplied by after every step (DapperFL's pruning mask M).

    The plans of a stacked round all set ``grad_offset``, ``sum_gradients``, ``loss_fn``, ``loss_rows`` and
    ``mask``, or none does, and share one ``prox_mu`` and one ``loss_fn`` (the clients of one algorithm do);
    the other options may differ between clients (HeteroSwitch's switch 1, FedBN's own entries).
    """

    batches: list[np.ndarray]
    prox_mu: float = 0.0
    grad_offset: torch.Tensor | None = None
    sum_gradients: bool = False
    loss_fn: Callable[..., torch.Tensor] | None = None
    loss_args: tuple[torch.Tensor, ...] = ()
    loss_rows: np.ndarray | None = None
    isp_draws: list[tuple[torch.Tensor, torch.Tensor]] | None = None
    average_weights: bool = False
    start_params: torch.Tensor | None = None
    start_buffers: torch.Tensor | None = None
    start_velocity: torch.Tensor | None = None
    mask: torch.Tensor | None = None

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
    #: ``(C, size)``: each client's sum of gradients (plans with ``sum_gradients``), else None
    grad_sums: torch.Tensor | None = None
    #: each client's mean loss over its ``loss_rows`` at the start model (plans with ``loss_rows``), else None
    initial_loss: list[float] | None = None
    #: ``(C, size)``: each client's running average of its weights after every step (any plan with
    #: ``average_weights``; computed for every client then), else None
    averages: torch.Tensor | None = None
    #: ``(C, size)``: each client's momentum buffer at the end (``keep_velocity``), else None
    velocity: torch.Tensor | None = None


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
    thread group of :mod:`hetbench.train.lockstep`. BatchNorm layers train masked
    (:mod:`hetbench.train.masked_norm`), which needs their momentum and running statistics.

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> from hetbench.train.models import build_model
    >>> stacked_refusal(make_algorithm("fedbn"), build_model("resnet10", 3, 10, 32, "batch")) is None
    True
    >>> stacked_refusal(make_algorithm("dapperfl"), build_model("digits-cnn", 1, 10, 8, "group")) is None
    True
    """
    if not getattr(algorithm, "stacked", False):
        return f"{algorithm.name}'s client update is code of its own, not a local plan"
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and (m.momentum is None or not m.track_running_stats):
            return "a BatchNorm layer keeps no running statistics with a momentum (the masked form needs both)"
    return None


#: Images per stacked step at most (clients x images a client's step): a round's clients train as one
#: computation up to this many (and the activation budget below), in chunks of whole clients beyond it. On a
#: CPU a smaller step is faster: FedAvg rounds of digits-cnn at 16 px (50 clients of 20 images a step) took
#: 1,698 ms in chunks of 50 clients, 1,024 ms in chunks of 10 and 1,070 ms sequentially; LeNet at 28 px (10
#: clients of 64) 1,096 ms in one chunk, 800 ms in chunks of 2 and 644 ms sequentially, 1 thread each: the
#: batched kernels keep a few hundred images' activations in cache, not a thousand. On a CPU one chunk keeps
#: one core busy (a round bigger than the bound gives the other workers chunks of their own). The GPU bound is
#: a first setting, not yet measured on a GPU (the probe script records peak memory there).
STACKED_IMAGES = {"cpu": 256, "cuda": 8192}

#: Bytes of activations a stacked step may hold on a CPU (on a GPU: a quarter of the device's memory). A
#: batched step keeps the activations of every image of every client in it, so its memory grows with the
#: chunk: measured with ``benchmarks/lockstep_memory.py`` at 10 clients, the training peak grew 7.2x the
#: sequential path's on digits-cnn at 16 px and 11.7x on ResNet-10 at 32 px (3.0 GB for 320 images).
STACKED_ACTIVATION_BYTES = 1 << 30
#: a stacked step's memory per image, in multiples of the float outputs of the model's layers for that image
#: (:func:`activation_bytes`): the outputs kept for the backward pass, their gradients and temporaries. The
#: growth of the training peak per image measured 2.2x on ResNet-10 at 32 px (9.5 MiB an image) and about 5x on
#: digits-cnn at 16 px (1.1 MiB), whose layers are small next to the step's other buffers: a rule of thumb
#: that keeps ResNet-10 at 32 px to 2 clients of 32 images a step on a CPU (1.0 GB, where 10 took 3.0 GB).
ACTIVATION_FACTOR = 3


def activation_bytes(model: nn.Module, in_channels: int, image_size: int) -> int:
    """Bytes of the outputs of every layer of ``model`` for one float32 image (a forward pass in evaluation
    mode, without gradients, on the model's device).

    Examples
    --------
    >>> from hetbench.train.models import build_model
    >>> round(activation_bytes(build_model("resnet10", 1, 10, 32, "group"), 1, 32) / 2**20, 2)
    4.25
    """
    total = [0]

    def count(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        total[0] += output.numel()

    hooks = [m.register_forward_hook(count) for m in model.modules() if not list(m.children())]
    param = next(model.parameters(), None)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(torch.zeros(1, in_channels, image_size, image_size, device=param.device if param is not None else None))
    finally:
        model.train(was_training)
        for h in hooks:
            h.remove()
    return 4 * total[0]


def stacked_chunk(device: torch.device, clients_per_round: int, step_images: int, image_bytes: int = 0) -> int:
    """Clients per stacked computation: the round's, up to :data:`STACKED_IMAGES` images a step (``step_images``
    a client: the batch size, or fewer where clients hold fewer rows) and up to the activation budget
    (:data:`STACKED_ACTIVATION_BYTES` on a CPU, a quarter of a GPU's memory) at :data:`ACTIVATION_FACTOR` x
    ``image_bytes`` (:func:`activation_bytes`) an image. It depends on the device, the options and the split
    only, never on the workers, so a client's update does not either.

    Examples
    --------
    >>> import torch
    >>> stacked_chunk(torch.device("cpu"), 50, 20), stacked_chunk(torch.device("cpu"), 50, 3)
    (12, 50)
    >>> stacked_chunk(torch.device("cpu"), 10, 32, image_bytes=int(4.25 * 2**20))  # ResNet-10 at 32 px
    2
    """
    cpu = device.type == "cpu"
    cap = STACKED_IMAGES["cpu" if cpu else "cuda"]
    if image_bytes:
        budget = STACKED_ACTIVATION_BYTES if cpu else torch.cuda.get_device_properties(device).total_memory // 4
        cap = min(cap, budget // (ACTIVATION_FACTOR * int(image_bytes)))
    return max(1, min(int(clients_per_round), cap // max(1, int(step_images))))


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


def plans_share(plans: Sequence[LocalPlan], name: str) -> bool:
    """Whether the plans use the option ``name`` (set, or true); every plan of a round must agree."""
    used = {getattr(p, name) is not None and getattr(p, name) is not False for p in plans}
    if len(used) > 1:
        raise HetbenchError(f"the clients of a stacked round set {name} alike (some do, some do not)")
    return used.pop()
