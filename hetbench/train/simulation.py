"""The simulated FL run: rounds of client selection, local training and aggregation in one process, with
the global model evaluated on every group's test data every ``eval_every`` rounds.

Randomness: the initial model comes from ``torch.manual_seed(seed)``; client selection, shuffling and
augmentation come from generators seeded by (seed, round, client), and torch's global generator (dropout)
is reseeded the same way before every local update, so a run depends only on its seed and options.
"""

from __future__ import annotations

import math
import os
import queue
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np
import torch

from hetbench import __version__
from hetbench.train.algorithms import Algorithm, RunState, TrainConfig
from hetbench.train.data import FederatedData
from hetbench.train.evaluate import metrics_from_correct, per_group, predict_range
from hetbench.train.local import TrainingDiverged, Workspace
from hetbench.train.models import build_model, count_parameters, default_model, profile
from hetbench.train.results import RESULT_KIND, SCHEMA_VERSION

EVAL_BATCH = 256  # test rows per forward pass


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


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _stochastic(model: torch.nn.Module) -> bool:
    """Whether the model draws from torch's global generator in training (dropout)."""
    return any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules())


class ClientPool:
    """Runs a round's client updates, in parallel threads when that keeps results identical.

    Each worker thread trains on its own copy of the model (same flat layout) with one intra-op torch
    thread, so a client's update is the same whichever worker runs it and however many workers there
    are; updates come back in client order, so aggregation is order-stable too. At most ``workers``
    updates exist at a time, whatever the number of clients per round. A run with one client per round
    (centralised) or with dropout (torch's global generator) trains in the main thread instead.
    Evaluation splits the test rows over the workers the same way.
    """

    def __init__(self, run: RunState, model_name: str, algorithm: Algorithm, config: TrainConfig) -> None:
        self.run = run
        self.algorithm = algorithm
        data = run.data
        per_round = 1 if algorithm.name == "central" else min(config.clients_per_round, data.num_clients)
        wanted = config.workers or default_workers()
        self.total_threads = torch.get_num_threads()
        self.stochastic = _stochastic(run.main_ws.model)
        serial = per_round <= 1 or self.stochastic
        self.workers = 1 if serial else max(1, min(int(wanted), per_round))
        # one intra-op thread per client update keeps updates identical for any number of workers; the
        # centralised run and models with dropout train serially on every thread instead
        self.client_threads = self.total_threads if (per_round <= 1 or self.stochastic) else 1
        self.spaces = [run.main_ws]
        for _ in range(self.workers - 1):
            m = build_model(model_name, data.in_channels, data.num_classes, data.image_size, config.norm)
            self.spaces.append(Workspace(data, m))
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        for w in self.spaces:
            self.free.put(w)
        self.executor = ThreadPoolExecutor(self.workers) if self.workers > 1 else None

    def _one(self, round_index: int, client: int):
        ws = self.free.get()
        try:
            self.run.bind(ws)
            ws.round, ws.client = round_index, client
            if self.stochastic:  # dropout draws from torch's global generator: reseed it per client update
                torch.default_generator.manual_seed(int(self.run.rng(round_index, client, 4).integers(2**62)))
            update = self.algorithm.client_update(self.run, round_index, client)
            if not math.isfinite(float(update.params.sum())):  # a NaN or inf anywhere makes the sum non-finite
                ws.check_finite(float("nan"), "model")
            return update
        finally:
            ws.client = -1
            self.run.bind(None)
            self.free.put(ws)

    def updates(self, round_index: int, clients: np.ndarray):
        """Yield the clients' updates in client order."""
        torch.set_num_threads(self.client_threads)
        try:
            if self.executor is None:
                for k in clients:
                    yield self._one(round_index, int(k))
                return
            pending: deque = deque()
            todo = iter(int(k) for k in clients)
            for k in todo:
                pending.append(self.executor.submit(self._one, round_index, k))
                if len(pending) >= self.workers:
                    break
            while pending:
                update = pending.popleft().result()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(self.executor.submit(self._one, round_index, nxt))
                yield update
        finally:
            torch.set_num_threads(self.total_threads)

    def predict(self) -> tuple[np.ndarray, float]:
        """Global model on every test row: (correct per row, mean cross-entropy).

        The test rows go in fixed batches of ``EVAL_BATCH`` dealt out to the workers, each on the thread
        count client updates use, so the numbers do not depend on the number of workers either."""
        run = self.run
        n = run.data.y_test.numel()
        for ws in self.spaces:
            ws.flat.load(run.global_params, run.global_buffers)
        starts = list(range(0, n, EVAL_BATCH))
        share = -(-len(starts) // self.workers) if starts else 0
        chunks = [(starts[i * share], min(n, starts[i * share] + share * EVAL_BATCH))
                  for i in range(self.workers) if i * share < len(starts)]
        torch.set_num_threads(self.client_threads)
        try:
            if self.executor is None:
                got = [predict_range(self.spaces[0].model, run.data, self.spaces[0].mean, self.spaces[0].std, a, b,
                                     EVAL_BATCH) for a, b in chunks]
            else:
                parts = [self.executor.submit(predict_range, ws.model, run.data, ws.mean, ws.std, a, b, EVAL_BATCH)
                         for ws, (a, b) in zip(self.spaces, chunks)]
                got = [p.result() for p in parts]
        finally:
            torch.set_num_threads(self.total_threads)
        if not got:
            return np.zeros(0, dtype=bool), 0.0
        return np.concatenate([g[0] for g in got]), sum(g[1] for g in got) / max(n, 1)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True)


