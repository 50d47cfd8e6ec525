"""What a claim costs before it runs: its training workloads, timed on this machine's device.

Every runner that trains lists its work (:meth:`hetbench.reproduce.runners.base.Runner.workloads`): which
model, at what image size and batch, how many runs, and how many examples each run trains on and
evaluates. :func:`calibrate` runs the real trainer for a few rounds of random images shaped like the
claim's (its model, batch and clients per round, with the trainer's own execution: one client thread per
core on a CPU, lockstep groups on a GPU), and :func:`estimate` multiplies its seconds per client step, per
run and per evaluated example by the claim's counts: ``hetbench reproduce --dry-run`` prints the result,
and ``--full`` on a CPU is refused with it unless ``--allow-cpu``.

The estimate leaves out building splits and loading data, and the calibration's clients train 4 batches a
round, so per-round work is counted as for clients of that size.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

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
    rounds : int
        Rounds of one run (epochs of a centralised run): each pays the trainer's per-round work.
    algorithms : tuple of str
        The algorithms that share the runs evenly, each timed with its own local training (HeteroSwitch's
        ISP augmentation and weight averaging, DapperFL's pruning and regularised epochs, SCAFFOLD's
        corrections); empty: FedAvg.
    local_epochs : tuple of int
        Each algorithm's local epochs (as ``train_examples`` counts them, on average over the algorithms);
        empty: 1.

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
    rounds: int = 0
    algorithms: tuple[str, ...] = ()
    local_epochs: tuple[int, ...] = ()

    def shares(self) -> list[tuple[str, int, float]]:
        """(algorithm, its local epochs, its share of ``train_examples``) for every algorithm of the runs.

        Examples
        --------
        >>> w = Workload("x", "digits-cnn", 16, 1, 10, 20, runs=2, train_examples=300, eval_examples=0,
        ...              algorithms=("fedavg", "dapperfl"), local_epochs=(1, 5))
        >>> w.shares()
        [('fedavg', 1, 100.0), ('dapperfl', 5, 500.0)]
        """
        algorithms = self.algorithms or ("fedavg",)
        epochs = self.local_epochs or (1,) * len(algorithms)
        mean = sum(epochs) / len(epochs)
        return [(a, e, self.train_examples * e / mean) for a, e in zip(algorithms, epochs)]


def federated_workload(what: str, train: dict[str, Any], runs: int, client_rows: float, test_rows: int,
                       in_channels: int, num_classes: int, native_size: int | None = None,
                       algorithms: Sequence[str] = ()) -> Workload:
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
    algorithms : sequence of str
        The algorithms sharing the runs evenly: where ``train`` gives no ``local_epochs``, each trains its
        own default (DapperFL 5, the others 1).

    Examples
    --------
    >>> w = federated_workload("fedavg", {"rounds": 8, "clients_per_round": 5, "eval_every": 2, "image_size": 16,
    ...                        "model": "digits-cnn", "batch_size": 20}, runs=25, client_rows=200, test_rows=1000,
    ...                        in_channels=1, num_classes=10)
    >>> w.train_examples, w.eval_examples
    (8000, 4000)
    """
    from hetbench.train.algorithms import TrainConfig

    from hetbench.train.algorithms import ALGORITHMS

    cfg = TrainConfig(**train)
    # the runs are shared evenly by the algorithms, each with its own default epochs (DapperFL's 5)
    epochs = ([TrainConfig(**train).for_algorithm(ALGORITHMS[a]).local_epochs for a in algorithms]
              or [cfg.local_epochs or 1])
    size = cfg.image_size or native_size
    if size is None:
        raise ValueError(f"{what}: no image_size in the train options and no native size given")
    from hetbench.train.simulation import evaluated

    evaluations = sum(evaluated(r, cfg) for r in range(1, cfg.rounds + 1))  # the trainer's own schedule
    return Workload(what, cfg.model, int(size), in_channels, num_classes, cfg.batch_size, runs,
                    train_examples=round(cfg.rounds * cfg.clients_per_round * sum(epochs) / len(epochs) * client_rows),
                    eval_examples=evaluations * test_rows, clients_per_round=cfg.clients_per_round,
                    rounds=cfg.rounds, algorithms=tuple(algorithms), local_epochs=tuple(epochs) if algorithms else ())


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
    """What the real trainer spent here on a workload's model: seconds per client step (one batch of one
    client, as a round of ``clients_per_round`` clients achieves it: the cores or the GPU's lockstep groups
    shared), seconds per round besides its steps (selection, aggregation, the server update), a run's fixed
    seconds (setting up and closing its session), and seconds per evaluated example."""

    client_step_seconds: float
    round_seconds: float
    run_seconds: float
    eval_seconds_per_example: float


