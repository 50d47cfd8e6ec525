"""FedAvg end to end: hetbench's trainer vs Flower's Simulation Runtime (Ray), same split, same seed.

What is measured
----------------
One split is built first, untimed, with hetbench's CLI in a temporary folder:
``hetbench partition dirichlet --dataset builtin:mnist5k --clients 100 --alpha 0.5 --seed 0`` (4,000
training rows of 28x28 MNIST digits over 100 clients, a 20% test hold-out per client). Then one run of
FedAvg on it per side - 20 rounds, 10 clients a round, the LeNet-style CNN (``build_model("lenet")``),
one local epoch of plain SGD (lr 0.05, batch 10), the global model evaluated on every test row every 5
rounds and after the last - each as its own process, timed from launch to exit:

* hetbench: ``hetbench train --split S --algo fedavg --model lenet --rounds 20 --clients-per-round 10
  --local-epochs 1 --batch-size 10 --lr 0.05 --seed 0 --eval-every 5 --out R --quiet``; its final test
  accuracy is ``final.accuracy`` of the result JSON it writes under ``R``.
* Flower: ``python benchmarks/flower_fedavg.py --split S ...`` (``flwr[simulation]``): a ``ClientApp`` /
  ``ServerApp`` pair run by ``flwr.simulation.run_simulation`` on the Ray backend, one ClientApp actor
  per CPU (``num_cpus=1`` per client); see that module's docstring for the app.

Why it is a fair comparison
---------------------------
* Same work: both sides decode the same images into the same normalised tensors (per-channel mean and
  population std of the train split), start from the same initial weights (``torch.manual_seed(seed)``
  then ``build_model``), train the clients ``hetbench.train.sampling.select_uniform`` picks for each round,
  shuffle every client's rows with the same generator (seed, round, client) and average with weights
  n_k / sum n_k. Up to float rounding in the averaging, the two runs compute the same models, so the final
  accuracies agree closely; the script prints the gap.
* Same start-up: both wall times run from process launch to exit, so they include the interpreter, the
  imports, reading and decoding the split, and (Flower) starting Ray, its actors and the node handshake
  that maps Flower's random node ids to client ids. Both use all the machine's cores: hetbench one process
  with torch's default threads, Flower one single-threaded actor per core.
* Flower gets the favourable choices: each actor loads the split once and keeps it (nothing is shipped
  through Ray but the model and a small config), no federated evaluation, Flower's and Ray's logging off.

Run: ``python benchmarks/bench_trainer.py`` (a few minutes on 2 cores); ``--skip-flower`` runs hetbench
only. Needs the ``torch`` and ``bench`` extras (``pip install -e .[torch,bench]``) for ``flwr[simulation]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = 10.0  # Flower wall time / hetbench wall time
MAX_GAP = 1.0  # accuracy points


def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def hetbench_exe() -> list[str]:
    exe = Path(sys.executable).with_name("hetbench")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "hetbench.cli.main"]


class Report:
    """Print lines as they come and keep them for the results file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def save(self, path: Path) -> None:
        path.write_text("\n".join(self.lines) + "\n")


def run_timed(cmd: list[str], log: Path, env: dict | None = None) -> float:
    """Run ``cmd`` to completion with its output in ``log``; return the wall time, or exit on failure."""
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        sys.exit(f"error: {' '.join(cmd[:3])} ... exited with {proc.returncode}:\n{tail}")
    return seconds


def build_split(tmp: Path, args) -> Path:
    split = tmp / "split"
    cmd = hetbench_exe() + [
        "partition", "dirichlet", "--dataset", args.dataset, "--clients", str(args.clients),
        "--alpha", str(args.alpha), "--seed", str(args.seed), "--out", str(split),
    ]
    run_timed(cmd, tmp / "partition.log")
    return split


def run_hetbench(split: Path, tmp: Path, args) -> dict:
    out = tmp / "results"
    cmd = hetbench_exe() + [
        "train", "--split", str(split), "--algo", "fedavg", "--model", "lenet",
        "--rounds", str(args.rounds), "--clients-per-round", str(args.per_round), "--local-epochs", "1",
        "--batch-size", "10", "--lr", "0.05", "--seed", str(args.seed), "--eval-every", "5",
        "--out", str(out), "--quiet",
    ] + (["--threads", str(args.hetbench_threads)] if args.hetbench_threads else [])
    wall = run_timed(cmd, tmp / "hetbench-train.log")
    docs = []
    for path in sorted(out.glob("**/*.json")):
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("final"), dict) and "accuracy" in doc["final"]:
            docs.append(doc)
    if len(docs) != 1:
        sys.exit(f"error: expected one result JSON with final.accuracy under {out}, found {len(docs)}")
    doc = docs[0]
    curves = doc.get("curves", {})
    return {
        "wall": wall,
        "accuracy": float(doc["final"]["accuracy"]),
        "curve": list(zip(curves.get("round", []), curves.get("accuracy", []))),
        "timing": doc.get("timing", {}),
    }


def run_flower(split: Path, tmp: Path, args) -> dict:
    out = tmp / "flower.json"
    cmd = [
        sys.executable, str(HERE / "flower_fedavg.py"), "--split", str(split), "--rounds", str(args.rounds),
        "--per-round", str(args.per_round), "--local-epochs", "1", "--batch-size", "10", "--lr", "0.05",
        "--seed", str(args.seed), "--eval-every", "5", "--cpus-per-client", "1", "--json", str(out), "--quiet",
    ]
    env = dict(os.environ, RAY_TMPDIR=str(tmp / "ray"))  # Ray's session files go with the temp folder
    (tmp / "ray").mkdir(exist_ok=True)
    wall = run_timed(cmd, tmp / "flower.log", env=env)
    doc = json.loads(out.read_text())
    return {
        "wall": wall,
        "accuracy": float(doc["final"]["accuracy"]),
        "curve": [(e["round"], e["accuracy"]) for e in doc["evaluations"]],
        "doc": doc,
    }


