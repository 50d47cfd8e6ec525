"""How a run trains a round's clients: one after another (``sequential``) or together (``lockstep``), and
how many together: ``--client-exec`` and the rule of ``auto`` (:func:`choose_client_exec`).

In lockstep a round's clients train as one stacked computation (:mod:`hetbench.train.stacked`) or, for
code that declares no plan, as client threads whose gradients are batched (:mod:`hetbench.train.lockstep`);
the two modes differ only in the order of floating-point sums. The rule depends on the options, the model,
the data's shape and the device alone, never on a timing, so a run's mode, and so its bits, never change
from one start to the next.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hetbench.errors import HetbenchError

#: ``--client-exec`` choices
CLIENT_EXEC = ("auto", "sequential", "lockstep")

#: Clients per lockstep group on a CPU: the round's clients are cut into chunks of this many, in selection
#: order, and the chunks are dealt to the workers (one torch thread each), so a client's slot and the
#: group it trains with do not depend on the number of workers.
CPU_CHUNK = 10

#: Clients per lockstep group on a GPU, one group at a time: enough stacked models to fill the device with
#: the small models and batches of FL benchmarks, while a round of hundreds of clients still needs only
#: this many clients' activations at once.
GPU_CHUNK = 32


class ClientExecRefused(HetbenchError):
    """``--client-exec lockstep`` for a run that cannot train in lockstep (exit code 2)."""


def lockstep_chunk(device: torch.device, clients_per_round: int) -> int:
    """Clients per lockstep group: at most :data:`GPU_CHUNK` on a GPU, :data:`CPU_CHUNK` on a CPU, at most a
    round's.

    Examples
    --------
    >>> import torch
    >>> lockstep_chunk(torch.device("cpu"), 50), lockstep_chunk(torch.device("cuda"), 50)
    (10, 32)
    >>> lockstep_chunk(torch.device("cuda"), 20)
    20
    """
    cap = CPU_CHUNK if device.type == "cpu" else GPU_CHUNK
    return min(cap, max(1, int(clients_per_round)))


def lockstep_refusal(algorithm: Any, per_round: int, stochastic: bool) -> str | None:
    """Why a run cannot train in lockstep (None: it can).

    Parameters
    ----------
    algorithm : Algorithm
        Its class attribute ``lockstep`` (False for algorithms whose client update is not a set of gradient
        steps of several clients, e.g. the centralised run) says whether it can.
    per_round : int
        Clients per round: one client has nothing to train together with.
    stochastic : bool
        Whether the model draws random numbers in training (dropout): each client reseeds torch's global
        generator, which one batched pass cannot do per client.

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> lockstep_refusal(make_algorithm("fedavg"), 10, False) is None
    True
    >>> lockstep_refusal(make_algorithm("central"), 1, False)
    'central trains one client per round (the pooled data)'
    """
    if not getattr(algorithm, "lockstep", True):
        return getattr(algorithm, "lockstep_refusal", None) or f"{algorithm.name} does not train in lockstep"
    if per_round <= 1:
        return "one client per round: nothing to train together"
    if stochastic:
        return "the model uses dropout, drawn per client from torch's global generator"
    return None


def step_flop(model: nn.Module, in_channels: int, image_size: int, batch_size: int) -> float:
    """Floating-point operations of one training step of one client: 3 (forward and backward) x 2 x the
    model's MACs per image x the batch size (:func:`hetbench.train.models.profile`).

    Examples
    --------
    >>> from hetbench.train.models import build_model
    >>> model = build_model("digits-cnn", 1, 10, 8, "group")
    >>> round(step_flop(model, 1, 8, 1) / 1e6, 1), round(step_flop(model, 1, 8, 3) / 1e6, 1)
    (8.0, 23.9)
    """
    from hetbench.train.models import profile

    return 6.0 * float(profile(model, in_channels, image_size)["macs"]) * int(batch_size)


def choose_client_exec(requested: str, refusal: str | None, device: torch.device) -> tuple[str, str]:
    """The execution mode of a run and why: (``sequential`` | ``lockstep``, reason).

    ``requested`` is ``--client-exec``. ``lockstep`` for a run that cannot (``refusal``) is refused
    (:class:`ClientExecRefused`). ``auto`` trains in lockstep on a GPU whenever it can, where one client's
    step is far too small to fill the device, and sequentially on a CPU: there the batched kernels
    (grouped convolutions, ``bmm``) run no faster per client than the separate ones, and a compute-bound
    step runs slower (``benchmarks/results_trainer_lockstep.txt``, stacked, one thread and both cores:
    0.43-0.87x of sequential on digits-cnn at 16 px, LeNet and ResNet-10; 2.34x and 1.63x on 50 clients of
    2-3 images at 8 px, a step too small to be anything but overhead). ``benchmarks/lockstep_crossover.py``
    maps where lockstep wins on a CPU: only digits-cnn at 8 px with steps of at most 80 MFLOP (1.03-1.25x),
    while LeNet at 8 px loses at 34.5 MFLOP, so no bound on the step's size is a rule. The rule depends only
    on the options and the device, so a run's mode, and so its bits, never change from one start to the next.

    Examples
    --------
    >>> import torch
    >>> choose_client_exec("auto", None, torch.device("cpu"))
    ('sequential', 'auto: on a CPU lockstep is not faster (--client-exec lockstep to use it)')
    >>> choose_client_exec("auto", None, torch.device("cuda"))
    ('lockstep', 'auto: cuda device')
    >>> choose_client_exec("auto", "the model uses dropout", torch.device("cuda"))
    ('sequential', 'auto: the model uses dropout')
    """
    if requested not in CLIENT_EXEC:
        raise ClientExecRefused(f"`client_exec` must be one of {', '.join(CLIENT_EXEC)} (got {requested!r})")
    if requested == "sequential":
        return "sequential", "requested"
    if requested == "lockstep":
        if refusal:
            raise ClientExecRefused(f"`client_exec` lockstep is not possible here: {refusal}; use `client_exec` "
                                    "sequential or auto")
        return "lockstep", "requested"
    if refusal:
        return "sequential", f"auto: {refusal}"
    if device.type != "cpu":
        return "lockstep", f"auto: {device.type} device"
    return "sequential", "auto: on a CPU lockstep is not faster (--client-exec lockstep to use it)"