def run_training(
    data: FederatedData,
    algorithm: Algorithm,
    config: TrainConfig,
    central_accuracy: float | None = None,
    on_round: Callable[[int, dict], None] | None = None,
    return_state: bool = False,
) -> dict[str, Any] | tuple[dict[str, Any], RunState]:
    """Simulate ``config.rounds`` rounds of ``algorithm`` on ``data``; return the results document
    (``docs/output-contract.md``), and the final :class:`RunState` with ``return_state``. Raises
    :class:`TrainingDiverged` when a loss or the model becomes NaN/inf."""
    t_start = time.perf_counter()
    config.check()
    model_name = resolve_model(config, data)
    torch.manual_seed(int(config.seed))
    model = build_model(model_name, data.in_channels, data.num_classes, data.image_size, config.norm)
    ws = Workspace(data, model)
    run = RunState(ws=ws, config=config, global_params=ws.flat.params.clone(), global_buffers=ws.flat.buffers.clone())
    algorithm.setup(run)
    pool = ClientPool(run, model_name, algorithm, config)
    train_rounds: list[int] = []
    train_loss: list[float] = []
    curves: dict[str, list] = {k: [] for k in (
        "round", "accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss")}
    group_curves: dict[str, list] = {g: [] for g in data.group_names}
    t_train = t_eval = 0.0
    last = None
    try:
        for r in range(1, int(config.rounds) + 1):
            t0 = time.perf_counter()
            run.round = r
            clients = algorithm.select(run, r)
            algorithm.begin_round(run, r)
            loss_sum = weight_sum = 0.0
            for update in pool.updates(r, clients):
                loss_sum += update.num_samples * update.loss
                weight_sum += update.num_samples
                algorithm.accumulate(run, r, update)
            algorithm.end_round(run, r)
            if not math.isfinite(float(run.global_params.sum())):
                raise TrainingDiverged(
                    f"training diverged: the global model became NaN/inf after round {r}; lower --lr")
            train_rounds.append(r)
            train_loss.append(round(loss_sum / max(weight_sum, 1.0), 6))
            t_train += time.perf_counter() - t0
            if r % max(int(config.eval_every), 1) == 0 or r == config.rounds:
                t0 = time.perf_counter()
                correct, loss = pool.predict()
                ev = metrics_from_correct(correct, loss, data)
                s = ev.summary()
                curves["round"].append(r)
                for key in ("accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss"):
                    curves[key].append(s[key])
                for name, g in per_group(data, correct).items():
                    group_curves[name].append(g["accuracy"])
                last = (ev, correct, s)
                t_eval += time.perf_counter() - t0
                if on_round is not None:
                    on_round(r, s)
            elif on_round is not None:
                on_round(r, {})
    finally:
        pool.close()
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
        "config": {**{k: _json_value(v) for k, v in config.as_dict().items() if k != "workers"}, "model": model_name},
        "model": {"name": model_name, "norm": config.norm, "parameters": count_parameters(model),
                  "macs": int(full["macs"])},
        "curves": {**curves, "group_accuracy": group_curves, "train_round": train_rounds, "train_loss": train_loss,
                   **({"algorithm": extra} if extra else {})},
        "final": final,
        "groups": per_group(data, correct),
        "clients": clients_fp or {"parameters": None, "macs": None},
        "timing": {
            "wall_time_s": round(time.perf_counter() - t_start, 3),
            "train_s": round(t_train, 3),
            "eval_s": round(t_eval, 3),
            "workers": pool.workers,
            "client_threads": pool.client_threads,
        },
    }
    if any(isinstance(v, float) and not math.isfinite(v) for v in final.values() if v is not None):
        raise TrainingDiverged("training diverged: the final test loss is not finite; lower --lr")
    return (doc, run) if return_state else doc
