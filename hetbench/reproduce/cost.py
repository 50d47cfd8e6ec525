"""What a claim costs before it runs: its training workloads, timed on this machine's device.

Every runner that trains lists its work (:meth:`hetbench.reproduce.runners.base.Runner.workloads`): which
model, at what image size and batch, how many runs, and how many examples each run trains on and
evaluates. :func:`calibrate` times that model here (a few SGD steps of random images at the claim's batch
size, one evaluation pass), and :func:`estimate` multiplies: ``hetbench reproduce --dry-run`` prints the
result, and ``--full`` on a CPU is refused with it unless ``--allow-cpu``.

The estimate is a floor of the training and evaluation arithmetic: it leaves out building splits, data
loading and the trainer's per-round work (a few per cent on the quick claims' sizes, more for tiny models).
On a CPU the trainer runs a round's clients on one thread per core, so a run's steps are divided by
``clients_per_round / ceil(clients_per_round / cores)`` (the load of the busiest core); on a GPU the
clients train in lockstep groups of up to 32 (:mod:`hetbench.train.lockstep`), so a group's step is timed
as one batch of group x B.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

LOCKSTEP_GROUP = 32
"""Clients per lockstep group on a GPU (:mod:`hetbench.train.lockstep`)."""


@dataclass(frozen=True)
class Workload:
    """One kind of training run a claim does, and how much of it.

    Parameters
    ----------
    what : str
        What the runs are (``fedavg, 5 alphas``), for the listing.
    model, image_size, in_channels, num_classes, batch_size
        The model and its input, as ``hetbench train`` builds it.
    runs : int
        How many such runs (algorithms x conditions x seeds).
    train_examples : int
        Examples one run puts through a training step (rounds x clients per round x local epochs x
        examples per client, or epochs x rows for a centralised run).
    eval_examples : int
        Test examples one run evaluates (evaluations x test rows).
    clients_per_round : int
        Clients a round trains side by side (1: a serial run).

    Examples
    --------
    >>> w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=25, train_examples=8000, eval_examples=4000,
    ...              clients_per_round=5)
    >>> w.runs * w.train_examples
    200000
    """

    what: str
    model: str
    image_size: int
    in_channels: int
    num_classes: int
    batch_size: int
    runs: int
    train_examples: int
    eval_examples: int
    clients_per_round: int = 1


def federated_workload(what: str, train: dict[str, Any], runs: int, client_rows: float, test_rows: int,
                       in_channels: int, num_classes: int, native_size: int | None = None) -> Workload:
    """The workload of ``runs`` federated runs with a claim's ``train`` options.

    Parameters
    ----------
    what : str
        What the runs are.
    train : dict
        The claim's ``train`` mapping (``rounds``, ``clients_per_round``, ``local_epochs``, ``batch_size``,
        ``eval_every``, ``model``, ``image_size``; the trainer's defaults where missing).
    runs : int
        How many runs.
    client_rows : float
        Training rows of a mean client.
    test_rows : int
        Test rows of one evaluation.
    in_channels, num_classes : int
        The model's input channels and classes.
    native_size : int, optional
        The data's image size: the model's input where ``train`` gives no ``image_size``.

    Examples
    --------
    >>> w = federated_workload("fedavg", {"rounds": 8, "clients_per_round": 5, "eval_every": 2, "image_size": 16,
    ...                        "model": "digits-cnn", "batch_size": 20}, runs=25, client_rows=200, test_rows=1000,
    ...                        in_channels=1, num_classes=10)
    >>> w.train_examples, w.eval_examples
    (8000, 4000)
    """
    from hetbench.train.algorithms import TrainConfig

    cfg = TrainConfig(**train)
    size = cfg.image_size or native_size
    if size is None:
        raise ValueError(f"{what}: no image_size in the train options and no native size given")
    evaluations = cfg.rounds // cfg.eval_every + (cfg.rounds % cfg.eval_every != 0)
    return Workload(what, cfg.model, int(size), in_channels, num_classes, cfg.batch_size, runs,
                    train_examples=round(cfg.rounds * cfg.clients_per_round * cfg.local_epochs * client_rows),
                    eval_examples=evaluations * test_rows, clients_per_round=cfg.clients_per_round)


def source_shape(source: str) -> tuple[int, int, int, int]:
    """Rows, image channels, image size and classes of a claim's ``source`` table (its ``train`` split;
    channels and size from its first image).

    Examples
    --------
    >>> source_shape("builtin:mnist5k")
    (5000, 1, 28, 10)
    """
    import datasets

    from hetbench.sources import load_table

    table = load_table(source)
    split = table.splits["train"]
    column = next(name for name, f in split.features.items() if isinstance(f, datasets.Image))
    image = split[0][column]
    channels = 1 if image.mode in ("L", "I", "I;16", "F", "1") else 3
    return int(table.num_rows("train")), channels, int(max(image.size)), int(table.num_classes)


@dataclass(frozen=True)
class Timing:
    """Seconds of one training step (a batch of ``batch`` examples) and of one evaluated example."""

    step_seconds: float
    batch: int
    eval_seconds_per_example: float


def calibrate(workload: Workload, device: str, group: int = 1, budget_s: float = 0.5) -> Timing:
    """Time ``workload``'s model on ``device``: SGD steps on random images at its batch size (x ``group``,
    the clients trained together), then forward passes at batch 256, each for about ``budget_s`` seconds
    after a warm-up step. On a CPU torch runs one thread, as each of the trainer's client workers does.

    Parameters
    ----------
    workload : Workload
        The model and its input.
    device : str
        A torch device (``cpu``, ``cuda``, ``cuda:N``, ``mps``).
    group : int
        Clients per step (lockstep groups on a GPU; 1 on a CPU).
    budget_s : float
        About how long each timing runs.

    Examples
    --------
    >>> w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=1, train_examples=100, eval_examples=100)
    >>> t = calibrate(w, "cpu", budget_s=0.05)
    >>> t.batch, t.step_seconds > 0, t.eval_seconds_per_example > 0
    (20, True, True)
    """
    import torch

    from hetbench.train.models import build_model

    threads = torch.get_num_threads()
    on_cpu = torch.device(device).type == "cpu"
    if on_cpu:
        torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(0)
        model = build_model(workload.model, workload.in_channels, workload.num_classes, workload.image_size).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        batch = workload.batch_size * group
        x = torch.rand(batch, workload.in_channels, workload.image_size, workload.image_size, generator=gen).to(device)
        y = torch.randint(0, workload.num_classes, (batch,), generator=gen).to(device)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        step_s = _time(step, device, budget_s)
        xe = torch.rand(256, workload.in_channels, workload.image_size, workload.image_size, generator=gen).to(device)

        def forward() -> None:
            with torch.no_grad():
                model(xe)

        model.eval()
        eval_s = _time(forward, device, budget_s) / 256
    finally:
        if on_cpu:
            torch.set_num_threads(threads)
    return Timing(step_s, batch, eval_s)


def _time(fn, device: str, budget_s: float) -> float:
    import torch

    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    fn()
    sync()
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s or n >= 50:
            return elapsed / n


def cpu_parallelism(clients_per_round: int, cores: int) -> float:
    """How many clients' steps a CPU round does at once: ``K / ceil(K / cores)``.

    Examples
    --------
    >>> cpu_parallelism(5, 2), cpu_parallelism(10, 16), cpu_parallelism(1, 2)
    (1.6666666666666667, 10.0, 1.0)
    """
    k = max(1, int(clients_per_round))
    return k / math.ceil(k / max(1, int(cores)))


def estimate(workloads: Sequence[Workload], device: str, *, cores: int | None = None,
             timings: dict[tuple, Timing] | None = None) -> float:
    """Seconds that ``workloads`` take on ``device`` (a floor: training and evaluation arithmetic only).

    Parameters
    ----------
    workloads : sequence of Workload
        A claim's work (:meth:`~hetbench.reproduce.runners.base.Runner.workloads`).
    device : str
        A torch device.
    cores : int, optional
        CPU cores the trainer uses; None: :func:`hetbench.cores.available_cores`.
    timings : dict, optional
        A cache of :func:`calibrate` results shared between claims (filled here).

    Examples
    --------
    >>> w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=2, train_examples=200, eval_examples=100,
    ...              clients_per_round=2)
    >>> estimate([w], "cpu", cores=2) > 0
    True
    """
    import torch

    timings = {} if timings is None else timings
    gpu = torch.device(device).type != "cpu"
    if cores is None:
        from hetbench.cores import available_cores

        cores = available_cores()
    total = 0.0
    for w in workloads:
        group = min(LOCKSTEP_GROUP, w.clients_per_round) if gpu else 1
        key = (w.model, w.image_size, w.in_channels, w.num_classes, w.batch_size, group)
        if key not in timings:
            timings[key] = calibrate(w, device, group)
        t = timings[key]
        steps = math.ceil(w.train_examples / w.batch_size)
        if gpu:
            train_s = steps / group * t.step_seconds
        else:
            train_s = steps * t.step_seconds / cpu_parallelism(w.clients_per_round, cores)
        total += w.runs * (train_s + w.eval_examples * t.eval_seconds_per_example)
    return total


def format_duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h`` or ``3.2 days``.

    Examples
    --------
    >>> [format_duration(s) for s in (0.2, 42, 210, 7560, 280000)]
    ['0 s', '42 s', '3.5 min', '2.1 h', '3.2 days']
    """
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
