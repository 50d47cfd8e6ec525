"""Run ``hetbench reproduce --full`` on a GPU lease, continuing the committed run store window by window.

A GPU machine is lent for minutes, not hours. Every claim's runs go to one run store (``--store``, by
default the committed ``docs/claims/full-store``): a run finished in one window is never trained again,
so each window continues where the last stopped. The script times every model on the GPU (``hetbench
reproduce --full --dry-run``, the same calibration), starts the claims cheapest first, side by side
(``--jobs`` processes; the small models are launch-bound, so a GPU serves several at once), each with
``--budget`` set to what is left of the lease less ``--grace`` seconds, so that none starts a run it cannot
finish (a run in flight at the end is the only work lost; a process still running ``--grace`` seconds
after the budget is killed), and packs the store, each claim's reports and log, and a summary (each
claim's estimate, wall time and runs done of needed) into one archive.

Usage (on the GPU machine, from the repository root)::

    PYTHONPATH=. python3 benchmarks/reproduce_full_gpu.py --budget 540 --out /tmp/full --archive full.tar.gz

Unpack the archive's ``store/`` over ``docs/claims/full-store`` and commit it, with the reports under
``docs/claims/full-<device>-<date>/``; the next window runs the same command.

hetbench must be importable as installed (``pip install --no-deps -e .``); on a machine where it cannot be
installed, link the folders pyproject maps into the package first
(``for d in cli isp builders manifests; do ln -sfn ../$d hetbench/$d; done``) and put its missing
dependencies on ``PYTHONPATH`` (the GPU image lacks datasets, rawpy, colour-science, PyWavelets, s2sphere,
mlxtend and their pure-Python needs).
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


def plan(costs: list) -> list[str]:
    """The claims in the order they start: cheapest first (those that train nothing take seconds).

    Examples
    --------
    >>> from hetbench.reproduce.estimates import ClaimCost
    >>> plan([ClaimCost("a", 100.0, 2, 10), ClaimCost("b", 900.0, 2, 10), ClaimCost("c", 0.0, 0, 0)])
    ['c', 'a', 'b']
    """
    return [c.id for c in sorted(costs, key=lambda c: c.seconds)]


def runs_of(out: Path) -> dict | None:
    """A finished claim's ``runs`` record (done / needed) from its claims.json, if any."""
    try:
        doc = json.loads((out / "claims.json").read_text())
    except (OSError, ValueError):
        return None
    claims = doc.get("claims") or [{}]
    return claims[0].get("runs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=540.0, help="seconds for everything, from start")
    parser.add_argument("--grace", type=float, default=30.0,
                        help="seconds kept for the reports and the archive; no run starts after budget - grace")
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--store", type=Path, default=ROOT / "docs" / "claims" / "full-store",
                        help="the run store every window continues (default: the committed one)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--archive", type=Path, required=True)
    parser.add_argument("--claims", default="all",
                        help="comma-separated claim ids to consider (default all): a later lease finishes what an "
                             "earlier one could not")
    args = parser.parse_args(argv)
    t0 = time.monotonic()

    import torch

    from hetbench.reproduce.estimates import dry_run

    summary: dict = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)
                     if torch.cuda.is_available() else "cpu", "budget_s": args.budget, "claims": {}}
    print(f"torch {summary['torch']} on {summary['device']}", flush=True)
    device, costs = dry_run(args.claims, "full", None, "cuda" if torch.cuda.is_available() else "cpu")
    summary["calibration_s"] = round(time.monotonic() - t0, 1)
    width = max(len(c.id) for c in costs)
    print(f"full-mode estimates on {device} (calibration {summary['calibration_s']} s):", flush=True)
    for cost in costs:
        print("  " + cost.line(width), flush=True)
    start = plan(costs)
    for cost in costs:
        summary["claims"][cost.id] = {"estimate_s": round(cost.seconds, 1), "runs_needed": cost.runs}

    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    running: dict[str, tuple[subprocess.Popen, float, object]] = {}
    queue = list(start)
    while queue or running:
        while queue and len(running) < args.jobs:
            claim = queue.pop(0)
            log = open(args.out / f"{claim}.log", "w")
            left = args.budget - args.grace - (time.monotonic() - t0)
            if left <= 1:
                summary["claims"][claim]["outcome"] = "not started: budget spent"
                continue
            cmd = [sys.executable, "-c", "from hetbench.cli.main import console_main; console_main()", "reproduce",
                   "--full", "--claims", claim, "--device", device, "--out", str(args.out / claim),
                   "--store", str(args.store), "--budget", f"{left:.0f}", "--overwrite"]
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
            summary["claims"][claim].update(outcome=outcome, wall_s=wall, runs=runs_of(args.out / claim))
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
        if args.store.is_dir():
            tar.add(args.store, "store")
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
