"""hetbench's trainer in one run: (a) its compute floor, (b) its overhead against Flower, (c) its memory,
(d) lockstep clients.

(a) Compute floor: hetbench vs a plain PyTorch loop, same SGD steps, same threads
--------------------------------------------------------------------------------
FedAvg, ``--model lenet``, on ``hetbench partition dirichlet --dataset builtin:mnist5k --clients 100
--alpha 0.5`` (4,000 training rows of 28x28 MNIST), 20 rounds x 10 clients, one local epoch of plain SGD
(lr 0.05, batch 10), the global model evaluated on every test row every 5 rounds and after the last.
hetbench's side is ``hetbench.train.simulation.run_training`` (what ``hetbench train`` runs per seed); the
floor is ``trainer_floor.fedavg_plain``: the same FedAvg as an ordinary ``nn.Module`` /
``torch.optim.SGD`` / ``state_dict`` loop (same initial weights, clients, batches in the same order, lr
and averaging; see that module). Target: hetbench time / floor time <= 1.15.

* What is timed: both sides in this one process, from the split already decoded
  (``hetbench.train.data.load_federated``, untimed, shared) to the final accuracy: hetbench's call
  includes building its model, workspace and client pool, the rounds, the evaluations and its results
  document; the floor's call includes normalising the images into one float tensor, building its model,
  the rounds and the evaluations. Process start, imports and decoding are the same for both and left out.
* Threads: one torch thread on both sides, hetbench with ``workers=1`` (``--workers 1``), so both run the
  clients one after another on one core. This is the comparison that isolates hetbench's own cost: its
  default (one client per worker thread, one torch thread each, one worker per core) would be compared with
  a plain loop whose only parallelism is torch's intra-op threads, which scale poorly on batches of 10, and
  so would hide overhead behind a better use of the cores. With equal threads the two sides compute
  bit-identical models; the report prints the largest parameter difference and the accuracy gap. That
  all-cores comparison is printed too, for information (hetbench's default workers vs the plain loop on
  as many intra-op threads), without a target (``--skip-all-cores`` leaves it out). On a busy machine its
  plain side is not meaningful: torch's intra-op threads wait for each other when the cores are taken.
* Noise: one untimed 1-round warm-up of each side (allocator, oneDNN primitives), then ``--repeats`` runs
  of each, interleaved (ABBA...); the figure is the ratio of the best wall times; the medians, every run
  and the ratio of CPU times (``time.process_time``, which other processes on the machine disturb less)
  are printed too.

(b) Overhead regime: hetbench vs Flower's simulation, end to end
---------------------------------------------------------------
FedAvg, ``--model digits-cnn``, on ``hetbench partition dirichlet --dataset builtin:digits --clients 500
--alpha 0.5`` (1,297 training rows of 8x8 digits, 2-3 per client: the work per client is tiny, so the
framework's own cost decides), 50 rounds x 50 clients, the same SGD and evaluation schedule as (a). Each
side is its own process, timed from launch to exit. Target: Flower time / hetbench time >= 10.

* hetbench: ``hetbench train --split S --algo fedavg --model digits-cnn --rounds 50 --clients-per-round 50
  --local-epochs 1 --batch-size 10 --lr 0.05 --seed 0 --eval-every 5 --out R --quiet`` (its defaults:
  clients in parallel worker threads, one per core, one torch thread each); its accuracy is
  ``final.accuracy`` of the results JSON. The split folder is fresh, so hetbench starts with no decoded-image
  cache and decodes the split inside its timed run, as every Flower process does.
* Flower: ``python benchmarks/flower_fedavg.py --split S --model digits-cnn ...`` (``flwr[simulation]``):
  a ``ClientApp`` / ``ServerApp`` pair run by ``flwr.simulation.run_simulation`` on the Ray backend, one
  single-threaded ClientApp actor per CPU (``num_cpus=1`` per client); see that module's docstring.

hetbench's Flower backend (``hetbench train --engine flower``, the same round loop with each round's
client work sent as Flower messages) is run on the same split too, and its per-round cost is printed
(``timing.train_s / rounds``) beside the local engine's and Flower's own FedAvg's, for information.

Why it is fair: both sides decode the same images into the same normalised tensors, start from the same
weights (``torch.manual_seed(seed)`` then ``build_model``), train the clients
``hetbench.train.sampling.select_uniform`` picks (the report checks Flower's), shuffle every client with
the same generator (seed, round, client) and average with weights n_k / sum n_k in the same order of
operations, every client update on one torch thread: the two runs compute the same models and the
script prints the accuracy gap. Both wall times include the interpreter, the imports, reading and
decoding the split, and for Flower starting Ray, its actors and the node handshake that maps Flower's
random node ids to client ids. Both use all the machine's cores. Flower gets the favourable choices:
each actor loads the split once and keeps it (only the model and a small config travel through Ray), no
federated evaluation, Flower's and Ray's logging off.

(c) Memory: ``trainer_memory.py``
---------------------------------
When ``benchmarks/trainer_memory.py`` is present, its ``run(report, n_images)`` trains one round on a
generated split of ``--memory-images`` 64x64 RGB images (200,000 by default: 2.4 GB decoded) and reports
the decoded size, the peak RSS (target < 1.5 GB) and the decode throughput with 1 and 2 processes (target
>= 1.7x); its lines are printed here and its figures enter the summary.

(d) Lockstep clients: ``trainer_lockstep.py``
--------------------------------------------
FedAvg with ``client_exec="lockstep"`` against ``"sequential"`` and the plain loop of (a), per round, on
(i) digits-cnn at 16 px, batch 20, 50 clients per round; (ii) LeNet at 28 px, batch 64, 10 clients per
round; (iii) ResNet-10 at 32 px, batch 32, 10 clients per round (all on ``builtin:mnist5k``, Dirichlet 0.5
over 100 clients, resized); and the overhead workload of (b); one thread and all cores. Targets (issue 46):
plain / lockstep >= 4 on the overhead workload, >= 1.3 on (i), and >= 1 (not slower) on (ii) and (iii). Each
workload also prints its compute floor: the plain loop's
GFLOP/s against one large matrix product's on one thread, the most any batching of clients can gain
there (see that module's docstring).

The splits are built first, untimed, with hetbench's CLI in a temporary folder. Every figure is printed
with its target and written, with the machine and its load, to ``--results``.

Run: ``python benchmarks/bench_trainer.py`` (about 10 minutes on 2 cores); ``--quick`` for a smoke run of
every part at small sizes; ``--skip-floor`` / ``--skip-flower`` / ``--skip-memory`` / ``--skip-lockstep`` leave
a part out; ``--lockstep-device cuda`` runs (d)'s hetbench sides on a GPU (the plain loop stays on the CPU).
Needs the ``torch`` and ``bench`` extras (``pip install -e .[torch,bench]``; ``flwr[simulation]`` for (b)).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the sibling modules (report, trainer_floor, trainer_e2e, trainer_memory)
    sys.path.insert(0, str(HERE))

from report import Report  # noqa: E402
from trainer_e2e import build_split, run_flower, run_hetbench_cli, selection_check  # noqa: E402

FLOOR = dict(dataset="builtin:mnist5k", clients=100, per_round=10, rounds=20, model="lenet")
OVERHEAD = dict(dataset="builtin:digits", clients=500, per_round=50, rounds=50, model="digits-cnn")
QUICK_FLOOR = dict(FLOOR, rounds=3)
QUICK_OVERHEAD = dict(OVERHEAD, clients=100, per_round=10, rounds=3)
QUICK_MEMORY_IMAGES = 2_000
SGD = dict(local_epochs=1, batch_size=10, lr=0.05, eval_every=5)  # both parts, both sides
MAX_GAP = 1.0  # accuracy points between the two sides of a comparison
TARGETS = {  # the targets: (bound, "<=" or ">=")
    "floor": (1.15, "<="),  # (a) hetbench time / plain PyTorch time
    "overhead": (10.0, ">="),  # (b) Flower time / hetbench time
    "gap": (MAX_GAP, "<="),  # accuracy points
    "rss": (1.5, "<"),  # (c) peak RSS, GB
    "decode": (1.7, ">="),  # (c) decode throughput, 2 processes / 1 process
    # (d) plain PyTorch loop time / lockstep time (issue 46): the overhead workload (digits-cnn 8 px), (i)
    # digits-cnn 16 px, and not slower on (ii) LeNet 28 px and (iii) ResNet-10 32 px
    "lockstep_overhead": (4.0, ">="),
    "lockstep_i": (1.3, ">="),
    "lockstep_ii": (1.0, ">="),
    "lockstep_iii": (1.0, ">="),
}


@dataclass
class Figure:
    """One figure of the summary: its value against its target."""

    part: str
    what: str
    value: float
    target: str  # a key of TARGETS
    unit: str = "x"

    def met(self) -> bool:
        bound, how = TARGETS[self.target]
        return {"<=": self.value <= bound, ">=": self.value >= bound, "<": self.value < bound}[how]

    def line(self) -> str:
        bound, how = TARGETS[self.target]
        return (f"({self.part}) {self.what} = {self.value:.3g}{self.unit}   target {how} {bound:g}{self.unit}: "
                f"{'MET' if self.met() else 'NOT MET'}")


def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


class torch_threads:
    """``with torch_threads(n):`` torch's intra-op thread count is ``n`` inside, restored after."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> None:
        import torch

        self.saved = torch.get_num_threads()
        torch.set_num_threads(self.n)

    def __exit__(self, *exc) -> None:
        import torch

        torch.set_num_threads(self.saved)


