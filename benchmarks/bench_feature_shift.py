"""What the report's feature shift costs: ``hetbench partition dirichlet`` end to end, with and without it.

What is measured
----------------
One parquet file of ``--rows`` 32 x 32 RGB PNG images in 10 classes is written once, outside every timing
(a class template plus Gaussian pixel noise, so the images do not compress away). Then, interleaved
``--repeats`` times, two subprocess runs of the same command on it::

    hetbench partition dirichlet --dataset images.parquet --clients 100 --alpha 0.5 -q --feature-embedder none
    hetbench partition dirichlet --dataset images.parquet --clients 100 --alpha 0.5 -q            # auto: pixels:8

The first writes the split and its label report; the second also decodes every training image, embeds
it and measures each client's feature shift and its IID reference (``hetbench/report/feature_entry.py``),
on a thread beside the shard writing. The ratio of the medians is the cost (target: at most 1.25).

Scaling: ``measure_feature_shift`` alone (embedding included) on the first 25%, 50% and 100% of the rows,
100 clients each. It measures at most 32 rows of each class of each client (a seeded sample), so its cost
is linear in the rows it measures and bounded by clients x classes x 32 however large the split; the time
per measured row at 100% over that at 25% should stay near 1.

Run: ``python benchmarks/bench_feature_shift.py`` (100,000 rows, about 3 minutes on 2 cores) or
``--rows 20000 --repeats 2`` as a smoke test. Writes ``benchmarks/results_feature_shift.txt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from report import Report  # noqa: E402


def write_images(path: Path, rows: int, seed: int = 0) -> None:
    """``rows`` 32 x 32 RGB PNGs (a class template plus noise) with labels, as one parquet file."""
    import cv2
    import datasets
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, rows)
    templates = rng.integers(0, 256, (10, 32, 32, 3)).astype(np.float32)
    images = []
    for k in range(rows):
        img = np.clip(templates[labels[k]] * 0.5 + rng.normal(0.0, 40.0, (32, 32, 3)) + 64.0, 0, 255).astype(np.uint8)
        images.append({"bytes": cv2.imencode(".png", img)[1].tobytes(), "path": None})
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=[f"c{k}" for k in range(10)])})
    datasets.Dataset.from_dict({"image": images, "label": labels.tolist()}, features=features).to_parquet(str(path))


def run_partition(data: Path, out: Path, embedder: str) -> float:
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hetbench.cli.main", "partition", "dirichlet", "--dataset", str(data),
                    "--clients", "100", "--alpha", "0.5", "--out", str(out), "--overwrite", "-q",
                    "--feature-embedder", embedder], check=True, env=env)
    return time.perf_counter() - start


def scaling(data: Path, say: Report) -> None:
    import dataclasses

    from hetbench.partitioners import DirichletPartitioner
    from hetbench.report.feature_entry import measure_feature_shift
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    table = load_table(str(data))
    full, labels = table.splits["train"], table.labels["train"]
    per_row = []
    for share in (0.25, 0.5, 1.0):
        k = int(len(full) * share)
        part = dataclasses.replace(table, splits={"train": full.select(range(k))}, labels={"train": labels[:k]}, _cache={})
        split = build_split(part, DirichletPartitioner(100, 0.5))
        start = time.perf_counter()
        shift = measure_feature_shift(split)
        seconds = time.perf_counter() - start
        per_row.append(seconds / shift.entry["rows"] * 1e6)
        say(f"  {shift.entry['training_rows']:>7,} training rows, {shift.entry['rows']:>6,} measured (at most "
            f"{shift.entry['per_pair']} per client and class): {seconds:6.2f} s, {per_row[-1]:.1f} us per measured row")
    say(f"  time per measured row at 100% / at 25%: {per_row[-1] / per_row[0]:.2f} (1 = linear in the rows measured)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results_feature_shift.txt")
    args = parser.parse_args()
    say = Report()
    say(f"bench_feature_shift: {args.rows:,} 32x32 PNG images, 10 classes; {os.cpu_count()} CPUs, "
        f"{platform.processor() or platform.machine()}, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "images.parquet"
        write_images(data, args.rows)
        times = {"none": [], "auto": []}
        for _ in range(args.repeats):
            for embedder in times:
                times[embedder].append(run_partition(data, Path(tmp) / f"out-{embedder}", embedder))
        base, with_shift = statistics.median(times["none"]), statistics.median(times["auto"])
        say("(a) hetbench partition dirichlet --clients 100 --alpha 0.5, end to end (median of "
            f"{args.repeats}; all runs: none {[round(t, 2) for t in times['none']]}, auto {[round(t, 2) for t in times['auto']]})")
        say(f"  --feature-embedder none: {base:6.2f} s")
        say(f"  default (pixels:8 feature shift): {with_shift:6.2f} s")
        say(f"  ratio: {with_shift / base:.2f}x (target at most 1.25x)")
        say("(b) measure_feature_shift alone, embedding included, 100 clients")
        scaling(data, say)
    say.save(args.out)


if __name__ == "__main__":
    main()
