"""Memory of a lockstep round against the sequential path's (issue 46: at most 1.5x at C = 10 clients).

Each side runs in a fresh process: it loads the split, starts a training session, records its peak resident
memory (``ru_maxrss``) and, on a GPU, resets the peak of allocated device memory; then it trains the rounds
and records both peaks again. The figure per side is the *growth* of the peak during training (what the
round itself needs: activations, stacked parameters, gradients), and the ratio lockstep / sequential of
those growths is printed with the peaks themselves. The two sides alternate, ``--repeats`` times, and the
smallest growth of each side is kept.

    python benchmarks/lockstep_memory.py            # CPU: digits-cnn 16 px and ResNet-10 32 px, C = 10
    python benchmarks/lockstep_memory.py --device cuda
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: (name, dataset, image size, model, batch): FedAvg, 10 clients per round of 100, one local epoch
WORKLOADS = (
    ("digits-cnn 16 px", "builtin:mnist5k", 16, "digits-cnn", 20),
    ("resnet10 32 px", "builtin:mnist5k", 32, "resnet10", 32),
)

CHILD = r"""
import json, resource, sys
import torch
from hetbench.train.algorithms import TrainConfig, make_algorithm
from hetbench.train.data import load_federated
from hetbench.train.session import TrainingSession
split, side, model, batch, mode, device, rounds = sys.argv[1:8]
data = load_federated(split, image_size=int(side), quiet=True)
cfg = TrainConfig(rounds=int(rounds), clients_per_round=10, model=model, batch_size=int(batch), lr=0.05,
                  local_epochs=1, seed=0, workers=1, client_exec=mode, device=device)
session = TrainingSession.start(data, make_algorithm("fedavg"), cfg)
cuda = session.run.main_ws.device.type == "cuda"
if cuda:
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
alg, run = session.algorithm, session.run
for r in range(1, int(rounds) + 1):
    alg.begin_round(run, r)
    for update in session.pool.round_updates(r, alg.select(run, r)):
        if hasattr(update, "split"):
            alg.accumulate_stacked(run, r, update)
        else:
            alg.accumulate(run, r, update)
    alg.end_round(run, r)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = {"rss_before": before, "rss_after": after, "batched": session.pool.stacked}
if cuda:
    torch.cuda.synchronize(); out["gpu_peak"] = torch.cuda.max_memory_allocated()
session.close()
print(json.dumps(out))
"""


def side(split: Path, size: int, model: str, batch: int, mode: str, device: str, rounds: int) -> dict:
    """One fresh process training ``rounds`` rounds in ``mode``: its peaks (bytes)."""
    p = subprocess.run([sys.executable, "-c", CHILD, str(split), str(size), model, str(batch), mode, device, str(rounds)],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from trainer_e2e import build_split

    with tempfile.TemporaryDirectory() as tmp:
        for name, dataset, size, model, batch in WORKLOADS:
            split = build_split(Path(tmp), dict(dataset=dataset, clients=100), 0)
            growth: dict[str, list[float]] = {"lockstep": [], "sequential": []}
            peaks: dict[str, dict] = {}
            for _ in range(args.repeats):
                for mode in ("lockstep", "sequential"):
                    got = side(split, size, model, batch, mode, args.device, args.rounds)
                    key = "gpu_peak" if "gpu_peak" in got else None
                    growth[mode].append(got[key] if key else got["rss_after"] - got["rss_before"])
                    peaks[mode] = got
            lock, seq = min(growth["lockstep"]), min(growth["sequential"])
            what = "GPU max_memory_allocated" if "gpu_peak" in peaks["lockstep"] else "growth of peak RSS in training"
            print(f"{name}, batch {batch}, 10 clients per round, {args.rounds} round(s), {args.device}: {what}: "
                  f"lockstep {lock / 2**20:.0f} MiB, sequential {seq / 2**20:.0f} MiB, ratio {lock / max(seq, 1):.2f}x "
                  f"(target <= 1.5x); peak RSS {peaks['lockstep']['rss_after'] / 2**20:.0f} / "
                  f"{peaks['sequential']['rss_after'] / 2**20:.0f} MiB; stacked: {peaks['lockstep']['batched']}",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
