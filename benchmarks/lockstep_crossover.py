"""Where lockstep beats sequential clients on this CPU (issue 46, item 5: a rule for ``--client-exec auto``).

A grid of FedAvg workloads on Dirichlet 0.5 splits of ``builtin:digits`` (built untimed) that moves the two
things a stacked step's overhead is paid against: the work of one client step (the model's FLOPs per image
times the images in a step, the batch or a client's rows when it has fewer) and the clients trained together
(the clients per round). Each workload runs ``run_training`` with ``client_exec="sequential"`` and
``"lockstep"`` on the default workers (every core), interleaved, best of ``--repeats``; the figure is
seconds per round of training (the results' ``timing.train_s``) and the ratio sequential / lockstep (above 1:
lockstep is faster).

The last lines say where lockstep won among rounds of at least ten clients, and whether a bound on the
client step's MFLOP separates its wins from its losses (:func:`crossover`): the rule ``auto`` could follow
on a CPU (``hetbench/train/client_exec.py``).

    python benchmarks/lockstep_crossover.py                   # the grid, 3 repeats
    python benchmarks/lockstep_crossover.py --quick           # two workloads, one repeat (a smoke run)
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import tempfile
from pathlib import Path
from typing import Callable

#: (image size, model, batch, clients per round, clients of the split, rounds) on builtin:digits (1,797 rows,
#: 20% held out): 500 clients hold 2-3 training rows each, 100 hold 14, 50 hold 29
WORKLOADS = (
    (8, "digits-cnn", 10, 50, 500, 6),
    (8, "digits-cnn", 10, 10, 500, 10),
    (8, "digits-cnn", 10, 50, 100, 4),
    (8, "digits-cnn", 10, 10, 100, 6),
    (8, "digits-cnn", 20, 50, 50, 3),
    (8, "digits-cnn", 20, 10, 50, 4),
    (16, "digits-cnn", 10, 50, 500, 6),
    (16, "digits-cnn", 10, 50, 100, 3),
    (8, "lenet", 10, 50, 500, 6),
    (8, "lenet", 10, 50, 100, 3),
)
QUICK = ((8, "digits-cnn", 10, 10, 100, 1), (8, "digits-cnn", 10, 4, 20, 1))


def measure(say: Callable[[str], None], tmp: Path, repeats: int, workloads=WORKLOADS) -> list[dict]:
    """Time every workload both ways; print one line each and the crossover bracket; return the rows."""
    import numpy as np

    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split
    from hetbench.sources import load_table
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.client_exec import step_flop
    from hetbench.train.data import load_federated
    from hetbench.train.models import build_model
    from hetbench.train.simulation import run_training

    table = load_table("builtin:digits")
    rows = []
    for side, model, batch, per_round, clients, rounds in workloads:
        folder = tmp / f"digits-{clients}"
        if not folder.exists():
            make_split(table, DirichletPartitioner(clients, 0.5, "client", None, 0), folder, seed=0, test_fraction=0.2,
                       quiet=True)
        data = load_federated(str(folder), image_size=side, quiet=True)
        median_rows = float(np.median([r.size for r in data.client_rows]))
        step_images = min(batch, median_rows)
        mflop = step_flop(build_model(model, data.in_channels, data.num_classes, side, "group"), data.in_channels,
                          side, 1) * step_images / 1e6

        def per_round_s(mode: str) -> float:
            cfg = TrainConfig(rounds=rounds, clients_per_round=per_round, model=model, seed=0, client_exec=mode,
                              local_epochs=1, batch_size=batch, lr=0.05, eval_every=rounds)
            gc.collect()
            return run_training(data, make_algorithm("fedavg"), cfg)["timing"]["train_s"] / rounds

        per_round_s("lockstep"), per_round_s("sequential")  # warm-up
        times: dict[str, list[float]] = {"lockstep": [], "sequential": []}
        for i in range(repeats):
            for mode in (("lockstep", "sequential") if i % 2 == 0 else ("sequential", "lockstep")):
                times[mode].append(per_round_s(mode))
        best = {k: min(v) for k, v in times.items()}
        ratio = best["sequential"] / best["lockstep"]
        rows.append({"model": model, "side": side, "batch": batch, "per_round": per_round, "mflop": mflop,
                     "ratio": ratio})
        say(f"  {model:<10s} {side:2d} px  batch {batch:2d}  {per_round:2d} clients a round  {median_rows:5.1f} rows a "
            f"client  step {step_images:4.1f} images x {mflop / step_images:5.2f} MFLOP = {mflop:6.1f} MFLOP | "
            f"ms per round: sequential {1e3 * best['sequential']:7.1f}  lockstep {1e3 * best['lockstep']:7.1f}  "
            f"sequential / lockstep {ratio:.2f}x")
    for line in crossover(rows):
        say(line)
    return rows


def crossover(rows: list[dict]) -> list[str]:
    """Two lines on where lockstep won (sequential / lockstep above 1) among rounds of ten or more clients:
    the step sizes it won and lost at, and whether a bound on the client step's MFLOP separates them.

    Examples
    --------
    >>> from lockstep_crossover import crossover
    >>> rows = [{"model": "m", "side": 8, "per_round": 10, "mflop": 20.0, "ratio": 1.4},
    ...         {"model": "m", "side": 8, "per_round": 10, "mflop": 90.0, "ratio": 0.8}]
    >>> crossover(rows)
    ['  rounds of 10 or more clients: lockstep faster in 1 of 2 (m 8 px), at 20.0-20.0 MFLOP per client step; slower at 90.0-90.0', '  a bound on the client step separates them: lockstep wins below 20.0-90.0 MFLOP']
    """
    wide = [r for r in rows if r["per_round"] >= 10]
    won = [r for r in wide if r["ratio"] > 1]
    lost = [r for r in wide if r["ratio"] <= 1]
    where = ", ".join(sorted({f"{r['model']} {r['side']} px" for r in won}))
    span = (lambda rs: f"{min(r['mflop'] for r in rs):.1f}-{max(r['mflop'] for r in rs):.1f}")
    first = (f"  rounds of 10 or more clients: lockstep faster in {len(won)} of {len(wide)} ({where}), at "
             f"{span(won)} MFLOP per client step" if won else
             f"  rounds of 10 or more clients: lockstep faster in 0 of {len(wide)}")
    first += f"; slower at {span(lost)}" if lost else ""
    if not won or not lost:
        return [first, "  a bound on the client step separates them: trivially (one side is empty)"]
    if max(r["mflop"] for r in won) < min(r["mflop"] for r in lost):
        return [first, f"  a bound on the client step separates them: lockstep wins below "
                       f"{max(r['mflop'] for r in won):.1f}-{min(r['mflop'] for r in lost):.1f} MFLOP"]
    return [first, f"  no bound on the client step separates them (a loss at {min(r['mflop'] for r in lost):.1f} "
                   f"MFLOP, a win at {max(r['mflop'] for r in won):.1f}): the model matters, not only the step's size"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small workloads, one repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", type=Path, default=None, help="also write the lines to this file")
    args = parser.parse_args(argv)
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    from hetbench.cores import available_cores

    say(f"lockstep crossover: FedAvg on builtin:digits, Dirichlet 0.5, 1 local epoch, default workers; "
        f"{available_cores()} cores, load {os.getloadavg()[0]:.2f}, {platform.processor() or platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="hb-crossover-") as tmp:
        measure(say, Path(tmp), 1 if args.quick else args.repeats, QUICK if args.quick else WORKLOADS)
    if args.results is not None:
        args.results.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
