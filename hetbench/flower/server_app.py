"""The ServerApp: a hetbench run driven through Flower's Message API.

``main`` (``@app.main()``) reads the job (the simulation hands it over in this process; a deployed app
reads it from the run config, ``[tool.flwr.app.config]``), builds the global model, the algorithm's server
state and the evaluation exactly as ``hetbench.train.simulation.run_training`` does, asks every node which
hetbench clients it serves (:func:`connect`), runs :class:`~hetbench.flower.strategy.HetbenchStrategy`
through ``Strategy.start`` and writes the results document of ``--engine local`` plus ``engine: flower``.
A deployed ServerApp writes it to the job's ``results`` path (atomically); in simulation the sweep does.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.serverapp import Grid, ServerApp

from hetbench.errors import HetbenchError
from hetbench.flower.job import FlowerJob
from hetbench.flower.strategy import error_line

app = ServerApp()
#: the in-process hand-over of :func:`hetbench.flower.simulation.run_flower_simulation` (empty when deployed)
LOCAL: dict[str, Any] = {}
NODE_WAIT_S = 300.0  # how long the ServerApp waits for SuperNodes serving every client


def connect(grid: Grid, job: ConfigRecord, num_clients: int, wait_s: float) -> dict[int, int]:
    """Node id serving each hetbench client 0..num_clients-1, asked of every node (``query`` messages).

    Nodes that connect later are asked as they come, for up to ``wait_s`` seconds. A node that names a
    client out of range (or a client two nodes claim) stops the run with one line (HetbenchError).
    """
    node_of_client: dict[int, int] = {}
    asked: set[int] = set()
    t0 = time.perf_counter()
    while True:
        new = [n for n in grid.get_node_ids() if n not in asked]
        if new:
            query = RecordDict({"job": job})
            replies = list(grid.send_and_receive(
                [Message(content=query, dst_node_id=n, message_type=MessageType.QUERY) for n in new], timeout=wait_s))
            for m in replies:
                if m.has_error():
                    raise HetbenchError(f"node {m.metadata.src_node_id} failed to load the job: "
                                        f"{error_line(m.error.reason)}")
                info = m.content["info"]
                if "error" in info:
                    raise HetbenchError(f"SuperNode {m.metadata.src_node_id}: {info['error']}")
                for k in info["partition-ids"]:
                    if int(k) in node_of_client:
                        raise HetbenchError(f"client {k} is served by two nodes ({node_of_client[int(k)]} and "
                                            f"{m.metadata.src_node_id}); give each SuperNode its own partition-id")
                    node_of_client[int(k)] = m.metadata.src_node_id
            asked.update(m.metadata.src_node_id for m in replies)
        if len(node_of_client) == num_clients:
            return node_of_client
        if time.perf_counter() - t0 > wait_s:
            missing = sorted(set(range(num_clients)) - set(node_of_client))
            shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
            raise HetbenchError(f"after {wait_s:.0f} s no SuperNode serves clients {shown} of {num_clients}; start "
                                "one per partition id (--node-config \"partition-id=K num-partitions=N\")")
        time.sleep(0.1)


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
    """Run the job ``flat`` on the nodes of ``grid``; return the results document."""
    import torch

    from hetbench.flower.strategy import HetbenchStrategy, evaluation
    from hetbench.train.algorithms import RunState
    from hetbench.train.client_pool import ClientPool
    from hetbench.train.device import device_info, resolve_device
    from hetbench.train.document import History, elapsed, results_document
    from hetbench.train.evaluate import per_group
    from hetbench.train.local import Workspace
    from hetbench.train.models import build_model, count_parameters, profile

    t_start = time.perf_counter()
    job = FlowerJob.from_config(flat)
    algorithm = job.algorithm()
    config = job.train_config(workers=workers).for_algorithm(algorithm).check()
    data = data if data is not None else job.data()
    device = resolve_device(config.device)
    model_name = config.model_for(data.image_size)
    torch.manual_seed(int(config.seed))
    model = build_model(model_name, data.in_channels, data.num_classes, data.image_size, config.norm)
    ws = Workspace(data, model, device)
    run = RunState(ws=ws, config=config, global_params=ws.flat.params.clone(), global_buffers=ws.flat.buffers.clone())
    algorithm.setup(run)
    pool = ClientPool(run, model_name, algorithm, config)
    history = History(list(data.group_names))
    record = ConfigRecord(flat)
    try:
        t0 = time.perf_counter()
        node_of_client = connect(grid, record, data.num_clients, wait_s)
        connect_s = time.perf_counter() - t0
        strategy = HetbenchStrategy(run, algorithm, record, node_of_client, history)
        evaluate_fn, spent = evaluation(pool, algorithm, run, history, int(config.rounds), int(config.eval_every), on_round)
        strategy.start(grid=grid, initial_arrays=strategy.model_record(), num_rounds=int(config.rounds),
                       evaluate_fn=evaluate_fn)
    finally:
        pool.close()
    ws.flat.load(run.global_params, run.global_buffers)
    full = profile(model, data.in_channels, data.image_size)
    doc = results_document(
        data=data, algorithm=algorithm, config=config, model_name=model_name,
        model_info={"norm": config.norm, "parameters": count_parameters(model), "macs": int(full["macs"])},
        history=history, groups=per_group(data, history.last_correct), log=run.log,
        clients=algorithm.client_footprints(run) if hasattr(algorithm, "client_footprints") else None,
        central_accuracy=central_accuracy, device=device_info(device, config.amp),
        timing={"wall_time_s": elapsed(t_start), "train_s": round(strategy.train_s, 3),
                "eval_s": round(spent["eval_s"], 3), "connect_s": round(connect_s, 3),
                "nodes": len(set(node_of_client.values()))},
        engine="flower",
    )
    if strategy.failed:
        doc["flower"] = {"failed_clients": {str(r): c for r, c in sorted(strategy.failed.items())}}
    return doc


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
