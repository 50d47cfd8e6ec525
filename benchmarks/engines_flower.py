"""(b) of ``bench_engines.py``: ``hetbench train --engine flower`` (Flower's Simulation Runtime, Ray backend)
against ``--engine local`` on the trainer benchmark's overhead split.

The split and the run are those of ``bench_trainer.py`` (b): FedAvg, ``--model digits-cnn``, ``hetbench
partition dirichlet --dataset builtin:digits --clients 500 --alpha 0.5``, 50 rounds x 50 clients, batch 10,
lr 0.05, evaluation every 5 rounds. Each engine is one ``hetbench train`` process timed from launch to exit
(the split is decoded once, untimed, before either, so both find the decoded-image cache). Flower gets one
single-CPU Ray actor per core (``--flower-actors``, default). Both write the same results JSON; the report
gives each engine's wall time, the training time per round from its results' ``timing`` block (the
per-round cost of each engine: for Flower, configure, messages through Ray, ClientApps, replies and
aggregation), the fixed cost outside the rounds (interpreter, imports, split, and for Flower starting Ray,
its actors and the node handshake) and the accuracy of each (equal: the engines compute the same model).

``sweep_route(report)`` times the README's sweep, ``hetbench train --algo fedavg,scaffold --rounds 3
--flower-actors 2`` on the default (embedded) split, with ``--engine flower`` and ``--engine local``,
alternately, ``repeats`` times each: the cost of Flower's supported route (``flwr run`` on a SuperLink of
hetbench's own) that issue 48 compares with the 33 s the in-process ``run_simulation`` took (target: at
most 1.2x, 39.6 s). The floor is the route's fixed cost: wall time less both jobs' training and evaluation
(the ``timing`` blocks), which is starting the SuperLink, ``flwr run``, ``flwr-simulation`` importing
hetbench, Ray and its actors, and the node handshake.

Run on its own: ``python benchmarks/engines_flower.py [--quick] [--sweep-route]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bench_trainer import OVERHEAD, QUICK_OVERHEAD, SGD  # noqa: E402
from trainer_e2e import build_split, hetbench_exe, run_timed  # noqa: E402


def _train(split: Path, tmp: Path, setting: dict, engine: str, seed: int) -> dict:
    """One ``hetbench train`` process with ``--engine engine``: wall time and its results document."""
    out = tmp / f"results-{engine}"
    cmd = hetbench_exe() + [
        "train", "--split", str(split), "--algo", "fedavg", "--model", setting["model"],
        "--clients-per-round", str(setting["per_round"]), "--rounds", str(setting["rounds"]),
        "--local-epochs", str(SGD["local_epochs"]), "--batch-size", str(SGD["batch_size"]), "--lr", str(SGD["lr"]),
        "--eval-every", str(SGD["eval_every"]), "--seed", str(seed), "--engine", engine, "--out", str(out), "--quiet",
    ]
    env = dict(os.environ, RAY_TMPDIR=str(tmp / "ray"))  # Ray's session files go with the temp folder
    (tmp / "ray").mkdir(parents=True, exist_ok=True)
    wall = run_timed(cmd, tmp / f"train-{engine}.log", env=env)
    (path,) = sorted(out.glob("**/*.json"))
    return {"wall_s": wall, "doc": json.loads(path.read_text())}


def run(report: Callable[[str], None], quick: bool = False, seed: int = 0) -> dict:
    """Time ``--engine flower`` against ``--engine local`` on the (b) split; ``report`` gets the lines.

    Parameters
    ----------
    report : callable
        Called with each line of the report.
    quick : bool
        The smoke-run sizes of ``bench_trainer.py --quick`` (100 clients, 3 rounds x 10).
    seed : int
        Seed of the split and of both runs.

    Returns
    -------
    dict
        ``setting``, then per engine (``local``, ``flower``): ``wall_s``, ``train_s``, ``eval_s``,
        ``per_round_s`` (training seconds per round), ``fixed_s`` (wall time outside the rounds and the
        evaluations) and ``accuracy`` (Flower also ``connect_s``, its node handshake); ``flower_overhead_per_round_s`` (Flower's per-round time minus the
        local one), ``slowdown`` (Flower wall / local wall) and ``same_model`` (equal curves and accuracy).
    """
    setting = dict(QUICK_OVERHEAD if quick else OVERHEAD)
    rounds = int(setting["rounds"])
    report(f"(b) Flower simulation vs --engine local: FedAvg, {setting['model']}, {setting['dataset']} Dirichlet 0.5 "
           f"over {setting['clients']} clients, {rounds} rounds x {setting['per_round']}, batch {SGD['batch_size']}, "
           f"eval every {SGD['eval_every']}; Flower: {os.cpu_count()} Ray actors x 1 CPU")
    with tempfile.TemporaryDirectory(prefix="hetbench-engines-flower-") as name:
        tmp = Path(name)
        split = build_split(tmp, setting, seed)
        _train(split, tmp / "warm", dict(setting, rounds=1), "local", seed)  # fills the decode cache, untimed
        out: dict = {"setting": setting}
        for engine in ("local", "flower"):
            r = _train(split, tmp, setting, engine, seed)
            t, final = r["doc"]["timing"], r["doc"]["final"]
            out[engine] = {
                "wall_s": round(r["wall_s"], 2), "train_s": t["train_s"], "eval_s": t["eval_s"],
                "per_round_s": round(t["train_s"] / rounds, 4),
                "fixed_s": round(r["wall_s"] - t["train_s"] - t["eval_s"], 2),
                "accuracy": final["accuracy"], "curve": r["doc"]["curves"]["accuracy"],
                **({"connect_s": t["connect_s"]} if "connect_s" in t else {}),
            }
    loc, flw = out["local"], out["flower"]
    out["flower_overhead_per_round_s"] = round(flw["per_round_s"] - loc["per_round_s"], 4)
    out["slowdown"] = round(flw["wall_s"] / loc["wall_s"], 2)
    out["same_model"] = loc["curve"] == flw["curve"] and loc["accuracy"] == flw["accuracy"]
    report(f"  {'engine':<24s} {'wall (s)':>9s} {'per round (s)':>14s} {'fixed (s)':>10s} {'eval (s)':>9s} "
           f"{'accuracy (%)':>13s}")
    for label, r in (("--engine local", loc), ("--engine flower (Ray)", flw)):
        report(f"  {label:<24s} {r['wall_s']:9.1f} {r['per_round_s']:14.3f} {r['fixed_s']:10.1f} {r['eval_s']:9.2f} "
               f"{r['accuracy']:13.2f}")
    report(f"  Flower's fixed cost includes its node handshake (which SuperNode serves which client): "
           f"{flw.get('connect_s', float('nan')):.1f} s")
    report(f"  Flower: {out['slowdown']:.1f}x the local wall time; {out['flower_overhead_per_round_s'] * 1000:.0f} ms more "
           f"per round ({flw['per_round_s'] * 1000:.0f} vs {loc['per_round_s'] * 1000:.0f} ms); same model: "
           f"{'yes' if out['same_model'] else 'NO'}")
    return out


#: the in-process ``run_simulation`` route's wall time for the sweep (issue 31, 2 busy cores) and the target
RUN_SIMULATION_S = 33.0
TARGET_RATIO = 1.2


def sweep_route(report: Callable[[str], None], repeats: int = 2) -> dict:
    """Time the README's two-algorithm sweep with ``--engine flower`` and ``--engine local``, alternately.

    Returns
    -------
    dict
        Per engine the wall times (``walls_s``) and for Flower ``floor_s`` (each run's wall time less its
        jobs' training and evaluation); ``median_s``, ``target_s`` and whether it is met.
    """
    import statistics
    import subprocess
    import time

    report(f"(c) the README's sweep: hetbench train --algo fedavg,scaffold --rounds 3 --flower-actors 2, default split; "
           f"{repeats} runs per engine, alternately")
    walls: dict[str, list[float]] = {"local": [], "flower": []}
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="hetbench-flower-route-") as name:
        tmp = Path(name)
        env = dict(os.environ, RAY_TMPDIR=str(tmp / "ray"))
        (tmp / "ray").mkdir()
        base = hetbench_exe() + ["train", "--algo", "fedavg,scaffold", "--rounds", "3", "--quiet"]
        subprocess.run(base + ["--engine", "local", "--out", "warm"], cwd=tmp, env=env, check=True,
                       stdout=subprocess.DEVNULL)  # builds the default split and the decode cache, untimed
        for i in range(repeats):
            for engine in ("local", "flower"):
                out = tmp / f"{engine}-{i}"
                extra = ["--flower-actors", "2"] if engine == "flower" else []
                t0 = time.perf_counter()
                subprocess.run(base + ["--engine", engine, "--out", str(out), *extra], cwd=tmp, env=env, check=True,
                               stdout=subprocess.DEVNULL)
                wall = time.perf_counter() - t0
                walls[engine].append(wall)
                if engine == "flower":
                    inside = sum(d["timing"]["train_s"] + d["timing"]["eval_s"]
                                 for d in (json.loads(p.read_text()) for p in out.glob("**/*.json")) if "timing" in d)
                    floors.append(wall - inside)
    med = {k: statistics.median(v) for k, v in walls.items()}
    target = RUN_SIMULATION_S * TARGET_RATIO
    report(f"  --engine local:  {', '.join(f'{w:.1f}' for w in walls['local'])} s (median {med['local']:.1f})")
    report(f"  --engine flower: {', '.join(f'{w:.1f}' for w in walls['flower'])} s (median {med['flower']:.1f}); "
           f"fixed cost of the route (the floor): {', '.join(f'{f:.1f}' for f in floors)} s")
    report(f"  flower / run_simulation's {RUN_SIMULATION_S:.0f} s = {med['flower'] / RUN_SIMULATION_S:.2f}x "
           f"(target <= {TARGET_RATIO}x, {target:.1f} s: {'met' if med['flower'] <= target else 'NOT met'}); "
           f"flower / local = {med['flower'] / med['local']:.1f}x")
    return {"walls_s": walls, "floor_s": floors, "median_s": med, "target_s": target, "met": med["flower"] <= target}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke-run sizes (100 clients, 3 rounds x 10)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--sweep-route", action="store_true", help="time only the README's sweep (c)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per engine in (c)")
    args = ap.parse_args(argv)
    result = sweep_route(print, args.repeats) if args.sweep_route else run(print, quick=args.quick, seed=args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
