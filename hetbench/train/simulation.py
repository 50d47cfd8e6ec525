"""The simulated FL run: rounds of client selection, local training and aggregation in one process, with
the global model evaluated on every group's test data every ``eval_every`` rounds.

Randomness: the initial model comes from ``torch.manual_seed(seed)``; client selection, shuffling and
augmentation come from generators seeded by (seed, round, client), and torch's global generator (dropout)
is reseeded the same way before every local update, so a run depends only on its seed and options.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
import torch

from hetbench import __version__
from hetbench.train.algorithms import Algorithm, RunState, TrainConfig
from hetbench.train.data import FederatedData
from hetbench.train.evaluate import metrics_from_correct, per_group, predict
from hetbench.train.local import TrainingDiverged, Workspace
from hetbench.train.models import build_model, count_parameters, default_model, profile

RESULT_KIND = "hetbench-train-result"
SCHEMA_VERSION = 1


def resolve_model(config: TrainConfig, data: FederatedData) -> str:
    return default_model(data.image_size) if config.model in (None, "", "auto") else config.model


def _json_value(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_json_value(x) for x in v]
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


def rounds_to_target(rounds: list[int], accuracy: list[float], target: float | None) -> int | None:
    """First evaluated round whose accuracy reaches ``target`` (percent), else None."""
    if target is None:
        return None
    for r, a in zip(rounds, accuracy):
        if a >= target:
            return int(r)
    return None


def run_training(
    data: FederatedData,
    algorithm: Algorithm,
    config: TrainConfig,
    central_accuracy: float | None = None,
    on_round: Callable[[int, dict], None] | None = None,
    return_state: bool = False,
) -> dict[str, Any] | tuple[dict[str, Any], RunState]:
    """Simulate ``config.rounds`` rounds of ``algorithm`` on ``data``; return the results document
    (DESIGN.md sec. 5), and the final :class:`RunState` with ``return_state``. Raises
    :class:`TrainingDiverged` when a loss or the model becomes NaN/inf."""
    t_start = time.perf_counter()
    model_name = resolve_model(config, data)
    torch.manual_seed(int(config.seed))
    model = build_model(model_name, data.in_channels, data.num_classes, data.image_size, config.norm)
    ws = Workspace(data, model)
    run = RunState(ws=ws, config=config, global_params=ws.flat.params.clone(), global_buffers=ws.flat.buffers.clone())
    algorithm.setup(run)
    train_rounds: list[int] = []
    train_loss: list[float] = []
    curves: dict[str, list] = {k: [] for k in (
        "round", "accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss")}
    group_curves: dict[str, list] = {g: [] for g in data.group_names}
    t_train = t_eval = 0.0
    last = None
    for r in range(1, int(config.rounds) + 1):
        t0 = time.perf_counter()
        run.round = ws.round = r
        clients = algorithm.select(run, r)
        algorithm.begin_round(run, r)
        loss_sum = weight_sum = 0.0
        for k in clients:
            ws.client = int(k)
            torch.manual_seed(int(run.rng(r, int(k), 4).integers(2**62)))
            update = algorithm.client_update(run, r, int(k))
            if not bool(torch.isfinite(update.params).all()):
                ws.check_finite(float("nan"), "model")
            loss_sum += update.num_samples * update.loss
            weight_sum += update.num_samples
            algorithm.accumulate(run, r, update)
        ws.client = -1
        algorithm.end_round(run, r)
        if not bool(torch.isfinite(run.global_params).all()):
            raise TrainingDiverged(f"training diverged: the global model became NaN/inf after round {r}; lower --lr")
        train_rounds.append(r)
        train_loss.append(round(loss_sum / max(weight_sum, 1.0), 6))
        t_train += time.perf_counter() - t0
        if r % max(int(config.eval_every), 1) == 0 or r == config.rounds:
            t0 = time.perf_counter()
            ws.flat.load(run.global_params, run.global_buffers)
            correct, loss = predict(model, data, ws.mean, ws.std)
            ev = metrics_from_correct(correct, loss, data)
            s = ev.summary()
            curves["round"].append(r)
            for key in ("accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss"):
                curves[key].append(s[key])
            for name, g in per_group(ev, data, correct).items():
                group_curves[name].append(g["accuracy"])
            last = (ev, correct, s)
            t_eval += time.perf_counter() - t0
            if on_round is not None:
                on_round(r, s)
        elif on_round is not None:
            on_round(r, {})
    ev, correct, summary = last
    target = config.target_accuracy
    if target is None and central_accuracy is not None and algorithm.name != "central":
        target = round(0.9 * central_accuracy, 4)
    final = dict(summary)
    final["relative_accuracy"] = (
        1.0 if algorithm.name == "central"
        else round(summary["accuracy"] / central_accuracy, 6) if central_accuracy else None
    )
    final["target_accuracy"] = target
    final["rounds_to_target"] = rounds_to_target(curves["round"], curves["accuracy"], target)
    ws.flat.load(run.global_params, run.global_buffers)
    full = profile(model, data.in_channels, data.image_size)
    clients_fp = algorithm.client_footprints(run) if hasattr(algorithm, "client_footprints") else None
    extra = {k: v for k, v in run.log.items()}
    if hasattr(algorithm, "achieved"):
        extra["achieved_pruning_ratio"] = {str(k): round(v, 6) for k, v in sorted(algorithm.achieved.items())}
    doc = {
        "kind": RESULT_KIND,
        "schema_version": SCHEMA_VERSION,
        "hetbench_version": __version__,
        "split": {
            "name": data.name,
            "path": data.path,
            "fingerprint": data.fingerprint,
            "num_clients": data.num_clients,
            "num_train": int(data.y_train.numel()),
            "num_test": int(data.y_test.numel()),
            "num_classes": data.num_classes,
            "image_size": data.image_size,
            "group_by": data.group_by,
            "groups": list(data.group_names),
        },
        "algorithm": {
            "name": algorithm.name,
            "params": {k: _json_value(v) for k, v in sorted(algorithm.params.items())},
            "citation": algorithm.citation,
        },
        "config": {**{k: _json_value(v) for k, v in config.as_dict().items()}, "model": model_name},
        "model": {"name": model_name, "norm": config.norm, "parameters": count_parameters(model),
                  "macs": int(full["macs"])},
        "curves": {**curves, "group_accuracy": group_curves, "train_round": train_rounds, "train_loss": train_loss,
                   **({"algorithm": extra} if extra else {})},
        "final": final,
        "groups": per_group(ev, data, correct),
        "clients": clients_fp or {"parameters": None, "macs": None},
        "timing": {
            "wall_time_s": round(time.perf_counter() - t_start, 3),
            "train_s": round(t_train, 3),
            "eval_s": round(t_eval, 3),
        },
    }
    if any(isinstance(v, float) and not math.isfinite(v) for v in final.values() if v is not None):
        raise TrainingDiverged("training diverged: the final test loss is not finite; lower --lr")
    return (doc, run) if return_state else doc
