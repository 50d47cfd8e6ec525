"""hetbench against Apple's pfl-research (``pfl``) on the overhead workload, per round (issue 27).

The workload: FedAvg, ``--model digits-cnn``, on ``hetbench partition dirichlet --dataset builtin:digits
--clients 500 --alpha 0.5 --seed 0`` (1,297 training rows of 8x8 digits, 2-3 per client, so the work per
client is one tiny SGD step and the framework's own cost decides), 50 rounds x 50 clients, one local epoch
of plain SGD (lr 0.05, batch 10, no momentum), one torch thread on every side. Target: pfl's time per round
/ hetbench's with ``--client-exec lockstep`` >= 3.

pfl is never a dependency of hetbench: it runs in an environment of its own, whose Python is given by
``--pfl-python`` (default: the ``PFL_PYTHON`` environment variable)::

    python3 -m venv /tmp/pfl-venv
    /tmp/pfl-venv/bin/pip install torch==2.13.0     # first, so pip keeps the CPU build it finds
    /tmp/pfl-venv/bin/pip install pfl==0.6.0
    PFL_PYTHON=/tmp/pfl-venv/bin/python python benchmarks/bench_pfl.py

Without one (or when ``import pfl, torch`` fails there) the script prints how to set it up and a
``skipped:`` line, and exits 0.

The sides, each from the same decoded split (``hetbench.train.data.load_federated``, untimed):

(a) hetbench lockstep: ``run_training`` with ``client_exec="lockstep"``, ``workers=1``, in this process;
(b) hetbench sequential: the same with ``client_exec="sequential"`` (client after client);
(c) pfl: ``benchmarks/pfl_side.py`` run by the pfl environment's Python as a subprocess: pfl's
    ``FederatedAveraging`` on a ``SimulatedBackend`` with a ``PyTorchModel`` (see that module).

Same computation: this script writes what pfl needs to a temporary folder (untimed): the normalised images
((u8 / 255 - mean) / std, the element-wise operations hetbench applies per batch), the labels, the initial
weights (``torch.manual_seed(seed)`` then ``build_model("digits-cnn", ...)``, as hetbench's run) and, for
every round, the clients ``select_uniform`` picks with each client's rows in the order ``epoch_batches``
deals them (generator ``default_rng([seed, round, 1, client])``). pfl's sampler walks those users in
order and its ``Dataset.iter`` cuts the same mini-batches, and its ``WeightByDatapoints`` averages with
weights n_k, so the two sides train the same clients on the same batches; the report prints the largest
parameter difference of the final models (pfl's average multiplies by 1 / sum n_k where hetbench divides,
so a few ulps are expected) and the two accuracy curves.

What is timed, per round, in the steady state: every side stamps ``time.perf_counter()`` (and
``time.process_time()``, its process's CPU time, printed beside as a figure the load disturbs less) at the
end of each round (hetbench: ``run_training``'s ``on_round`` callback, after the round's evaluation if any; pfl:
a callback after its central iteration, after the evaluation). The span between two stamps is one
round: selecting the clients, their local training, the aggregation, the model update and the framework's
bookkeeping. Counted are rounds ``--warmup + 1`` .. ``--rounds`` that are not evaluated (the global model
is evaluated every ``--eval-every`` rounds and after the last; those spans contain the evaluation), so set-up
(model, workspace, pools, pfl's data and model objects), the warm-up rounds (pfl's round 1 also computes
its per-user metrics) and evaluation are left out; a run's figure is the mean of its counted spans.
Process start-up, imports and decoding are outside every figure.

Noise: the machine may be shared, so the sides run ``--repeats`` times interleaved (lockstep, sequential,
pfl, then the reverse order, ...), and the report gives the best and the median run of each side with
the load average before and after; the target is judged on the best runs (the median ratio is printed
beside it).

Run: ``python benchmarks/bench_pfl.py`` (about 2 minutes on 2 cores; writes ``benchmarks/results_pfl.txt``);
``--quick`` (6 rounds, 1 repeat, writes nothing) for a smoke run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the sibling modules (report, trainer_e2e, trainer_floor)
    sys.path.insert(0, str(HERE))

# OVERHEAD is bench_trainer's overhead
# workload, the one this comparison runs
from bench_trainer import OVERHEAD  # noqa: E402
from report import Report  # noqa: E402

SGD = dict(local_epochs=1, batch_size=10, lr=0.05)
TARGET = 3.0  # pfl time per round / hetbench lockstep time per round, at least
SKIP = "skipped: pfl comparison (no pfl environment: set PFL_PYTHON or pass --pfl-python)"
SETUP = """\
bench_pfl.py compares hetbench with pfl-research, which lives in an environment of its own (never a
dependency of hetbench). Set one up and point the benchmark at its Python:

    python3 -m venv /tmp/pfl-venv
    /tmp/pfl-venv/bin/pip install torch==2.13.0     # first: keeps pip from pulling a CUDA build
    /tmp/pfl-venv/bin/pip install pfl==0.6.0
    PFL_PYTHON=/tmp/pfl-venv/bin/python python benchmarks/bench_pfl.py     # or --pfl-python PATH"""


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pfl-python", default=os.environ.get("PFL_PYTHON") or None,
                    help="the Python of an environment with pfl and torch (default: $PFL_PYTHON)")
    ap.add_argument("--repeats", type=int, default=None, help="interleaved runs of each side (default 5; --quick 1)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per run (default 50; --quick 6)")
    ap.add_argument("--warmup", type=int, default=2, help="first rounds left out of the figure (default 2)")
    ap.add_argument("--eval-every", type=int, default=5, help="rounds between evaluations (left out; default 5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="6 rounds, 1 repeat, writes nothing: a smoke run")
    ap.add_argument("--results", default=None,
                    help="write the report here (default benchmarks/results_pfl.txt; --quick: not written)")
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    if args.rounds is None:
        args.rounds = 6 if args.quick else OVERHEAD["rounds"]
    for name in ("repeats", "rounds", "warmup", "eval_every"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.seed < 0:
        ap.error("--seed must be at least 0")
    if not timed_rounds(args.rounds, args.warmup, args.eval_every):
        ap.error("no round left to time: raise --rounds or lower --warmup / raise --eval-every")
    if args.results is None and not args.quick:
        args.results = str(HERE / "results_pfl.txt")
    return args


def pfl_environment(python: str | None) -> tuple[str | None, str]:
    """(versions line, why not): whether ``python`` imports pfl and torch."""
    if not python:
        return None, "no pfl environment: set PFL_PYTHON or pass --pfl-python"
    probe = ("import sys, torch; from pfl.version import __version__ as v; "
             "print(f'pfl {v}, torch {torch.__version__}, python {sys.version.split()[0]}')")
    try:
        proc = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{python} could not be run ({exc})"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"{python} does not import pfl and torch ({last})"
    return proc.stdout.strip(), ""


def timed_rounds(rounds: int, warmup: int, eval_every: int) -> list[int]:
    """The rounds whose spans count: after the warm-up, not evaluated (every ``eval_every`` and the last)."""
    return [r for r in range(max(warmup, 1) + 1, rounds + 1) if r % eval_every != 0 and r != rounds]


def per_round_seconds(stamps: list[float], rounds: list[int]) -> float:
    """Mean span of ``rounds`` (1-based), ``stamps[i]`` being the end of round ``i + 1``."""
    return sum(stamps[r - 1] - stamps[r - 2] for r in rounds) / len(rounds)


def write_pfl_inputs(data, folder: Path, *, seed: int, rounds: int, per_round: int, eval_every: int) -> list:
    """What ``pfl_side.py`` reads: arrays.npz (normalised images, labels, every (round, client)'s rows in
    hetbench's batch order), init.pt (the initial state_dict), meta.json. Returns the selections."""
    import numpy as np
    import torch
    from trainer_floor import _normalised

    from hetbench.train.local import epoch_batches
    from hetbench.train.models import build_model
    from hetbench.train.sampling import select_uniform

    folder.mkdir(parents=True, exist_ok=True)
    c, side = int(data.x_train.shape[1]), int(data.x_train.shape[-1])
    mean = torch.tensor(np.asarray(data.mean), dtype=torch.float32).reshape(1, c, 1, 1)
    std = torch.tensor(np.asarray(data.std), dtype=torch.float32).reshape(1, c, 1, 1)
    selections, rows, offsets = [], [], [0]
    for r in range(1, rounds + 1):
        picked = select_uniform(seed, r, data.num_clients, per_round)
        selections.append([int(k) for k in picked])
        for k in picked:
            rng = np.random.default_rng([int(seed), r, 1, int(k)])
            batches = epoch_batches(data.client_rows[int(k)], SGD["batch_size"], SGD["local_epochs"], rng)
            order = np.concatenate(batches).astype(np.int64) if batches else np.zeros(0, np.int64)
            rows.append(order)
            offsets.append(offsets[-1] + order.size)
    np.savez(folder / "arrays.npz",
             x_train=_normalised(data.x_train, mean, std).numpy(), y_train=np.asarray(data.y_train, np.int64),
             x_test=_normalised(data.x_test, mean, std).numpy(), y_test=np.asarray(data.y_test, np.int64),
             rows=np.concatenate(rows), offsets=np.asarray(offsets, np.int64))
    torch.manual_seed(int(seed))
    model = build_model(OVERHEAD["model"], c, len(data.label_names), side, "group")
    torch.save(model.state_dict(), folder / "init.pt")
    (folder / "meta.json").write_text(json.dumps(dict(
        rounds=rounds, per_round=per_round, eval_every=eval_every, in_channels=c,
        num_classes=len(data.label_names), image_size=side, seed=seed, **SGD)))
    return selections


def floor_line(data, selections: list) -> str:
    """The arithmetic of a round against this CPU's single-thread matrix-product rate: the compute floor."""
    from trainer_lockstep import gemm_gflops

    from hetbench.train.client_exec import step_flop
    from hetbench.train.models import build_model

    side = int(data.x_train.shape[-1])
    flop_image = step_flop(build_model(OVERHEAD["model"], data.in_channels, data.num_classes, side, "group"),
                           data.in_channels, side, 1)
    images = sum(int(data.client_rows[k].size) for picked in selections for k in picked) / len(selections)
    gemm = gemm_gflops(1)
    return (f"  work: {images:.0f} training images per round x {flop_image / 1e6:.1f} MFLOP = "
            f"{images * flop_image / 1e9:.2f} GFLOP; one 1024x1024 float32 matrix product runs at {gemm:.0f} GFLOP/s "
            f"on 1 thread here, so {1e3 * images * flop_image / 1e9 / gemm:.1f} ms per round is the compute floor")


def run_hetbench(data, mode: str, *, seed: int, rounds: int, per_round: int, eval_every: int) -> dict:
    """One ``run_training`` in this process: per-round stamps, the curve, the final parameters."""
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.simulation import run_training

    stamps: list[float] = []
    cpu_stamps: list[float] = []

    def on_round(r: int, summary: dict) -> None:
        stamps.append(time.perf_counter())
        cpu_stamps.append(time.process_time())

    cfg = TrainConfig(rounds=rounds, clients_per_round=per_round, model=OVERHEAD["model"], seed=seed, workers=1,
                      device="cpu", client_exec=mode, eval_every=eval_every, **SGD)
    gc.collect()
    doc, run = run_training(data, make_algorithm("fedavg"), cfg, return_state=True, on_round=on_round)
    curves = doc["curves"]
    return {"stamps": stamps, "cpu_stamps": cpu_stamps, "curve": list(zip(curves["round"], curves["accuracy"])),
            "params": run.global_params.detach().clone(), "execution": doc.get("execution", {})}


def run_pfl(python: str, inputs: Path, out: Path) -> dict:
    """``pfl_side.py`` in the pfl environment, one torch thread; its stamps, curve and final parameters."""
    import numpy as np
    import torch

    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PFL_PYTORCH_DEVICE="cpu")
    cmd = [python, str(HERE / "pfl_side.py"), "--data", str(inputs), "--out", str(out)]
    with open(out.with_suffix(".log"), "w") as log:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    if proc.returncode != 0:
        tail = "\n".join(out.with_suffix(".log").read_text(errors="replace").splitlines()[-30:])
        sys.exit(f"error: pfl_side.py exited with {proc.returncode}:\n{tail}")
    doc = json.loads((out / "pfl.json").read_text())
    doc["curve"] = [tuple(p) for p in doc["curve"]]
    doc["params"] = torch.from_numpy(np.load(out / "params.npy"))
    return doc


def _best_median(values: list[float]) -> tuple[float, float]:
    return min(values), statistics.median(values)


def main(argv=None) -> int:
    args = parse_args(argv)
    versions, why = pfl_environment(args.pfl_python)
    if versions is None:
        print(SETUP)
        print(f"skipped: pfl comparison ({why})")
        return 0

    import torch

    from trainer_e2e import build_split

    from hetbench.train.data import load_federated

    torch.set_num_threads(1)
    say = Report()
    rounds, per_round = args.rounds, OVERHEAD["per_round"]
    counted = timed_rounds(rounds, args.warmup, args.eval_every)
    say("hetbench vs pfl-research, per round" + (" (--quick: a smoke run, not the figures)" if args.quick else ""))
    say(f"  hetbench: python {platform.python_version()}, torch {torch.__version__}; pfl side: {versions}")
    say(f"  {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} before the runs")
    say(f"  FedAvg, {OVERHEAD['model']}, {OVERHEAD['dataset']} Dirichlet 0.5 over {OVERHEAD['clients']} clients "
        f"(seed {args.seed}), {rounds} rounds x {per_round}, 1 epoch, batch {SGD['batch_size']}, lr {SGD['lr']}, "
        f"plain SGD; 1 torch thread each, hetbench workers=1")
    say(f"  timed: the span of each round from the end of the previous one (training, aggregation, update, "
        f"bookkeeping), mean over rounds {counted[0]}..{counted[-1]} that are not evaluated ({len(counted)} rounds; "
        f"evaluation every {args.eval_every} and warm-up rounds 1..{args.warmup} left out); "
        f"{args.repeats} interleaved run(s) per side")
    say()
    runs: dict[str, list[dict]] = {"lockstep": [], "sequential": [], "pfl": []}
    with tempfile.TemporaryDirectory(prefix="hb-pfl-") as tmp_name:
        tmp = Path(tmp_name)
        split = build_split(tmp, dict(dataset=OVERHEAD["dataset"], clients=OVERHEAD["clients"]), args.seed)
        data = load_federated(str(split), quiet=True)
        inputs = tmp / "pfl-inputs"
        selections = write_pfl_inputs(data, inputs, seed=args.seed, rounds=rounds, per_round=per_round,
                         eval_every=args.eval_every)
        say(floor_line(data, selections))
        say()
        het = dict(seed=args.seed, rounds=rounds, per_round=per_round, eval_every=args.eval_every)
        for i in range(args.repeats):
            order = ("lockstep", "sequential", "pfl") if i % 2 == 0 else ("pfl", "sequential", "lockstep")
            for side in order:
                if side == "pfl":
                    result = run_pfl(args.pfl_python, inputs, tmp / f"pfl-{i}")
                else:
                    result = run_hetbench(data, side, **het)
                result["per_round"] = per_round_seconds(result["stamps"], counted)
                result["cpu_per_round"] = per_round_seconds(result["cpu_stamps"], counted)
                runs[side].append(result)
    load_after = os.getloadavg()

    names = {"lockstep": "hetbench lockstep", "sequential": "hetbench sequential",
             "pfl": versions.split(",")[0]}  # "pfl 0.6.0"
    best, median, cpu_best = {}, {}, {}
    say(f"  {'side':<20s} {'wall ms per round: best':>24s} {'median':>7s} {'CPU ms: best':>13s}   "
        f"{'wall, all runs':<40s} final accuracy")
    for side, side_runs in runs.items():
        ms = [1e3 * r["per_round"] for r in side_runs]
        best[side], median[side] = _best_median(ms)
        cpu_best[side] = min(1e3 * r["cpu_per_round"] for r in side_runs)
        say(f"  {names[side]:<20s} {best[side]:24.2f} {median[side]:7.2f} {cpu_best[side]:13.2f}   "
            f"{', '.join(f'{m:.1f}' for m in ms):<40s} {side_runs[-1]['curve'][-1][1]:.2f} %")
    ex = runs["lockstep"][-1]["execution"]
    say(f"  hetbench lockstep run's execution record: {json.dumps(ex, sort_keys=True)}")
    say()
    ratio_l, ratio_s = best["pfl"] / best["lockstep"], best["pfl"] / best["sequential"]
    say(f"  pfl / hetbench lockstep   = {ratio_l:.2f}x (best runs; medians {median['pfl'] / median['lockstep']:.2f}x, "
        f"CPU {cpu_best['pfl'] / cpu_best['lockstep']:.2f}x)   target >= {TARGET:g}x: "
        f"{'MET' if ratio_l >= TARGET else 'NOT MET'}")
    say(f"  pfl / hetbench sequential = {ratio_s:.2f}x (best runs; "
        f"medians {median['pfl'] / median['sequential']:.2f}x, "
        f"CPU {cpu_best['pfl'] / cpu_best['sequential']:.2f}x)")
    say(f"  hetbench sequential / lockstep = {best['sequential'] / best['lockstep']:.2f}x "
        f"(CPU {cpu_best['sequential'] / cpu_best['lockstep']:.2f}x)")
    say()
    pfl_run = runs["pfl"][-1]
    for side in ("sequential", "lockstep"):
        diff = float((runs[side][-1]["params"] - pfl_run["params"]).abs().max())
        scale = float(pfl_run["params"].abs().max())
        say(f"  check  final parameters, pfl vs hetbench {side}: max |difference| {diff:.3g} (largest |parameter| "
            f"{scale:.3g})")
    diff = float((runs["sequential"][-1]["params"] - runs["lockstep"][-1]["params"]).abs().max())
    say(f"  check  final parameters, hetbench lockstep vs sequential: max |difference| {diff:.3g}")
    same_curve = all(r["curve"] == pfl_run["curve"] for r in runs["pfl"])
    say(f"  check  pfl's runs all give the same curve: {'yes' if same_curve else 'NO'}")
    for side in ("sequential", "lockstep", "pfl"):
        curve = runs[side][-1]["curve"]
        say(f"  curve  {names[side]:<20s} " + "  ".join(f"{r}:{a:.2f}" for r, a in curve))
    gaps = [abs(a - b) for (_, a), (_, b) in zip(runs["sequential"][-1]["curve"], pfl_run["curve"])]
    say(f"  check  accuracy curves, pfl vs hetbench sequential: largest gap {max(gaps):.2f} points over "
        f"{len(gaps)} evaluations")
    say(f"  load average {' '.join(f'{x:.2f}' for x in load_after)} after the runs")
    if args.results:
        path = Path(args.results)
        say.save(path)
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
