"""The Flower strategy of a hetbench run: client selection, aggregation and server state are the algorithm's.

:class:`HetbenchStrategy` is a ``flwr.serverapp.strategy.Strategy``: Flower's ``Strategy.start`` runs the
rounds (configure_train, send and receive, aggregate_train, central evaluation) and every step calls into
hetbench's :class:`~hetbench.train.algorithms.Algorithm` exactly as ``run_training`` does:

* ``configure_train``: ``algorithm.select`` then ``algorithm.begin_round``; one train message per selected
  client (the global model, the job, the server state the client reads) to the node serving it;
* ``aggregate_train``: the replies in selection order (the order ``--engine local`` folds them in) through
  ``algorithm.accumulate``, then ``algorithm.end_round``. A client whose ClientApp failed is left out (the
  algorithms aggregate over the reporting clients); a round where every client failed stops the run
  (:class:`ClientsFailed`, exit 3, naming the round).

Federated evaluation is off: the ServerApp evaluates the global model centrally, as hetbench does.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from hetbench.errors import HetbenchError
from hetbench.flower.records import SERVER_TO_CLIENT, pack, unpack


def error_line(reason: str) -> str:
    """The message of a ClientApp's exception from a Flower error reason (which wraps it in class names).

    Examples
    --------
    >>> error_line("<class 'ClientAppException'>:<'\\nException ClientAppException occurred. Message: loss nan'>")
    'loss nan'
    >>> error_line("Traceback ...\\nValueError: bad\\n")
    'ValueError: bad'
    """
    text = str(reason).replace("\\n", "\n").strip()
    if "Message: " in text:
        text = text.rsplit("Message: ", 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if lines else "unknown error"
    return line[:-2].rstrip() if line.endswith("'>") else line


class ClientsFailed(HetbenchError):
    """Every client of a Flower round failed: the run stops (exit code 3)."""

    exit_code = 3


class HetbenchStrategy(Strategy):
    """A Flower strategy that delegates selection, aggregation and server state to a hetbench algorithm.

    Parameters
    ----------
    run : RunState
        The server's run state (global model, config, data view).
    algorithm : Algorithm
        The set-up algorithm (its server state lives here).
    job : ConfigRecord
        The job every train message carries (:meth:`hetbench.flower.job.FlowerJob.to_config`).
    node_of_client : dict
        Node id serving each hetbench client.
    history : History
        Where the per-round training loss goes.
    """

    def __init__(self, run: Any, algorithm: Any, job: ConfigRecord, node_of_client: dict[int, int],
                 history: Any) -> None:
        self.run = run
        self.algorithm = algorithm
        self.job = job
        self.node_of_client = node_of_client
        self.history = history
        self.failed: dict[int, list[int]] = {}  # round -> clients whose ClientApp failed
        self.train_s = 0.0
        self._t0 = 0.0
        self._selected: list[int] = []

    def summary(self) -> None:
        """Nothing to log: hetbench reports the run in its results document."""

    def model_record(self) -> ArrayRecord:
        """The global model (flat parameters and buffers) as an ArrayRecord."""
        return pack({"params": self.run.global_params, "buffers": self.run.global_buffers})[0]

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> list[Message]:
        self._t0 = time.perf_counter()
        run, algorithm = self.run, self.algorithm
        run.round = server_round
        clients = [int(k) for k in algorithm.select(run, server_round)]
        algorithm.begin_round(run, server_round)
        self._selected = clients
        model = self.model_record()
        state_arrays, state_config = pack({a: getattr(algorithm, a) for a in SERVER_TO_CLIENT.get(algorithm.name, ())})
        return [
            Message(RecordDict({"job": self.job, "round": ConfigRecord({"server-round": server_round, "client": k,
                                                                        "slot": i}),
                                "model": model, "server-arrays": state_arrays, "server-config": state_config}),
                    dst_node_id=self.node_of_client[k], message_type=MessageType.TRAIN)
            for i, k in enumerate(clients)
        ]

    def aggregate_train(self, server_round: int, replies) -> tuple[ArrayRecord | None, MetricRecord | None]:
        from hetbench.train.algorithms import ClientUpdate
        from hetbench.train.local import TrainingDiverged

        run, algorithm = self.run, self.algorithm
        replies = list(replies)
        good = [m for m in replies if not m.has_error()]
        bad = [m for m in replies if m.has_error()]
        if not good:
            reason = error_line(bad[0].error.reason) if bad else "no reply before the timeout"
            raise ClientsFailed(f"round {server_round}: all {len(self._selected)} clients failed (first error: {reason})")
        slots = {}
        for m in good:
            slot = next(i for i, k in enumerate(self._selected)
                        if self.node_of_client[k] == m.metadata.src_node_id
                        and k == int(m.content["update"]["update.client"]) and i not in slots)
            slots[slot] = m
        missing = [self._selected[i] for i in range(len(self._selected)) if i not in slots]
        if missing:
            self.failed[server_round] = missing
            reason = error_line(bad[0].error.reason) if bad else "no reply before the timeout"
            print(f"hetbench: warning: round {server_round}: {len(missing)} of {len(self._selected)} clients failed "
                  f"(clients {missing}; first error: {reason}); aggregating the {len(slots)} that reported",
                  file=sys.stderr)
        loss_sum = weight_sum = 0.0
        for slot in sorted(slots):
            content = slots[slot].content
            values = unpack(content["update-arrays"], content["update"])
            update = ClientUpdate(
                client=int(values["update.client"]), params=values["params"], buffers=values["buffers"],
                weight=float(values["update.weight"]), loss=float(values["update.loss"]),
                steps=int(values["update.steps"]), num_samples=int(values["update.num_samples"]),
                extra={k[len("extra."):]: v for k, v in values.items() if k.startswith("extra.")},
            )
            for key, value in values.items():
                if key.startswith("report."):
                    target = getattr(algorithm, key[len("report."):])
                    target.update({float(a): float(b) for a, b in value.tolist()})
            loss_sum += update.num_samples * update.loss
            weight_sum += update.num_samples
            algorithm.accumulate(run, server_round, update)
        algorithm.end_round(run, server_round)
        if not math.isfinite(float(run.global_params.sum())):
            raise TrainingDiverged(
                f"training diverged: the global model became NaN/inf after round {server_round}; lower --lr")
        train_loss = loss_sum / max(weight_sum, 1.0)
        self.history.add_train(server_round, train_loss)
        self.train_s += time.perf_counter() - self._t0
        return self.model_record(), MetricRecord({"train-loss": train_loss})

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> list[Message]:
        return []  # evaluation is central, in the ServerApp

    def aggregate_evaluate(self, server_round: int, replies) -> MetricRecord | None:
        return None


def evaluation(pool: Any, algorithm: Any, run: Any, history: Any, rounds: int, eval_every: int,
               on_round: Callable[[int, dict], None] | None) -> tuple[Callable, dict]:
    """The ``evaluate_fn`` of ``Strategy.start``: the global model on every test row every ``eval_every``
    rounds and after the last, with ``pool.predict`` (``--engine local``'s evaluation); also returns the
    dict where it adds up its seconds (``eval_s``)."""
    from hetbench.train.evaluate import metrics_from_correct, per_group

    spent = {"eval_s": 0.0}

    def evaluate_fn(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
        if server_round == 0:
            return None
        summary: dict = {}
        if server_round % max(int(eval_every), 1) == 0 or server_round == rounds:
            t0 = time.perf_counter()
            correct, loss = algorithm.evaluate(run, pool)
            summary = metrics_from_correct(correct, loss, run.data).summary()
            history.add_eval(server_round, summary, per_group(run.data, correct), correct)
            spent["eval_s"] += time.perf_counter() - t0
        if on_round is not None:
            on_round(server_round, summary)
        return MetricRecord({"accuracy": float(summary["accuracy"])}) if summary else None

    return evaluate_fn, spent
