"""Flower as a client backend of hetbench's round loop: a round's client updates as Flower messages.

The round loop (:func:`hetbench.train.simulation.run_training`) selects the clients, aggregates and
evaluates, exactly as for the local engine; :class:`FlowerClients` only carries the client work. For every
selected client it sends one ``train`` message to the node serving it, with the global model, the job
and the server state the algorithm declares a client update reads (``Algorithm.server_to_client``); the
ClientApp (:mod:`hetbench.flower.client_app`) runs the same ``Algorithm.client_update`` and replies with
the :class:`~hetbench.train.algorithms.ClientUpdate`. Nothing here knows any algorithm by name: what
travels is what the algorithm declares, serialised by :mod:`hetbench.flower.records`.

A client whose ClientApp failed is left out of the round (the algorithms aggregate over the reporting
clients, and the results list it under ``flower.failed_clients``); a round in which every client failed
stops the run (:class:`ClientsFailed`, exit 3, naming the round).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Iterator

import numpy as np
from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.serverapp import Grid

from hetbench.errors import HetbenchError
from hetbench.flower.records import pack, unpack
from hetbench.train.sampling import draw_numbers

#: how long a round waits for its clients' replies (Flower's own ``Strategy.start`` default); a client that
#: has not replied by then is left out of the round as a failed one
ROUND_TIMEOUT_S = 3600.0

#: the ClientUpdate fields that travel as numbers (params, buffers and extra travel as arrays or values)
UPDATE_FIELDS = ("client", "weight", "loss", "steps", "num_samples")


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


def update_record(update: Any) -> RecordDict:
    """A :class:`~hetbench.train.algorithms.ClientUpdate` as the content of a reply message.

    Examples
    --------
    >>> import torch
    >>> from hetbench.train.algorithms import ClientUpdate
    >>> sent = ClientUpdate(3, torch.ones(2), torch.zeros(0), 10.0, 0.5, 4, 40, {"dc": torch.ones(2), "s1": True})
    >>> got = client_update(update_record(sent))
    >>> (got.client, got.weight, got.steps, got.num_samples, got.extra["s1"], got.params.tolist())
    (3, 10.0, 4, 40, True, [1.0, 1.0])
    """
    values: dict[str, Any] = {"params": update.params, "buffers": update.buffers}
    values.update({f"extra.{name}": v for name, v in update.extra.items()})
    arrays, scalars = pack(values)
    for name in UPDATE_FIELDS:
        scalars[f"update.{name}"] = getattr(update, name)
    return RecordDict({"update-arrays": arrays, "update": scalars})


def client_update(content: RecordDict) -> Any:
    """The :class:`~hetbench.train.algorithms.ClientUpdate` of a reply's content (:func:`update_record`)."""
    from hetbench.train.algorithms import ClientUpdate

    values = unpack(content["update-arrays"], content["update"])
    return ClientUpdate(
        client=int(values["update.client"]), params=values["params"], buffers=values["buffers"],
        weight=float(values["update.weight"]), loss=float(values["update.loss"]),
        steps=int(values["update.steps"]), num_samples=int(values["update.num_samples"]),
        extra={k[len("extra."):]: v for k, v in values.items() if k.startswith("extra.")},
    )