def _stats(times: list[float]) -> tuple[float, float]:
    s = sorted(times)
    return s[0], s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def floor_part(say: Report, split: Path, setting: dict, args) -> list[Figure]:
    """(a): hetbench's ``run_training`` vs ``trainer_floor.fedavg_plain``, interleaved, in this process."""
    import gc

    from trainer_floor import fedavg_plain

    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.data import load_federated
    from hetbench.train.simulation import run_training

    data = load_federated(str(split), quiet=True)

    def hetbench_side(rounds: int, workers: int | None) -> dict:
        cfg = TrainConfig(rounds=rounds, clients_per_round=setting["per_round"], model=setting["model"],
                          seed=args.seed, workers=workers, device="cpu", **SGD)
        gc.collect()
        t0, cpu0 = time.perf_counter(), time.process_time()
        doc, run = run_training(data, make_algorithm("fedavg"), cfg, return_state=True)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        return {"seconds": seconds, "cpu": cpu, "accuracy": float(doc["final"]["accuracy"]),
                "params": run.global_params, "timing": doc.get("timing", {})}

    def plain_side(rounds: int) -> dict:
        gc.collect()
        r = fedavg_plain(data, model_name=setting["model"], rounds=rounds, per_round=setting["per_round"],
                         seed=args.seed, **SGD)
        # hetbench's results round accuracies to 4 decimals; so does this side, for the gap
        return {"seconds": r.seconds, "cpu": r.cpu_seconds, "accuracy": round(r.accuracy, 4), "params": r.params}

    def compare(threads: int, workers: int | None) -> tuple[list[dict], list[dict]]:
        """Warm-up, then ``args.repeats`` runs of each side in the order h p, p h, h p, ..."""
        het: list[dict] = []
        plain: list[dict] = []
        with torch_threads(threads):
            hetbench_side(1, workers), plain_side(1)  # warm-up, untimed
            for i in range(args.repeats):
                for side in ("hp" if i % 2 == 0 else "ph"):
                    if side == "h":
                        het.append(hetbench_side(setting["rounds"], workers))
                    else:
                        plain.append(plain_side(setting["rounds"]))
        return het, plain

    def line(name: str, runs: list[dict]) -> tuple[float, float, float]:
        best, median = _stats([r["seconds"] for r in runs])
        cpu = min(r["cpu"] for r in runs)
        every = ", ".join(f"{r['seconds']:.2f}" for r in runs)
        say(f"    {name:<22s} best {best:7.2f} s  median {median:7.2f} s  (all: {every})  CPU best {cpu:7.2f} s  "
            f"accuracy {runs[-1]['accuracy']:6.2f} %")
        return best, median, cpu

    say(f"(a) compute floor: FedAvg, {setting['model']}, {setting['dataset']} Dirichlet 0.5 over {setting['clients']} "
        f"clients, {setting['rounds']} rounds x {setting['per_round']}, batch 10, lr 0.05, eval every 5")
    say(f"    in this process from the decoded split; 1 warm-up round each, then {args.repeats} timed run(s) each, interleaved")
    figures = []
    cores = os.cpu_count() or 1
    comparisons = [("1 torch thread each, hetbench --workers 1", 1, 1)]
    if not args.skip_all_cores:
        comparisons.append((f"all {cores} cores: hetbench default workers vs plain loop on {cores} intra-op threads "
                            "(information)", cores, None))
    for label, threads, workers in comparisons:
        hets, plains = compare(threads, workers)
        het, plain = hets[-1], plains[-1]
        diff = float((het["params"] - plain["params"]).abs().max())
        say(f"  {label}:")
        h_best, h_med, h_cpu = line("hetbench run_training", hets)
        p_best, p_med, p_cpu = line("plain PyTorch loop", plains)
        t = het["timing"]
        say(f"    hetbench inside its last run: train {t.get('train_s', float('nan')):.2f} s, "
            f"eval {t.get('eval_s', float('nan')):.2f} s, {t.get('workers')} worker(s) x {t.get('client_threads')} "
            "torch thread(s)")
        say(f"    hetbench / plain: wall best {h_best / p_best:.3f}x, median {h_med / p_med:.3f}x, CPU {h_cpu / p_cpu:.3f}x; "
            f"accuracy gap {abs(het['accuracy'] - plain['accuracy']):.2f} points; max |param difference| {diff:.3g}")
        if workers == 1:
            figures.append(Figure("a", f"compute floor: hetbench / plain PyTorch, 1 thread, best of {args.repeats}",
                                  h_best / p_best, "floor"))
            figures.append(Figure("a", "compute floor: accuracy gap", abs(het["accuracy"] - plain["accuracy"]),
                                  "gap", " points"))
    say()
    return figures


