"""The round loop of every engine: rounds of client selection, local work and aggregation, with the global
model evaluated on every group's test data every ``eval_every`` rounds, checkpoints and the results.

The loop is the same whatever carries the client work: a :class:`ClientBackend` only runs a round's
client updates and hands them back in selection order. :class:`LocalClients` runs them in this process
(:class:`~hetbench.train.client_pool.ClientPool`'s worker threads); Flower's backend
(:class:`hetbench.flower.backend.FlowerClients`) sends them as messages to ClientApps, which run the same
``Algorithm.client_update``. Selection, aggregation, server state, evaluation, history, checkpoints and the
results document are all here, once.

Randomness: the initial model comes from ``torch.manual_seed(seed)``; client selection, shuffling and
augmentation come from generators seeded by (seed, round, client), and torch's global generator (dropout)
is reseeded the same way before every local update, so a run depends only on its seed and options.

The parts: :class:`~hetbench.train.session.TrainingSession` builds the model, the run state and the pool,
:class:`~hetbench.train.document.History` collects the curves, :mod:`hetbench.train.checkpoint` saves and
restores the run between rounds, and :func:`~hetbench.train.document.results_document` writes them up at
the end. A resumed run rebuilds everything a fresh one does (model, algorithm setup, workers) and then
loads the checkpoint over it, so its results equal an uninterrupted run's (the ``timing`` block aside).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.train.algorithms import Algorithm, ClientUpdate, RunState, TrainConfig
from hetbench.train.algorithms.base import StackedUpdates
from hetbench.train.checkpoint import restore_checkpoint, run_identity, save_checkpoint
from hetbench.train.data import FederatedData
from hetbench.train.device import device_info
from hetbench.train.document import History, elapsed, results_document
from hetbench.train.evaluate import metrics_from_correct, per_group
from hetbench.train.local import TrainingDiverged
from hetbench.train.models import count_parameters, profile
from hetbench.train.round_log import round_metrics
from hetbench.train.session import TrainingSession


class ClientBackend(Protocol):
    """What carries a round's client work: the one thing an engine provides.

    ``engine`` names it in the results (``local``, ``flower``); ``updates`` runs the clients' updates for
    a round and yields them in selection order, a :class:`ClientUpdate` per client or a
    :class:`StackedUpdates` per chunk of clients trained as one computation (clients that failed may be left
    out; when all fail it raises); ``timing`` and ``report`` add the engine's own figures to the results' ``timing`` block and
    the document; ``close`` releases what it holds.
    """

    engine: str

    def updates(self, round_index: int, clients: np.ndarray) -> Iterable[ClientUpdate | StackedUpdates]: ...

    def timing(self) -> dict[str, Any]: ...

    def report(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class LocalClients:
    """The local engine: client updates in this process, on the session's pool of worker threads."""

    engine = "local"

    def __init__(self, session: TrainingSession) -> None:
        self.pool = session.pool

    def updates(self, round_index: int, clients: np.ndarray) -> Iterable[ClientUpdate | StackedUpdates]:
        return self.pool.round_updates(round_index, clients)

    def timing(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workers": self.pool.workers, "client_threads": self.pool.client_threads,
                               **self.pool.lockstep_counts()}
        if self.pool.concurrency:  # [first round, live runs, workers in use] whenever they changed
            out["concurrency"] = self.pool.concurrency
        return out

    def report(self) -> dict[str, Any]:
        return {"execution": self.pool.execution()}

    def close(self) -> None:
        """Nothing: the session owns the pool."""


def evaluated(round_index: int, config: TrainConfig) -> bool:
    """Whether round ``round_index`` is evaluated: from ``config.eval_from`` on, every ``config.eval_every``
    rounds, and always the last round.

    Examples
    --------
    >>> from hetbench.train.algorithms import TrainConfig
    >>> from hetbench.train.simulation import evaluated
    >>> [r for r in range(1, 11) if evaluated(r, TrainConfig(rounds=10, eval_every=3))]
    [3, 6, 9, 10]
    >>> [r for r in range(1, 21) if evaluated(r, TrainConfig(rounds=20, eval_from=18))]
    [18, 19, 20]
    """
    if round_index < int(config.eval_from):
        return False
    return round_index % max(int(config.eval_every), 1) == 0 or round_index == int(config.rounds)


def check_finite_model(run: RunState, round_index: int) -> None:
    """Stop the run (exit 3) when the global model has become NaN/inf."""
    if not math.isfinite(float(run.global_params.sum())):
        raise TrainingDiverged(f"training diverged: the global model became NaN/inf after round {round_index}; "
                               "lower `lr`")


