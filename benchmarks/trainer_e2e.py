"""The processes of ``bench_trainer.py``: build a split, run ``hetbench train`` and the Flower app, each
timed from launch to exit.

Both runs get the same settings dict: ``dataset``, ``clients`` (of the split), ``per_round``, ``rounds``,
``model``, ``seed``, ``local_epochs``, ``batch_size``, ``lr``, ``eval_every``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def hetbench_exe() -> list[str]:
    """The ``hetbench`` console script beside this interpreter, else ``python -m hetbench.cli.main``."""
    exe = Path(sys.executable).with_name("hetbench")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "hetbench.cli.main"]


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


def build_split(tmp: Path, setting: dict, seed: int) -> Path:
    """``hetbench partition dirichlet --alpha 0.5`` of ``setting['dataset']`` over ``setting['clients']``
    clients, in ``tmp`` (untimed)."""
    name = f"{setting['dataset'].replace(':', '-')}-n{setting['clients']}-s{seed}"
    split = tmp / name
    if not split.exists():
        cmd = hetbench_exe() + [
            "partition", "dirichlet", "--dataset", setting["dataset"], "--clients", str(setting["clients"]),
            "--alpha", "0.5", "--seed", str(seed), "--out", str(split),
        ]
        run_timed(cmd, tmp / f"partition-{name}.log")
    return split


def _sgd_args(run: dict) -> list[str]:
    return ["--rounds", str(run["rounds"]), "--local-epochs", str(run["local_epochs"]),
            "--batch-size", str(run["batch_size"]), "--lr", str(run["lr"]), "--seed", str(run["seed"]),
            "--eval-every", str(run["eval_every"])]


def run_hetbench_cli(split: Path, tmp: Path, run: dict, extra: tuple[str, ...] = (), tag: str = "") -> dict:
    """``hetbench train --algo fedavg`` with its default threads and workers (and the ``extra`` flags, such as
    ``--engine flower``): wall time, final accuracy, the run's own timing."""
    out = tmp / f"results-{split.name}{'-' + tag if tag else ''}"
    cmd = hetbench_exe() + [
        "train", "--split", str(split), "--algo", "fedavg", "--model", run["model"],
        "--clients-per-round", str(run["per_round"]), *_sgd_args(run), *extra, "--out", str(out), "--quiet",
    ]
    wall = run_timed(cmd, tmp / f"hetbench-train{'-' + tag if tag else ''}.log")
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


def run_flower(split: Path, tmp: Path, run: dict) -> dict:
    """``flower_fedavg.py`` (Flower's simulation on Ray, one single-threaded actor per CPU): wall time,
    final accuracy and the app's own timeline."""
    out = tmp / "flower.json"
    cmd = [
        sys.executable, str(HERE / "flower_fedavg.py"), "--split", str(split), "--model", run["model"],
        "--per-round", str(run["per_round"]), *_sgd_args(run), "--cpus-per-client", "1", "--json", str(out),
        "--quiet",
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


def selection_check(flower_doc: dict, num_clients: int, run: dict) -> str:
    """Whether Flower trained, round by round, exactly the clients ``select_uniform`` picks (hetbench's rule)."""
    from hetbench.train.sampling import select_uniform

    rounds = int(run["rounds"])
    sel = flower_doc.get("selected", {})
    ok = len(sel) == rounds and all(
        sel.get(str(r)) == select_uniform(run["seed"], r, num_clients, run["per_round"]).tolist()
        for r in range(1, rounds + 1)
    )
    return f"Flower trained select_uniform's clients in all {rounds} rounds: {'yes' if ok else 'NO'}"