CALIBRATION_ROUNDS = 4
"""Rounds of a calibration run: the first warms up, the next two are timed, the last adds one evaluation."""


def calibration_data(workload: Workload, steps_per_client: int = 4, test_rows: int = 1024, seed: int = 0):
    """A random split shaped like ``workload``'s: ``clients_per_round`` clients of ``steps_per_client``
    batches of random images each, and ``test_rows`` random test images (one group).

    Examples
    --------
    >>> w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=1, train_examples=100, eval_examples=100,
    ...              clients_per_round=3)
    >>> d = calibration_data(w)
    >>> d.num_clients, d.x_train.shape, d.x_test.shape
    (3, (240, 1, 16, 16), (1024, 1, 16, 16))
    """
    import numpy as np
    import torch

    from hetbench.train.data import FederatedData

    rng = np.random.default_rng(seed)
    k, rows = max(1, workload.clients_per_round), steps_per_client * workload.batch_size
    shape = (workload.in_channels, workload.image_size, workload.image_size)
    x = rng.integers(0, 256, size=(k * rows, *shape), dtype=np.uint8)
    xt = rng.integers(0, 256, size=(test_rows, *shape), dtype=np.uint8)
    y = rng.integers(0, workload.num_classes, size=k * rows)
    yt = rng.integers(0, workload.num_classes, size=test_rows)
    return FederatedData(
        name="calibration", path="calibration", fingerprint="0" * 64,
        x_train=x, y_train=torch.from_numpy(y), x_test=xt, y_test=torch.from_numpy(yt),
        client_ids=np.arange(k), client_rows=[np.arange(c * rows, (c + 1) * rows) for c in range(k)],
        label_names=[str(c) for c in range(workload.num_classes)], group_by="all", group_names=["all"],
        test_group=np.zeros(test_rows, dtype=np.int64), test_client=np.full(test_rows, -1),
        client_group=np.zeros(k, dtype=np.int64), mean=np.full(workload.in_channels, 0.5),
        std=np.full(workload.in_channels, 0.29))


def calibrate(workload: Workload, device: str, steps: tuple[int, int] = (2, 6), algorithm: str = "fedavg",
              local_epochs: int = 1) -> Timing:
    """Time ``workload``'s model in the real trainer on ``device``: two runs of :data:`CALIBRATION_ROUNDS`
    FedAvg rounds of ``clients_per_round`` clients on random images (:func:`calibration_data`), whose clients
    train ``steps[0]`` and ``steps[1]`` batches a round, with the trainer's own execution (client threads on
    a CPU, lockstep groups on a GPU, the same thread rules), each evaluated once at the end. The two round
    times give the seconds per client step (their slope) and the per-round work (their intercept).

    Timing the trainer, not a bare model, counts what a bare model's step leaves out: on a GPU the small
    models' steps are bound by kernel launches and the trainer's per-step work, not arithmetic. On an H200,
    LeNet at batch 64 with 10 clients a round took 2.3 ms per client step in the trainer (92 ms a round
    of 4 steps each), where timing a bare model on a batch of 10 x 64 gave 0.43 ms, an estimate 5 times
    too low for ``hsu-label-skew`` in full mode.

    Parameters
    ----------
    workload : Workload
        The model, its input, batch and clients per round.
    device : str
        A torch device (``cpu``, ``cuda``, ``cuda:N``, ``mps``).
    steps : (int, int)
        Batches each client trains per local epoch in the two runs.
    algorithm : str
        The algorithm timed (its own local training: HeteroSwitch's augmentation, DapperFL's pruning and
        regularisation, ...).
    local_epochs : int
        Its local epochs: a client step's seconds are the mean over them (DapperFL's first epoch is plain
        cross-entropy, the others carry its regularisation).

    Examples
    --------
    >>> w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=1, train_examples=100, eval_examples=100,
    ...              clients_per_round=2)
    >>> t = calibrate(w, "cpu")
    >>> t.client_step_seconds > 0, t.round_seconds >= 0, t.run_seconds >= 0, t.eval_seconds_per_example > 0
    (True, True, True, True)
    """
    k, e = max(1, workload.clients_per_round), max(1, local_epochs)
    (round_a, run_a, eval_a), (round_b, run_b, eval_b) = (_timed_run(workload, device, n, algorithm, e) for n in steps)
    step_s = max((round_b - round_a) / (k * e * (steps[1] - steps[0])), 1e-9)
    return Timing(client_step_seconds=step_s, round_seconds=max(round_a - k * e * steps[0] * step_s, 0.0),
                  run_seconds=(run_a + run_b) / 2, eval_seconds_per_example=(eval_a + eval_b) / 2)


