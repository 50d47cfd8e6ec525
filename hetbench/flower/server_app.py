"""The ServerApp: a hetbench run driven through Flower's Message API.

``main`` (``@app.main()``) reads the job (the simulation hands it over in this process; a deployed app
reads it from the run config, ``[tool.flwr.app.config]``) and runs hetbench's round loop
(``hetbench.train.simulation.run_training``, the code of ``--engine local``) with Flower as its client
backend: it asks every node which hetbench clients it serves (:func:`hetbench.flower.backend.connect`) and
sends each round's client work as messages. The results document is ``--engine local``'s plus
``engine: flower``.
A deployed ServerApp writes it to the job's ``results`` path (atomically); in simulation the sweep does.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from flwr.app import ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp

from hetbench.errors import HetbenchError
from hetbench.flower.job import FlowerJob
from hetbench.flower.backend import connect_clients

app = ServerApp()
#: the in-process hand-over of :func:`hetbench.flower.simulation.run_flower_simulation` (empty when deployed)
LOCAL: dict[str, Any] = {}
NODE_WAIT_S = 300.0  # how long the ServerApp waits for SuperNodes serving every client


def stoppable(grid: Grid, stop: threading.Event) -> Grid:
    """``grid`` whose ``send_and_receive`` stops waiting for replies (HetbenchError) once ``stop`` is set.

    The simulation runs the ServerApp in a thread of its own; when the caller's thread is interrupted
    (Ctrl-C, SIGTERM) the ClientApps are gone, and Flower's in-memory grid would wait for their replies
    until the round's timeout (an hour) while the process could not exit.

    Parameters
    ----------
    grid : Grid
        Flower's grid (its ``push_messages``, ``pull_messages`` and ``pull_interval`` are used).
    stop : threading.Event
        Set by the caller when the run is to end.

    Returns
    -------
    Grid
        The same object, its ``send_and_receive`` replaced.

    Examples
    --------
    >>> import threading
    >>> from types import SimpleNamespace
    >>> stop = threading.Event(); stop.set()
    >>> grid = SimpleNamespace(push_messages=lambda ms: ["m1"], pull_messages=lambda ids: [], pull_interval=0.01)
    >>> stoppable(grid, stop).send_and_receive([object()], timeout=60)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: the Flower simulation was stopped
    """

    def send_and_receive(messages, *, timeout: float | None = None):
        waiting = set(grid.push_messages(messages))
        end = None if timeout is None else time.time() + timeout
        replies = []
        while waiting and (end is None or time.time() < end):
            if stop.is_set():
                raise HetbenchError("the Flower simulation was stopped")
            got = list(grid.pull_messages(waiting))
            replies.extend(got)
            waiting.difference_update(m.metadata.reply_to_message_id for m in got)
            if waiting:
                time.sleep(getattr(grid, "pull_interval", 0.1))
        return replies

    grid.send_and_receive = send_and_receive  # type: ignore[method-assign]
    return grid


def serve(grid: Grid, flat: dict[str, Any], data: Any = None, workers: int | None = None,
          central_accuracy: float | None = None, on_round: Any = None, wait_s: float = NODE_WAIT_S) -> dict:
    """Run the job ``flat`` on the nodes of ``grid``; return the results document.

    The rounds are hetbench's one round loop (:func:`hetbench.train.simulation.run_training`), the same
    code ``--engine local`` runs; Flower only carries the client work
    (:class:`~hetbench.flower.backend.FlowerClients`)."""
    from hetbench.train.simulation import run_training

    job = FlowerJob.from_config(flat)
    algorithm = job.algorithm()
    config = job.train_config(workers=workers)
    data = data if data is not None else job.data()
    record = ConfigRecord(flat)
    return run_training(data, algorithm, config, central_accuracy=central_accuracy, on_round=on_round,
                        backend=lambda session: connect_clients(grid, record, session, wait_s))


@app.main()
def main(grid: Grid, context: Context) -> None:
    """The ServerApp's entry point (simulation: the hand-over in :data:`LOCAL`; deployment: the run config)."""
    if LOCAL.get("job") is not None:
        try:
            if LOCAL.get("stop") is not None:
                grid = stoppable(grid, LOCAL["stop"])
            LOCAL["result"] = serve(grid, LOCAL["job"], LOCAL.get("data"), LOCAL.get("workers"),
                                    LOCAL.get("central_accuracy"), LOCAL.get("on_round"),
                                    LOCAL.get("wait_s", NODE_WAIT_S))
        except BaseException as exc:  # handed back to the caller, who raises it: Flower would only log it
            LOCAL["error"] = exc
        return
    from pathlib import Path

    from hetbench.train.results import write_result

    flat = dict(context.run_config)
    wait_s = float(flat.pop("node-wait-s", NODE_WAIT_S))
    workers = flat.pop("workers", None)
    job = FlowerJob.from_config(flat)
    if not job.results:
        raise HetbenchError("the Flower run config has no 'results' path for the results JSON")
    doc = serve(grid, flat, workers=workers, wait_s=wait_s)
    write_result(doc, Path(job.results))