class FlowerClients:
    """The client updates of a round, run by Flower ClientApps through a grid.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The ServerApp's grid (simulation or deployment).
    job : ConfigRecord
        The job every train message carries (:meth:`hetbench.flower.job.FlowerJob.to_config`).
    node_of_client : dict
        Node id serving each hetbench client (:func:`connect`).
    session : TrainingSession
        The ServerApp's session: its run state holds the global model, its algorithm the server state.
    connect_s : float
        Seconds spent finding the nodes (reported in ``timing``).
    """

    engine = "flower"

    def __init__(self, grid: Any, job: ConfigRecord, node_of_client: dict[int, int], session: Any,
                 connect_s: float = 0.0) -> None:
        self.grid = grid
        self.job = job
        self.node_of_client = node_of_client
        self.run = session.run
        self.algorithm = session.algorithm
        self.connect_s = connect_s
        self.failed: dict[int, list[int]] = {}  # round -> clients whose ClientApp failed

    def _messages(self, round_index: int, clients: list[int]) -> list[Message]:
        run, algorithm = self.run, self.algorithm
        model = pack({"params": run.global_params, "buffers": run.global_buffers})[0]
        state_arrays, state_config = pack({a: getattr(algorithm, a) for a in algorithm.server_to_client})
        return [
            Message(RecordDict({"job": self.job,
                                "round": ConfigRecord({"server-round": round_index, "client": k, "slot": i,
                                                       "draw": d}),
                                "model": model, "server-arrays": state_arrays, "server-config": state_config}),
                    dst_node_id=self.node_of_client[k], message_type=MessageType.TRAIN)
            for i, (k, d) in enumerate(zip(clients, draw_numbers(clients)))
        ]

    def updates(self, round_index: int, clients: np.ndarray) -> Iterator[Any]:
        """Send the round's train messages, wait for the replies and yield the updates in selection order."""
        selected = [int(k) for k in clients]
        replies = list(self.grid.send_and_receive(self._messages(round_index, selected), timeout=ROUND_TIMEOUT_S))
        good = [m for m in replies if not m.has_error()]
        bad = [m for m in replies if m.has_error()]
        reason = error_line(bad[0].error.reason) if bad else "no reply before the timeout"
        if not good:
            raise ClientsFailed(f"round {round_index}: all {len(selected)} clients failed (first error: {reason})")
        slots: dict[int, Message] = {}
        for m in good:  # each reply names the slot it answers: a client drawn twice (FedVC) sends two
            k = int(m.content["update"]["update.client"])
            slot = int(m.content["round"]["slot"]) if "round" in m.content else -1
            if not (0 <= slot < len(selected) and selected[slot] == k and slot not in slots):
                slot = next((i for i, c in enumerate(selected)
                             if c == k and self.node_of_client[c] == m.metadata.src_node_id and i not in slots), None)
            if slot is None:  # a reply for no open slot (a duplicate, or a client this round did not send)
                print(f"hetbench: warning: round {round_index}: an unexpected reply for client {k} is ignored",
                      file=sys.stderr)
                continue
            slots[slot] = m
        missing = [selected[i] for i in range(len(selected)) if i not in slots]
        if missing:
            self.failed[round_index] = missing
            print(f"hetbench: warning: round {round_index}: {len(missing)} of {len(selected)} clients failed "
                  f"(clients {missing}; first error: {reason}); aggregating the {len(slots)} that reported",
                  file=sys.stderr)
        for slot in sorted(slots):
            yield client_update(slots[slot].content)

    def timing(self) -> dict[str, Any]:
        return {"connect_s": round(self.connect_s, 3), "nodes": len(set(self.node_of_client.values()))}

    def report(self) -> dict[str, Any]:
        execution = {"execution": {"clients": "sequential",
                                   "reason": "the flower engine trains each client in its own ClientApp"}}
        if not self.failed:
            return execution
        return {**execution, "flower": {"failed_clients": {str(r): c for r, c in sorted(self.failed.items())}}}

    def close(self) -> None:
        """Nothing to release: the grid belongs to Flower."""


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
                                "one per partition id (`node_config` \"partition-id=K num-partitions=N\")")
        time.sleep(0.1)


def connect_clients(grid: Any, job: ConfigRecord, session: Any, wait_s: float) -> FlowerClients:
    """Find the node serving each client of ``session``'s split (:func:`connect`) and return the backend that sends them their work."""
    t0 = time.perf_counter()
    node_of_client = connect(grid, job, session.data.num_clients, wait_s)
    return FlowerClients(grid, job, node_of_client, session, time.perf_counter() - t0)