def overhead_part(say: Report, split: Path, setting: dict, args, tmp: Path) -> list[Figure]:
    """(b): ``hetbench train`` vs ``flower_fedavg.py``, each a process timed from launch to exit."""
    run = dict(setting, seed=args.seed, **SGD)
    say(f"(b) overhead regime: FedAvg, {setting['model']}, {setting['dataset']} Dirichlet 0.5 over "
        f"{setting['clients']} clients, {setting['rounds']} rounds x {setting['per_round']}, end to end")
    say(f"    threads: hetbench its default (clients in parallel threads, one per core); Flower {os.cpu_count()} "
        "Ray actors x 1 (num_cpus=1 each)")
    het = run_hetbench_cli(split, tmp, run)
    flw = run_flower(split, tmp, run)
    say(f"  {'side':<26s} {'wall time (s)':>14s} {'final accuracy (%)':>20s}")
    for name, r in (("hetbench train", het), ("Flower simulation (Ray)", flw)):
        say(f"  {name:<26s} {r['wall']:14.1f} {r['accuracy']:20.2f}")
    t = het["timing"]
    say(f"  hetbench inside the process: run_training {t.get('wall_time_s', float('nan')):.1f} s (training "
        f"{t.get('train_s', float('nan')):.1f} s, evaluation {t.get('eval_s', float('nan')):.1f} s); interpreter, "
        f"imports, split and results {het['wall'] - t.get('wall_time_s', 0.0):.1f} s")
    d = flw["doc"]
    tl = d["timeline"]
    eval_s = sum(e["eval_s"] for e in d["evaluations"])
    say(f"  Flower inside the process: Ray + {d['actors']} actors + node handshake {tl['handshake_done']:.1f} s, "
        f"{setting['rounds']} rounds {tl['rounds_done'] - tl['handshake_done']:.1f} s (of which evaluation "
        f"{eval_s:.1f} s), Ray shutdown {d['simulation_s'] - tl['rounds_done']:.1f} s, interpreter + imports + "
        f"split before the simulation {flw['wall'] - d['simulation_s']:.1f} s")
    say("  check  " + selection_check(d, setting["clients"], run))
    # hetbench's own Flower backend: the same round loop, the client work as Flower messages
    hfl = run_hetbench_cli(split, tmp, run, extra=("--engine", "flower"), tag="flower")
    rounds = setting["rounds"]
    say(f"  hetbench train --engine flower: wall {hfl['wall']:.1f} s, accuracy {hfl['accuracy']:.2f} % (--engine "
        f"local {het['accuracy']:.2f} %); per round {1000 * hfl['timing'].get('train_s', float('nan')) / rounds:.0f} ms "
        f"of client work through Flower (train_s / rounds) against {1000 * t.get('train_s', float('nan')) / rounds:.0f} "
        f"ms locally; Flower's own FedAvg {1000 * (tl['rounds_done'] - tl['handshake_done'] - eval_s) / rounds:.0f} ms")
    say()
    gap = abs(round(flw["accuracy"], 4) - het["accuracy"])  # hetbench's results round to 4 decimals
    return [Figure("b", "overhead: Flower / hetbench, end to end", flw["wall"] / het["wall"], "overhead"),
            Figure("b", "overhead: accuracy gap", gap, "gap", " points")]