def check_selection(flower_doc: dict, num_clients: int, args) -> str:
    """Flower trained, round by round, exactly the clients ``select_uniform`` picks (hetbench's rule)."""
    from hetbench.train.sampling import select_uniform

    sel = flower_doc.get("selected", {})
    ok = len(sel) == args.rounds and all(
        sel.get(str(r)) == select_uniform(args.seed, r, num_clients, args.per_round).tolist()
        for r in range(1, args.rounds + 1)
    )
    return f"Flower trained select_uniform's clients in all {args.rounds} rounds: {'yes' if ok else 'NO'}"


def curve_text(curve) -> str:
    return ", ".join(f"r{r} {a:.2f}" for r, a in curve)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20, help="FedAvg rounds (default 20)")
    ap.add_argument("--clients", type=int, default=100, help="clients in the split (default 100)")
    ap.add_argument("--per-round", type=int, default=10, help="clients per round (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the split and of both runs (default 0)")
    ap.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration of the split (default 0.5)")
    ap.add_argument("--dataset", default="builtin:mnist5k",
                    help="source of the split: builtin:mnist5k (28x28, compute-bound) or builtin:digits (8x8, "
                    "framework overhead dominates) (default builtin:mnist5k)")
    ap.add_argument("--skip-flower", action="store_true", help="run hetbench only")
    ap.add_argument("--hetbench-threads", type=int, default=None,
                    help="pass --threads N to hetbench train (default: its own default, all cores)")
    ap.add_argument("--results", default=str(HERE / "results_trainer.txt"),
                    help="write the report here (default benchmarks/results_trainer.txt)")
    args = ap.parse_args(argv)
    if min(args.rounds, args.clients, args.per_round) < 1:
        ap.error("--rounds, --clients and --per-round must be at least 1")
    if args.hetbench_threads is not None and args.hetbench_threads < 1:
        ap.error("--hetbench-threads must be at least 1")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if not args.skip_flower:
        try:
            import flwr  # noqa: F401
            import ray  # noqa: F401
        except ImportError as exc:
            sys.exit(f"error: Flower's simulation engine is not importable ({exc}).\n"
                     "Install the bench extra:  pip install -e .[bench]   (or pass --skip-flower)")
    say = Report()
    say("hetbench trainer benchmark: FedAvg, hetbench train vs Flower simulation (Ray)")
    say(f"  python {platform.python_version()}, torch {pkg_version('torch')}, flwr {pkg_version('flwr')}, "
        f"ray {pkg_version('ray')}, hetbench {pkg_version('hetbench')}")
    say(f"  {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
        f"load average {os.getloadavg()[0]:.2f} before the runs")

    with tempfile.TemporaryDirectory(prefix="hb-trainer-") as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        split = build_split(tmp, args)
        say(f"  split: {args.dataset}, Dirichlet alpha {args.alpha} over {args.clients} clients, seed {args.seed} "
            f"(built in {time.perf_counter() - t0:.1f} s, untimed)")
        say(f"  run: FedAvg, lenet, {args.rounds} rounds x {args.per_round} clients, 1 local epoch, batch 10, "
            f"SGD lr 0.05, eval every 5 rounds on all test rows")
        say(f"  threads: hetbench {args.hetbench_threads or 'all cores (its default)'}; "
            f"Flower {os.cpu_count()} actors x 1 (num_cpus=1 each)")
        say()

        het = run_hetbench(split, tmp, args)
        flw = None if args.skip_flower else run_flower(split, tmp, args)

    rows = [("hetbench train", het)] + ([("Flower simulation (Ray)", flw)] if flw else [])
    say(f"  {'side':<26s} {'wall time (s)':>14s} {'final accuracy (%)':>20s}")
    for name, r in rows:
        say(f"  {name:<26s} {r['wall']:14.1f} {r['accuracy']:20.2f}")
    say()
    for name, r in rows:
        say(f"  {name} accuracy by round: {curve_text(r['curve'])}")
    t = het["timing"]
    if t:
        say(f"  hetbench inside the process: training {t.get('train_s', float('nan')):.1f} s, "
            f"evaluation {t.get('eval_s', float('nan')):.1f} s, "
            f"run_training {t.get('wall_time_s', float('nan')):.1f} s")
    if flw:
        d = flw["doc"]
        tl = d["timeline"]
        eval_s = sum(e["eval_s"] for e in d["evaluations"])
        rounds_s = tl["rounds_done"] - tl["handshake_done"]
        say(f"  Flower inside the process: Ray + {d['actors']} actors + node handshake {tl['handshake_done']:.1f} s, "
            f"{args.rounds} rounds {rounds_s:.1f} s (of which evaluation {eval_s:.1f} s), "
            f"Ray shutdown {d['simulation_s'] - tl['rounds_done']:.1f} s, "
            f"interpreter + imports + split before the simulation {flw['wall'] - d['simulation_s']:.1f} s")
        say("  check  " + check_selection(d, args.clients, args))
        say()
        ratio = flw["wall"] / het["wall"]
        gap = abs(flw["accuracy"] - het["accuracy"])
        met = "MET" if ratio >= TARGET else "NOT MET"
        say(f"  ratio flower/hetbench = {ratio:.1f}x   (target >= {TARGET:g}x: {met})")
        say(f"  accuracy gap = {gap:.1f} points   (target <= {MAX_GAP:g}: {'MET' if gap <= MAX_GAP else 'NOT MET'})")
    path = Path(args.results)
    say.save(path)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
