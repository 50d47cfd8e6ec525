"""The ServerApp: a hetbench run driven through Flower's Message API.

``main`` (``@app.main()``) reads the job from the run config (``[tool.flwr.app.config]``) and runs
hetbench's round loop (``hetbench.train.simulation.run_training``, the code of ``--engine local``) with
Flower as its client backend: it asks every node which hetbench clients it serves
(:func:`hetbench.flower.backend.connect`) and sends each round's client work as messages. The results
document is ``--engine local``'s plus ``engine: flower``.

Deployed (``hetbench flower-app``), the ServerApp writes it to the job's ``results`` path (atomically). Run by
``hetbench train --engine flower`` (:func:`hetbench.flower.simulation.run_flower_simulation`), the run config
also names an event folder (``events``): every round's summary, then the results document or the error,
go there (:class:`hetbench.flower.events.EventWriter`) for the parent to show and write.
"""

from __future__ import annotations

from typing import Any

from flwr.app import ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp

from hetbench.errors import HetbenchError
from hetbench.flower.job import FlowerJob
from hetbench.flower.backend import connect_clients

app = ServerApp()
NODE_WAIT_S = 300.0  # how long the ServerApp waits for SuperNodes serving every client
#: run-config keys that are not the job's: how the ServerApp runs (popped before the job is read)
RUNTIME_KEYS = ("node-wait-s", "workers", "central-accuracy", "events", "jobs")


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
    """The ServerApp's entry point: the job and its runtime options from the run config."""
    from pathlib import Path

    flat = dict(context.run_config)
    runtime = {key: flat.pop(key) for key in RUNTIME_KEYS if key in flat}
    wait_s = float(runtime.get("node-wait-s", NODE_WAIT_S))
    workers = int(runtime["workers"]) if runtime.get("workers") else None
    central = float(runtime["central-accuracy"]) if runtime.get("central-accuracy", "") != "" else None
    if runtime.get("jobs"):  # a session (hetbench train --engine flower): the parent's jobs, one after the other
        _serve_session(grid, runtime["jobs"], runtime["events"], wait_s)
        return
    if runtime.get("events"):  # one job from the parent: everything goes back to it
        from hetbench.flower.events import EventWriter

        events = EventWriter(runtime["events"])
        try:
            doc = serve(grid, flat, workers=workers, central_accuracy=central, wait_s=wait_s,
                        on_round=lambda r, summary: events.write("round", (r, summary)))
        except BaseException as exc:  # the parent raises it: Flower would only log it
            events.error(exc)
            return
        events.write("result", doc)
        return
    from hetbench.train.results import write_result

    job = FlowerJob.from_config(flat)
    if not job.results:
        raise HetbenchError("the Flower run config has no 'results' path for the results JSON")
    doc = serve(grid, flat, workers=workers, central_accuracy=central, wait_s=wait_s)
    write_result(doc, Path(job.results))


def _serve_session(grid: Grid, jobs: str, events_folder: str, wait_s: float) -> None:
    """Run the jobs the parent writes to ``jobs`` in order (:func:`hetbench.flower.events.next_job`) until its
    stop file; each job's rounds and results, or its error, go to the event folder. Each job's record carries
    ``session-run`` (its place in the session), which keys the ClientApps' state."""
    from hetbench.flower.events import EventWriter, next_job

    events = EventWriter(events_folder)
    index = 1
    while (item := next_job(jobs, index)) is not None:
        flat, central, workers = item
        try:
            doc = serve(grid, {**flat, "session-run": index}, workers=workers or None, central_accuracy=central,
                        wait_s=wait_s, on_round=lambda r, summary: events.write("round", (r, summary)))
        except BaseException as exc:  # the parent raises it; the session goes on to its next job
            events.error(exc)
        else:
            events.write("result", doc)
        index += 1
