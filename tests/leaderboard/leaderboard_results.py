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
    """A schema-1 train result as ``hetbench train`` wrote it, with the given values.

    Its default curves are flat at the ``final`` values over 4 evaluations (a run that had settled by the
    leaderboard's default rule), so every statistic (mean of the last k, best, final) gives the ``final``
    values; tests of the statistics pass curves.
    """
    cfg = {"rounds": 4, "clients_per_round": 10, "local_epochs": 1, "batch_size": 32, "lr": 0.05, "momentum": 0.0,
           "weight_decay": 0.0, "model": "lenet", "seed": seed, "eval_every": 1, "image_size": 32, "target_accuracy": None}
    cfg.update(config or {})
    fin = {"accuracy": 90.0, "client_accuracy": 89.0, "worst_group_accuracy": 85.0, "group_accuracy_variance": 4.0,
           "client_accuracy_p10": 80.0, "client_accuracy_p90": 97.0, "relative_accuracy": None, "rounds_to_target": None,
           "loss": 0.3}
    fin.update(final or {})
    if curves is None:
        curves = {"round": [1, 2, 3, 4], **{m: [fin[m]] * 4 for m in
                                         ("accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss")}}
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


def tables_of(folder: Path, rank_by: str = lb.DEFAULT_RANK_BY, statistic: str = lb.DEFAULT_STATISTIC) -> list[lb.SplitTable]:
    tables, _ = lb.build(folder, rank_by, statistic)
    return tables


def row(table: lb.SplitTable, label: str) -> lb.Row:
    return next(r for r in table.rows if r.label == label)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def result_v2(curves: dict, groups: dict | None = None, train_groups: list | None = None, last_k: int = 3,
              **kwargs: Any) -> dict:
    """A schema-2 result whose ``final`` (last evaluation, ``best``, ``last_k``) and ``groups`` come from
    ``curves`` (``round``, metric lists, ``group_accuracy``) through the producer's own functions."""
    from hetbench.train.result_stats import curve_statistics, group_protocol

    data = result(curves=curves, **kwargs)
    data["schema_version"] = 2
    data["config"].update({"last_k": last_k, "train_groups": train_groups, "test_groups": None})
    last = {m: v[-1] for m, v in curves.items() if m not in ("round", "group_accuracy")}
    data["final"].update(last)
    group_acc = curves.get("group_accuracy", {})
    counts = groups or {g: 100 for g in group_acc}
    data["split"]["groups"] = sorted(counts)
    data["groups"] = {g: {"accuracy": group_acc[g][-1], "num_test": n} for g, n in counts.items()}
    if train_groups is not None:
        data["groups"], protocol = group_protocol(data["groups"], train_groups)
        data["final"].update(protocol)
    data["final"].update(curve_statistics(curves, data["groups"], train_groups, last_k))
    return data