def _timed_run(workload: Workload, device: str, steps_per_client: int, algorithm: str = "fedavg",
               local_epochs: int = 1) -> tuple[float, float, float]:
    """(seconds per warm round, a run's fixed seconds, seconds per evaluated example) of one calibration run."""
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.simulation import run_training

    data = calibration_data(workload, steps_per_client)
    config = TrainConfig(rounds=CALIBRATION_ROUNDS, clients_per_round=data.num_clients, local_epochs=local_epochs,
                         batch_size=workload.batch_size, lr=0.01, model=workload.model,
                         image_size=workload.image_size, eval_every=CALIBRATION_ROUNDS, device=device)
    marks: list[float] = []
    start = time.perf_counter()
    run_training(data, make_algorithm(algorithm), config, on_round=lambda r, s: marks.append(time.perf_counter()))
    total = time.perf_counter() - start
    round_s = (marks[2] - marks[0]) / 2  # rounds 2 and 3: warm, not evaluated
    eval_s = max(marks[3] - marks[2] - round_s, 1e-9)
    return round_s, max(total - CALIBRATION_ROUNDS * round_s - eval_s, 0.0), eval_s / len(data.x_test)


def estimate(workloads: Sequence[Workload], device: str, *, timings: dict[tuple, Timing] | None = None) -> float:
    """Seconds that ``workloads`` take on ``device``: per run, its fixed cost, its rounds' own work, its
    client steps (``ceil(train_examples / batch_size)``) and its evaluated examples, each at the seconds
    :func:`calibrate` measured here for each of the workload's algorithms (its runs shared evenly by
    them). Building splits and loading data are left out.

    Parameters
    ----------
    workloads : sequence of Workload
        A claim's work (:meth:`~hetbench.reproduce.runners.base.Runner.workloads`).
    device : str
        A torch device.
    timings : dict, optional
        A cache of :func:`calibrate` results shared between claims (filled here).

    Examples
    --------
    >>> w = Workload("fedavg", "digits-cnn", 16, 1, 10, 20, runs=2, train_examples=200, eval_examples=100,
    ...              clients_per_round=2, rounds=5)
    >>> key = ("digits-cnn", 16, 1, 10, 20, 2, "fedavg", 1)
    >>> estimate([w], "cpu", timings={key: Timing(0.01, 0.002, 0.5, 1e-4)})
    1.24
    """
    timings = {} if timings is None else timings
    total = 0.0
    for w in workloads:
        shares = w.shares()
        for algorithm, epochs, examples in shares:  # the runs are shared evenly by the algorithms
            key = (w.model, w.image_size, w.in_channels, w.num_classes, w.batch_size, max(1, w.clients_per_round),
                   algorithm, epochs)
            if key not in timings:
                timings[key] = calibrate(w, device, algorithm=algorithm, local_epochs=epochs)
            t = timings[key]
            steps = math.ceil(examples / w.batch_size)
            total += w.runs / len(shares) * (t.run_seconds + w.rounds * t.round_seconds + steps * t.client_step_seconds
                                             + w.eval_examples * t.eval_seconds_per_example)
    return round(total, 6)


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
