"""ATen operations dispatched per local step, for rounds of 5 and 50 clients: what predicts a GPU's speed on a
machine without one.

On a GPU, the small models of FL benchmarks spend a round launching kernels, one or more per ATen operation,
so the number of operations a round dispatches, not its arithmetic, sets its time. A trainer that computes
a round's clients as one batched computation dispatches the same operations per local step however many
clients train; one that loops over clients dispatches C times as many. This benchmark counts them on a CPU:
every ATen operation that reaches the dispatcher, in every thread the trainer starts (a
``TorchDispatchMode`` entered in each), during one round of FedAvg.

Lockstep rounds are counted with a GPU's chunk rule (a round's clients in one stacked step), which is what
the count predicts. A round's count is the count of a two-round run minus that of a one-round run, both evaluated only at their
last round, so what a run does once (building the model, the final evaluation) cancels. It is divided by the
round's *step indices* (the most local steps any selected client takes: the steps a batched computation
needs) and by its *client steps* (the steps of every client, added up). The figure the issue asks for is the
ratio of ops per step index between rounds of 50 and 5 clients: 1.0 for a computation whose size, not its
number of operations, grows with the clients; about 10 for a loop over clients.

Run: ``python benchmarks/trainer_dispatch.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import contextlib
import math
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator
from unittest import mock

#: the overhead workload of bench_trainer.py (b) and (d): digits-cnn at 8 px, batch 10, 1 local epoch
DATASET, SIDE, MODEL, BATCH, CLIENTS = "builtin:digits", 8, "digits-cnn", 10, 100
ROUND_SIZES = (5, 50)
MODES = ("sequential", "lockstep")


class Tally:
    """A count shared by the threads that add to it."""

    def __init__(self) -> None:
        self.n = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.n += 1


def _count_mode(tally: Tally):
    from torch.utils._python_dispatch import TorchDispatchMode

    class CountOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            tally.add()
            return func(*args, **(kwargs or {}))

    return CountOps()


@contextlib.contextmanager
def counting_every_thread(tally: Tally) -> Iterator[None]:
    """Count the ATen operations dispatched in this thread and in every thread started inside the block (a
    dispatch mode is per thread: each new thread enters its own, adding to ``tally``)."""
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        with _count_mode(tally):
            original(self)

    threading.Thread.run = run  # type: ignore[method-assign]
    try:
        with _count_mode(tally):
            yield
    finally:
        threading.Thread.run = original  # type: ignore[method-assign]


def round_steps(data, per_round: int, round_: int, seed: int) -> tuple[int, int]:
    """(step indices, client steps) of round ``round_``: the most local steps of a selected client and their
    sum (one epoch of ``BATCH``-sized steps, the last one short)."""
    from hetbench.train.sampling import select_uniform

    steps = [math.ceil(data.client_rows[int(k)].size / BATCH)
             for k in select_uniform(seed, round_, data.num_clients, per_round)]
    return max(steps), sum(steps)


def ops_of_run(data, mode: str, per_round: int, rounds: int, seed: int) -> int:
    """ATen operations dispatched by ``run_training`` (FedAvg, one worker) over ``rounds`` rounds."""
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.simulation import run_training

    from hetbench.train import local_plan

    cfg = TrainConfig(rounds=rounds, clients_per_round=per_round, model=MODEL, seed=seed, workers=1, device="cpu",
                      client_exec=mode, local_epochs=1, batch_size=BATCH, lr=0.05, eval_every=rounds)
    tally = Tally()
    # a GPU's chunk: the whole round in one stacked step, as it would run there (on a CPU a stacked step holds
    # at most 256 images, which splits a round of 50 clients of 10 in two)
    with mock.patch.dict(local_plan.STACKED_IMAGES, {"cpu": local_plan.STACKED_IMAGES["cuda"]}), \
            counting_every_thread(tally):
        run_training(data, make_algorithm("fedavg"), cfg)
    return tally.n


def main(seed: int = 0) -> dict[str, dict[int, float]]:
    import subprocess

    import torch

    from hetbench.train.data import load_federated

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        split = Path(tmp) / "split"
        subprocess.run([sys.executable, "-m", "hetbench.cli.main", "partition", "dirichlet", "--dataset", DATASET,
                        "--clients", str(CLIENTS), "--alpha", "0.5", "--seed", str(seed), "--out", str(split), "-q"],
                       check=True)
        data = load_federated(str(split), image_size=SIDE, quiet=True)
        print(f"# benchmarks/trainer_dispatch.py: torch {torch.__version__}, one torch thread, one worker")
        print(f"ATen ops dispatched per local step: FedAvg, {MODEL} at {SIDE} px, batch {BATCH}, 1 local epoch, "
              f"{DATASET} Dirichlet 0.5 over {CLIENTS} clients; one round (a 2-round run minus a 1-round run)")
        per_index: dict[str, dict[int, float]] = {}
        for mode in MODES:
            per_index[mode] = {}
            for c in ROUND_SIZES:
                ops = ops_of_run(data, mode, c, 2, seed) - ops_of_run(data, mode, c, 1, seed)
                indices, client_steps = round_steps(data, c, 2, seed)
                per_index[mode][c] = ops / indices
                print(f"  {mode:<10s} {c:>3d} clients: {ops:>9,d} ops in the round, {indices} step indices, "
                      f"{client_steps} client steps: {ops / indices:>9,.0f} per step index, "
                      f"{ops / client_steps:>6,.0f} per client step")
        for mode in MODES:
            a, b = ROUND_SIZES
            print(f"  {mode}: ops per step index, {b} clients / {a} clients = "
                  f"{per_index[mode][b] / per_index[mode][a]:.2f} (issue 46's target for lockstep: at most 1.1)")
        return per_index


if __name__ == "__main__":
    main()