def memory_part(say: Report, n_images: int) -> list[Figure]:
    """(c): ``trainer_memory.run`` when helper module ``trainer_memory.py`` is present."""
    if not (HERE / "trainer_memory.py").is_file():
        say("(c) memory: benchmarks/trainer_memory.py is not present; skipped")
        say()
        return []
    import trainer_memory

    say(f"(c) memory: trainer_memory.run(n_images={n_images:,})")
    result = trainer_memory.run(report=say, n_images=n_images)
    say()
    return memory_figures(result)


def memory_figures(result: dict) -> list[Figure]:
    """(c)'s figures from ``trainer_memory.run``'s dict: ``peak_rss`` (bytes, shown in GB) and ``speedup``
    (decode throughput, 2 processes / 1); a key it lacks gives no figure."""
    figures = []
    if isinstance(result.get("peak_rss"), (int, float)):
        figures.append(Figure("c", "memory: peak RSS of one round", result["peak_rss"] / 1e9, "rss", " GB"))
    if isinstance(result.get("speedup"), (int, float)):
        figures.append(Figure("c", "memory: decode throughput, 2 processes / 1", float(result["speedup"]), "decode"))
    return figures


def lockstep_part(say: Report, tmp: Path, args) -> list[Figure]:
    """(d): ``trainer_lockstep.run``: lockstep vs sequential vs the plain loop on the issue's workloads."""
    from trainer_lockstep import run as lockstep_run

    rows = lockstep_run(say, tmp, args.seed, args.repeats, args.quick, build_split, device=args.lockstep_device)
    figures = []
    for row in rows:
        target = {"overhead": "lockstep_overhead", "i": "lockstep_i", "ii": "lockstep_ii",
                  "iii": "lockstep_iii"}.get(row["workload"])
        if target is None:
            continue
        for key, label in (("1", "1 thread"), ("all", "all cores")):
            if key not in row:
                continue
            figures.append(Figure("d", f"lockstep ({row['workload']}): plain loop / lockstep, {label}",
                                  row[key]["plain_over_lockstep"], target))
    return figures


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run at small sizes: (a) {QUICK_FLOOR['rounds']} rounds, (b) "
                    f"{QUICK_OVERHEAD['clients']} clients, {QUICK_OVERHEAD['per_round']} per round, "
                    f"{QUICK_OVERHEAD['rounds']} rounds, (c) {QUICK_MEMORY_IMAGES:,} images, 1 repeat")
    ap.add_argument("--skip-floor", action="store_true", help="leave out (a), the plain PyTorch comparison")
    ap.add_argument("--skip-all-cores", action="store_true",
                    help="leave out (a)'s second comparison, on all cores (information only, no target)")
    ap.add_argument("--skip-flower", action="store_true", help="leave out (b), the Flower comparison")
    ap.add_argument("--skip-memory", action="store_true", help="leave out (c), the memory benchmark")
    ap.add_argument("--skip-lockstep", action="store_true",
                    help="leave out (d), lockstep clients against the sequential path and the plain loop")
    ap.add_argument("--lockstep-device", default="cpu",
                    help="where (d)'s hetbench sides train: cpu (default) or cuda (the plain loop stays on the CPU)")
    ap.add_argument("--memory-images", type=int, default=None,
                    help="images of (c)'s generated split (default 200,000; 2,000 with --quick)")
    ap.add_argument("--repeats", type=int, default=None, help="timed runs of each side of (a) (default 3; 1 with --quick)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the splits and of every run (default 0)")
    ap.add_argument("--results", default=None,
                    help="write the report here (default benchmarks/results_trainer.txt; --quick: not written)")
    args = ap.parse_args(argv)
    if args.memory_images is not None and args.memory_images < 1:
        ap.error("--memory-images must be at least 1")
    if args.repeats is not None and args.repeats < 1:
        ap.error("--repeats must be at least 1")
    if args.seed < 0:
        ap.error("--seed must be non-negative")
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.memory_images = args.memory_images or (QUICK_MEMORY_IMAGES if args.quick else 200_000)
    if args.results is None and not args.quick:
        args.results = str(HERE / "results_trainer.txt")
    return args


