"""Run ``hetbench reproduce --full`` for the claims that fit a GPU lease, in one prepared command.

A GPU machine is lent for minutes, not hours, so this script decides what to run from the machine's own
estimate: it times every model on the GPU (``hetbench reproduce --full --dry-run``, the same calibration),
keeps the claims whose estimate times ``--margin`` fits in what is left of ``--budget`` seconds, runs them
side by side (``--jobs`` processes; the small models are launch-bound, so a GPU serves several at once),
stops any that outrun the budget, and packs what finished into one archive with a summary: each claim's
estimate, wall time and outcome (finished, stopped at the budget, failed, or not started because its
estimate did not fit).

Usage (on the GPU machine, from the repository root)::

    PYTHONPATH=. python3 benchmarks/reproduce_full_gpu.py --budget 500 --out /tmp/full --archive full.tar.gz

hetbench must be importable as installed (``pip install --no-deps -e .``); on a machine where it cannot be
installed, link the folders pyproject maps into the package first
(``for d in cli isp builders manifests; do ln -sfn ../$d hetbench/$d; done``) and put its missing
dependencies on ``PYTHONPATH`` (the GPU image lacks datasets, rawpy, colour-science, PyWavelets, s2sphere,
mlxtend and their pure-Python needs).

The claims' numbers, verdicts and the device are in each finished claim's ``claims.json``; the archive
holds ``<claim>/claims.json``, ``claims.md``, ``plots/`` and the run's log, and ``summary.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def plan(costs: list, budget: float, margin: float) -> tuple[list[str], dict[str, str]]:
    """The claims to start (cheapest first) and, for the others, why not.

    Parameters
    ----------
    costs : list of ClaimCost
        From :func:`hetbench.reproduce.run.dry_run`.
    budget : float
        Seconds left for training.
    margin : float
        The estimate is a floor (training and evaluation arithmetic only): a claim starts only when
        ``estimate * margin <= budget``.

    Examples
    --------
    >>> from hetbench.reproduce.run import ClaimCost
    >>> plan([ClaimCost("a", 100.0, 2, 10), ClaimCost("b", 900.0, 2, 10), ClaimCost("c", 0.0, 0, 0)], 400, 2)
    (['c', 'a'], {'b': 'estimate 900 s x margin 2 > 400 s left'})
    """
    start, skipped = [], {}
    for cost in sorted(costs, key=lambda c: c.seconds):
        if cost.seconds * margin <= budget:
            start.append(cost.id)
        else:
            skipped[cost.id] = f"estimate {cost.seconds:.0f} s x margin {margin:g} > {budget:.0f} s left"
    return start, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=500.0, help="seconds for everything, from start")
    parser.add_argument("--margin", type=float, default=2.0)
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--archive", type=Path, required=True)
    parser.add_argument("--claims", default="all",
                        help="comma-separated claim ids to consider (default all): a later lease finishes what an "
                             "earlier one could not")
    args = parser.parse_args(argv)
    t0 = time.monotonic()

    import torch

    from hetbench.reproduce.run import dry_run

    summary: dict = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)
                     if torch.cuda.is_available() else "cpu", "budget_s": args.budget, "claims": {}}
    print(f"torch {summary['torch']} on {summary['device']}", flush=True)
    device, costs = dry_run(args.claims, "full", None, "cuda" if torch.cuda.is_available() else "cpu")
    summary["calibration_s"] = round(time.monotonic() - t0, 1)
    width = max(len(c.id) for c in costs)
    print(f"full-mode estimates on {device} (calibration {summary['calibration_s']} s):", flush=True)
    for cost in costs:
        print("  " + cost.line(width), flush=True)
    left = args.budget - (time.monotonic() - t0)
    start, skipped = plan(costs, left, args.margin)
    for cost in costs:
        summary["claims"][cost.id] = {"estimate_s": round(cost.seconds, 1), "runs": cost.runs}
    for claim, why in skipped.items():
        summary["claims"][claim]["outcome"] = f"not started: {why}"

    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    running: dict[str, tuple[subprocess.Popen, float, object]] = {}
    queue = list(start)
    while queue or running:
        while queue and len(running) < args.jobs:
            claim = queue.pop(0)
            log = open(args.out / f"{claim}.log", "w")
            cmd = [sys.executable, "-c", "from hetbench.cli.main import console_main; console_main()", "reproduce",
                   "--full", "--claims", claim, "--device", device, "--out", str(args.out / claim)]
            running[claim] = (subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True), time.monotonic(), log)
            print(f"[{time.monotonic() - t0:5.0f} s] started {claim}", flush=True)
        time.sleep(2)
        over = time.monotonic() - t0 > args.budget
        for claim, (proc, began, log) in list(running.items()):
            if proc.poll() is None and not over:
                continue
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                outcome = "stopped at the budget"
            else:
                outcome = "finished" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
            log.close()
            wall = round(time.monotonic() - began, 1)
            summary["claims"][claim].update(outcome=outcome, wall_s=wall)
            print(f"[{time.monotonic() - t0:5.0f} s] {claim}: {outcome} after {wall} s", flush=True)
            del running[claim]
        if over:
            for claim in queue:
                summary["claims"][claim]["outcome"] = "not started: budget spent"
            queue = []

    summary["wall_s"] = round(time.monotonic() - t0, 1)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    with tarfile.open(args.archive, "w:gz") as tar:
        tar.add(args.out / "summary.json", "summary.json")
        for claim in summary["claims"]:
            if (args.out / f"{claim}.log").exists():
                tar.add(args.out / f"{claim}.log", f"{claim}/run.log")
            for name in ("claims.json", "claims.md", "plots"):
                if (args.out / claim / name).exists():
                    tar.add(args.out / claim / name, f"{claim}/{name}")
    print(json.dumps(summary, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