def run_training(
    data: FederatedData,
    algorithm: Algorithm,
    config: TrainConfig,
    central_accuracy: float | None = None,
    on_round: Callable[[int, dict], None] | None = None,
    return_state: bool = False,
    checkpoint: Path | None = None,
    resume: bool = False,
    backend: Callable[[TrainingSession], ClientBackend] | None = None,
) -> dict[str, Any] | tuple[dict[str, Any], RunState]:
    """Run ``config.rounds`` rounds of ``algorithm`` on ``data``; the client work goes through ``backend``.

    Parameters
    ----------
    data : FederatedData
        The split, loaded by :func:`hetbench.train.data.load_federated`.
    algorithm : Algorithm
        A fresh algorithm (:func:`hetbench.train.algorithms.make_algorithm`).
    config : TrainConfig
        The run's options (checked here).
    central_accuracy : float, optional
        The centralised run's final accuracy, for ``relative_accuracy``.
    on_round : callable, optional
        ``on_round(round, summary)`` after every round: the evaluation's summary (empty when the round was not
        evaluated) with :func:`hetbench.train.round_log.round_metrics` (``train_loss``, the round's mean
        client training loss; ``group_accuracy`` when evaluated; ``algorithm``, its diagnostics).
    return_state : bool
        Also return the final :class:`RunState`.
    checkpoint : Path, optional
        Where the run's checkpoint goes every ``config.checkpoint_every`` rounds (replaced atomically each
        time; :func:`hetbench.train.checkpoint.checkpoint_path` puts it beside the results file).
    resume : bool
        Continue from ``checkpoint`` (:func:`hetbench.train.checkpoint.check_resumable` says whether one
        can), at the round after the one it saved, instead of round 1.
    backend : callable, optional
        ``backend(session)`` gives the :class:`ClientBackend` that runs the client updates, once the
        session (model, algorithm set up, pool) exists; None: :class:`LocalClients`.

    Returns
    -------
    dict or (dict, RunState)
        The results document (``docs/output-contract.md``).

    Raises
    ------
    TrainingDiverged
        When a loss or the model becomes NaN/inf.
    HetbenchError
        ``resume`` or ``checkpoint_every`` without a checkpoint path; a checkpoint that is missing, unreadable
        or of another configuration.
    """
    t_start = time.perf_counter()
    config = config.for_algorithm(algorithm).check()
    every = config.checkpoint_every
    if (resume or every) and checkpoint is None:
        raise HetbenchError(f"{'`resume`' if resume else '`checkpoint_every`'} needs a checkpoint path")
    identity = run_identity(data, algorithm, config)
    session = TrainingSession.start(data, algorithm, config)
    run, pool = session.run, session.pool
    done, history, spent = 0, History(list(data.group_names)), {"train_s": 0.0, "eval_s": 0.0, "wall_s": 0.0}
    clients_backend: ClientBackend | None = None
    try:
        clients_backend = (backend or LocalClients)(session)
        if resume:  # after everything a fresh run builds (and draws from torch's generator for)
            done, history, spent = restore_checkpoint(checkpoint, identity, run, algorithm)
        t_train, t_eval = spent["train_s"], spent["eval_s"]
        for r in range(done + 1, int(config.rounds) + 1):
            t0 = time.perf_counter()
            run.round = r
            clients = algorithm.select(run, r)
            algorithm.begin_round(run, r)
            loss_sum = weight_sum = 0.0
            for update in clients_backend.updates(r, clients):
                if isinstance(update, StackedUpdates):  # a chunk trained as one computation, folded in at once
                    for n, loss in zip(update.num_samples, update.losses):
                        loss_sum += n * loss
                        weight_sum += n
                    algorithm.accumulate_stacked(run, r, update)
                    continue
                loss_sum += update.num_samples * update.loss
                weight_sum += update.num_samples
                algorithm.accumulate(run, r, update)
            algorithm.end_round(run, r)
            check_finite_model(run, r)
            history.add_train(r, loss_sum / max(weight_sum, 1.0))
            t_train += time.perf_counter() - t0
            summary: dict = {}
            if evaluated(r, config):
                t0 = time.perf_counter()
                correct, loss = algorithm.evaluate(run, pool)
                summary = metrics_from_correct(correct, loss, data).summary()
                history.add_eval(r, summary, per_group(data, correct), correct)
                t_eval += time.perf_counter() - t0
            if every and r % int(every) == 0:
                save_checkpoint(checkpoint, identity, r, run, algorithm, history,
                                {"train_s": t_train, "eval_s": t_eval, "wall_s": spent["wall_s"] + elapsed(t_start)})
            if on_round is not None:  # with the round's mean client loss, group accuracies and diagnostics
                on_round(r, {**summary, **round_metrics(r, history, run.log)})  # (the progress bar, --log)
    finally:
        if clients_backend is not None:
            clients_backend.close()
        session.close()
    model = session.model
    run.main_ws.flat.load(run.global_params, run.global_buffers)
    full = profile(model, data.in_channels, data.image_size)
    doc = results_document(
        data=data,
        algorithm=algorithm,
        config=session.config,
        model_name=session.model_name,
        model_info={"norm": config.norm, "parameters": count_parameters(model), "macs": int(full["macs"])},
        history=history,
        groups=per_group(data, history.last_correct),
        log=run.log,
        clients=algorithm.client_footprints(run) if hasattr(algorithm, "client_footprints") else None,
        central_accuracy=central_accuracy,
        device=device_info(session.device, config.amp),
        timing={"wall_time_s": round(spent["wall_s"] + elapsed(t_start), 3), "train_s": round(t_train, 3),
                "eval_s": round(t_eval, 3), **clients_backend.timing()},
        engine=None if clients_backend.engine == "local" else clients_backend.engine,
    )
    doc.update(clients_backend.report())
    final = doc["final"]
    if any(isinstance(v, float) and not math.isfinite(v) for v in final.values() if v is not None):
        raise TrainingDiverged("training diverged: the final test loss is not finite; lower `lr`")
    return (doc, run) if return_state else doc