def main(argv=None) -> list[Figure]:
    args = parse_args(argv)
    if not args.skip_flower:
        try:
            import flwr  # noqa: F401
            import ray  # noqa: F401
        except ImportError as exc:
            sys.exit(f"error: Flower's simulation engine is not importable ({exc}).\n"
                     "Install the bench extra:  pip install -e .[bench]   (or pass --skip-flower)")
    floor, overhead = (QUICK_FLOOR, QUICK_OVERHEAD) if args.quick else (FLOOR, OVERHEAD)
    say = Report()
    say("hetbench trainer benchmark" + (" (--quick: small sizes, a smoke run, not the figures)" if args.quick else ""))
    say(f"  python {platform.python_version()}, torch {pkg_version('torch')}, flwr {pkg_version('flwr')}, "
        f"ray {pkg_version('ray')}, hetbench {pkg_version('hetbench')}")
    say(f"  {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
        f"load average {os.getloadavg()[0]:.2f} before the runs")
    say()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="hb-trainer-") as tmp_name:
        tmp = Path(tmp_name)
        if not args.skip_floor:
            figures += floor_part(say, build_split(tmp, floor, args.seed), floor, args)
        if not args.skip_flower:
            figures += overhead_part(say, build_split(tmp, overhead, args.seed), overhead, args, tmp)
        if not args.skip_lockstep:
            figures += lockstep_part(say, tmp, args)
    if not args.skip_memory:
        figures += memory_part(say, args.memory_images)
    say(f"summary (load average {os.getloadavg()[0]:.2f} after the runs)")
    for f in figures:
        say("  " + f.line())
    if args.results:
        path = Path(args.results)
        say.save(path)
        print(f"\nwrote {path}")
    return figures


if __name__ == "__main__":
    main()
