"""Part (d) of ``bench_trainer.py``: lockstep clients against the sequential path and a plain PyTorch loop.

Each workload is FedAvg on a Dirichlet 0.5 split of a built-in dataset (built untimed), run for ``rounds``
rounds in this process from the decoded split:

* ``lockstep``: ``run_training`` with ``client_exec="lockstep"`` (a round's clients trained as one batched
  computation, :mod:`hetbench.train.lockstep`);
* ``sequential``: ``run_training`` with ``client_exec="sequential"`` (client after client per worker);
* ``plain``: ``trainer_floor.fedavg_plain``, the same FedAvg as an ordinary ``nn.Module`` /
  ``torch.optim.SGD`` loop, client after client.

Two thread settings: one torch thread (hetbench ``workers=1``) and all cores (hetbench's default workers,
the plain loop on as many intra-op threads). The figures are per-round times (best of ``repeats``,
interleaved) and their ratios, and training samples per second.

The compute floor is printed beside them: the model's FLOPs per training image (``step_flop``), the rate
the plain loop reaches (GFLOP/s) and the rate of one large single-thread matrix product on this CPU (the
most any batched formulation can reach), so ``GEMM rate / plain rate`` bounds the speed-up that batching
clients can give on one thread. A workload already near that rate is compute-bound: lockstep can only
lose there (``vmap`` turns each convolution into a grouped one), and ``--client-exec auto`` keeps it
sequential.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Callable

#: (name, dataset, image size, model, batch, clients per round, clients, rounds): the issue's three
#: workloads and the overhead workload of part (b)
WORKLOADS = (
    ("i", "builtin:mnist5k", 16, "digits-cnn", 20, 50, 100, 4),
    ("ii", "builtin:mnist5k", 28, "lenet", 64, 10, 100, 4),
    ("iii", "builtin:mnist5k", 32, "resnet10", 32, 10, 100, 2),
    ("overhead", "builtin:digits", 8, "digits-cnn", 10, 50, 500, 10),
)
QUICK_ROUNDS = 1


def gemm_gflops(threads: int = 1, n: int = 1024, repeats: int = 10) -> float:
    """The rate of an ``n x n`` float32 matrix product on ``threads`` torch threads (GFLOP/s, best of
    ``repeats``): what this CPU's BLAS reaches on a large, regular problem."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        a @ b
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - t)
        return 2.0 * n**3 / best / 1e9
    finally:
        torch.set_num_threads(saved)


