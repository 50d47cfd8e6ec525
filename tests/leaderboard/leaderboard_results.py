"""Helpers of the leaderboard's tests: small synthetic result files, written the way ``hetbench train``
writes them (the leaderboard's input format, ``docs/output-contract.md``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from hetbench import leaderboard as lb

FP_A = "3fa2" + "0" * 60
FP_B = "9c1d" + "1" * 60


def result(split: str = "iso-isp-wb-tone", fingerprint: str = FP_A, algorithm: str = "fedavg", params: dict | None = None,
           seed: Any = 0, final: dict | None = None, config: dict | None = None, curves: dict | None = None,
           wall_time_s: float | None = 10.0, parameters: int | None = 1000, client_parameters: list | None = None,
           macs: int | None = 5000) -> dict:
    """A train result as ``hetbench train`` writes it, with the given values."""
    cfg = {"rounds": 3, "clients_per_round": 10, "local_epochs": 1, "batch_size": 32, "lr": 0.05, "momentum": 0.0,
           "weight_decay": 0.0, "model": "lenet", "seed": seed, "eval_every": 1, "image_size": 32, "target_accuracy": None}
    cfg.update(config or {})
    fin = {"accuracy": 90.0, "client_accuracy": 89.0, "worst_group_accuracy": 85.0, "group_accuracy_variance": 4.0,
           "client_accuracy_p10": 80.0, "client_accuracy_p90": 97.0, "relative_accuracy": None, "rounds_to_target": None,
           "loss": 0.3}
    fin.update(final or {})
    if curves is None:
        acc = fin["accuracy"] if fin["accuracy"] is not None else 50.0
        curves = {"round": [1, 2, 3], "accuracy": [acc - 20, acc - 10, acc],
                  "worst_group_accuracy": [acc - 30, acc - 15, acc - 5]}
    return {
        "kind": "hetbench-train-result", "schema_version": 1, "hetbench_version": "0.1.0",
        "split": {"name": split, "path": f"demo_out/{split}", "fingerprint": fingerprint, "num_clients": 12,
                  "num_train": 1200, "num_test": 400, "group_by": "device", "groups": ["pixel", "galaxy"]},
        "algorithm": {"name": algorithm, "params": params or {}},
        "config": cfg,
        "model": {"name": "lenet", "parameters": parameters, "macs": macs},
        "curves": curves,
        "final": fin,
        "groups": {"pixel": {"accuracy": 85.0, "num_test": 200}, "galaxy": {"accuracy": 97.4, "num_test": 200}},
        "clients": {"parameters": client_parameters, "macs": None},
        "timing": {"wall_time_s": wall_time_s},
    }


def write(folder: Path, name: str, data: Any) -> Path:
    """``data`` (text, or JSON for anything else) into ``folder / name``."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def tables_of(folder: Path, rank_by: str = lb.DEFAULT_RANK_BY) -> list[lb.SplitTable]:
    tables, _ = lb.build(folder, rank_by)
    return tables


def row(table: lb.SplitTable, label: str) -> lb.Row:
    return next(r for r in table.rows if r.label == label)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
