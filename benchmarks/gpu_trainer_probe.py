"""The GPU checks of issue 46 in one script, then where a GPU run's time goes.

1. ``pytest tests/train/test_stacked.py tests/train/test_lockstep.py`` with ``HETBENCH_TEST_DEVICE`` set to the
   device: the stacked engine and every algorithm's lockstep round against its sequential one, on the GPU;
2. ``bench_trainer.py`` part (d) on the device (``--lockstep-device``): per-round times of lockstep,
   sequential and the CPU's plain loop;
3. ``lockstep_memory.py`` on the device: ``max_memory_allocated`` of a lockstep round against a sequential one
   at 10 clients;
4. one ``hsu-label-skew`` full-mode run (LeNet, 100 rounds of 10 of 20 clients, batch 64, mnist5k) trained in
   lockstep and sequentially, the dry run's estimate of the claim, and a profile of the lockstep run (top
   functions by own and cumulative time).

Run on a GPU machine from the repository root (``DEV=cpu ROUNDS=3 CHECKS=0`` tries part 4 on a CPU)::

    OUTD=/tmp/probe python3 benchmarks/gpu_trainer_probe.py

Its output on an H200 (2026-11-27) is docs/claims/full-h200-2026-11-27/trainer-probe.log: 22.3 s per run in
lockstep, 24.4 s sequentially (process wall), 92 ms a round in the profiled run, where timing a bare model
had estimated the claim's 30 runs at 52-59 s in all.
"""
import cProfile, io, os, pstats, subprocess, sys, time
from hetbench.cli.main import console_main
OUT = os.environ.get("OUTD", "/tmp/probe"); DEV = os.environ.get("DEV", "cuda"); R = os.environ.get("ROUNDS", "100")
os.makedirs(OUT, exist_ok=True)
if os.environ.get("CHECKS", "1") != "0":
    checks = [
        ("pytest", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/train/test_stacked.py",
                    "tests/train/test_lockstep.py"], 300),
        ("bench (d)", [sys.executable, "benchmarks/bench_trainer.py", "--skip-floor", "--skip-flower", "--skip-memory",
                       "--lockstep-device", DEV, "--repeats", "1", "--results", f"{OUT}/results_trainer_lockstep_{DEV}.txt"],
         300),
        ("memory", [sys.executable, "benchmarks/lockstep_memory.py", "--device", DEV, "--repeats", "1"], 200),
    ]
    for what, cmd, limit in checks:
        t = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit,
                               env=dict(os.environ, HETBENCH_TEST_DEVICE=DEV))
            print(f"== {what}: rc={p.returncode} {time.time() - t:.0f}s\n{(p.stdout + p.stderr)[-2500:]}", flush=True)
        except subprocess.TimeoutExpired:
            print(f"== {what}: stopped after {limit}s", flush=True)
hb = [sys.executable, "-c", "from hetbench.cli.main import console_main; console_main()"]
subprocess.run(hb + ["partition", "dirichlet", "--dataset", "builtin:mnist5k", "--scheme", "client", "--alpha", "100",
                     "--clients", "20", "--test-split", "client", "--test-fraction", "0.2", "--out", "/tmp/ps", "--overwrite"],
               check=True, stdout=subprocess.DEVNULL)
T = ["train", "--split", "/tmp/ps", "--algo", "fedavg", "--model", "lenet", "--rounds", R, "--clients-per-round", "10",
     "--local-epochs", "1", "--batch-size", "64", "--lr", "0.05", "--eval-every", "5", "--seed", "0", "-q", "--device", DEV]
for ex in ("lockstep", "sequential"):
    t = time.time()
    p = subprocess.run(hb + T + ["--client-exec", ex, "--out", f"{OUT}/{ex}"], capture_output=True, text=True)
    print(f"{ex}: rc={p.returncode} wall={time.time() - t:.1f}s", p.stderr[-300:], flush=True)
from hetbench.reproduce.estimates import dry_run
t = time.time(); print(dry_run("hsu-label-skew", "full", None, DEV)[1][0].line(16), f"({time.time() - t:.0f}s)", flush=True)
prof = cProfile.Profile(); t = time.time()
try:
    sys.argv = ["hetbench"] + T + ["--client-exec", "lockstep", "--out", f"{OUT}/prof"]; prof.runcall(console_main)
except SystemExit:
    pass
print(f"profiled lockstep: {time.time() - t:.1f}s")
s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(30); print(s.getvalue()[-6000:])
s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(40); print(s.getvalue()[-7000:])