def run(say: Callable[[str], None], tmp: Path, seed: int, repeats: int, quick: bool,
        build_split: Callable[[Path, dict, int], Path], device: str = "cpu") -> list[dict]:
    """Time every workload; print the lines; return one dict of figures per workload. ``device``: where the
    hetbench sides train (``cuda``: on a GPU, one thread setting; the plain loop stays on the CPU, so
    plain / lockstep is then GPU lockstep against the CPU's plain loop)."""
    import torch

    from trainer_floor import fedavg_plain

    from hetbench.cores import available_cores
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.data import load_federated
    from hetbench.train.client_exec import step_flop
    from hetbench.train.models import build_model
    from hetbench.train.simulation import run_training

    cores = available_cores()
    gemm = gemm_gflops(1)
    say(f"(d) lockstep clients: FedAvg, Dirichlet 0.5, 1 local epoch, lr 0.05, evaluated after the last round only; "
        f"best of {repeats} interleaved run(s) per side; one 1024x1024 float32 matrix product on 1 thread: "
        f"{gemm:.0f} GFLOP/s")
    out = []
    for name, dataset, side, model, batch, per_round, clients, rounds in WORKLOADS:
        rounds = QUICK_ROUNDS if quick else rounds
        split = build_split(tmp, dict(dataset=dataset, clients=clients), seed)
        data = load_federated(str(split), image_size=side, quiet=True)
        flop_image = step_flop(build_model(model, data.in_channels, data.num_classes, side, "group"),
                               data.in_channels, side, 1)
        sgd = dict(local_epochs=1, batch_size=batch, lr=0.05, eval_every=rounds)

        def hetbench_side(mode: str, workers: int | None, r: int) -> float:
            """Seconds per round of the rounds themselves (the results' ``timing.train_s``)."""
            cfg = TrainConfig(rounds=r, clients_per_round=per_round, model=model, seed=seed, workers=workers,
                              device=device, client_exec=mode, **dict(sgd, eval_every=r))
            gc.collect()
            doc = run_training(data, make_algorithm("fedavg"), cfg)
            return doc["timing"]["train_s"] / r

        def plain_side(r: int) -> float:
            """Seconds per round: (time of r rounds - time of 1 round) / (r - 1), which leaves out what the call
            does once (normalising the images, building the model, the final evaluation); r = 1: the call."""
            gc.collect()
            full = fedavg_plain(data, model_name=model, rounds=r, per_round=per_round, seed=seed,
                                **dict(sgd, eval_every=r)).seconds
            if r == 1:
                return full
            gc.collect()
            one = fedavg_plain(data, model_name=model, rounds=1, per_round=per_round, seed=seed,
                               **dict(sgd, eval_every=1)).seconds
            return max(full - one, 1e-9) / (r - 1)

        samples = rounds_samples(data, per_round, rounds, seed)
        say(f"  ({name}) {model} at {side} px, batch {batch}, {per_round} clients per round of {clients}, "
            f"{rounds} round(s), {samples / rounds:.0f} training samples per round; "
            f"{flop_image / 1e6:.1f} MFLOP per training image, {flop_image * batch / 1e6:.0f} MFLOP per client step")
        row: dict = {"workload": name}
        settings = ((1, 1, "1 thread"), (cores, None, f"all {cores} cores")) if device == "cpu" else \
            ((cores, None, f"{device}"),)
        for threads, workers, label in settings:
            saved = torch.get_num_threads()
            torch.set_num_threads(threads)
            try:
                hetbench_side("lockstep", workers, 1), hetbench_side("sequential", workers, 1), plain_side(1)  # warm-up
                times: dict[str, list[float]] = {"lockstep": [], "sequential": [], "plain": []}
                for i in range(repeats):
                    order = ("lockstep", "sequential", "plain") if i % 2 == 0 else ("plain", "sequential", "lockstep")
                    for side_name in order:
                        if side_name == "plain":
                            times["plain"].append(plain_side(rounds))
                        else:
                            times[side_name].append(hetbench_side(side_name, workers, rounds))
            finally:
                torch.set_num_threads(saved)
            best = {k: min(v) for k, v in times.items()}
            rate = samples / rounds / best["plain"] * flop_image / 1e9
            say(f"    {label:<14s} ms per round: lockstep {1e3 * best['lockstep']:8.1f}   sequential "
                f"{1e3 * best['sequential']:8.1f}   plain loop {1e3 * best['plain']:8.1f}   | plain / lockstep "
                f"{best['plain'] / best['lockstep']:.2f}x, sequential / lockstep {best['sequential'] / best['lockstep']:.2f}x; "
                f"samples/s lockstep {samples / rounds / best['lockstep']:,.0f}, plain {samples / rounds / best['plain']:,.0f}")
            if threads == 1 and device == "cpu":
                say(f"    {'':<14s} the plain loop computes {rate:.0f} GFLOP/s on 1 thread: batching can gain at most "
                    f"about {gemm / rate:.2f}x here (matrix-product rate / plain rate)")
            row["1" if threads == 1 and device == "cpu" else "all"] = {
                "plain_over_lockstep": best["plain"] / best["lockstep"],
                "sequential_over_lockstep": best["sequential"] / best["lockstep"],
                "ceiling": gemm / rate if threads == 1 else None,
            }
        out.append(row)
    say("")
    return out


def rounds_samples(data, per_round: int, rounds: int, seed: int) -> int:
    """Training samples of the clients FedAvg selects in ``rounds`` rounds (one epoch each)."""
    from hetbench.train.sampling import select_uniform

    return sum(int(data.client_rows[int(k)].size)
               for r in range(1, rounds + 1) for k in select_uniform(seed, r, data.num_clients, per_round))
