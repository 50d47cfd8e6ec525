"""The ClientApp: a Flower node that trains hetbench clients with hetbench's own client update.

A node serves the hetbench clients named by its node config: ``partition-id=K`` (one client, what
Flower's simulation gives node K and what ``flower-supernode --node-config "partition-id=K num-partitions=N"``
gives a SuperNode) or ``partition-ids="0,3,7"`` (several). Two message types:

* ``query``: the ServerApp asks which clients this node serves; the node checks them against the split
  (``num-partitions`` too, when given) and answers with them, or with one line saying what is wrong;
* ``train``: one client update. The message carries the job (:class:`~hetbench.flower.job.FlowerJob`),
  the round, the client, the global model and the server state the algorithm declares its update reads
  (``Algorithm.server_to_client``). The node runs ``Algorithm.client_update`` through a one-worker
  :class:`~hetbench.train.client_pool.ClientPool`, the code path (threads, generator seeding, finiteness
  checks) of ``--engine local``, and replies with the update (:func:`hetbench.flower.backend.update_record`).
  The per-client state the algorithm declares (``Algorithm.client_state``, SCAFFOLD's ``c_i``) is read
  from and written back to the node's ``context.state`` under keys of the job (:func:`state_prefix`; an earlier
  job's are removed): it never leaves the client.

Each process keeps the loaded split, the model and the set-up algorithm of a job between messages (a Ray
actor in simulation, the SuperNode's ClientApp process in deployment).
"""

from __future__ import annotations

import json
from typing import Any

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from hetbench.errors import HetbenchError
from hetbench.flower.job import FlowerJob
from hetbench.flower.backend import update_record
from hetbench.flower.records import pack, unpack

app = ClientApp()
_PREPARED: dict[str, Any] = {}


class _Client:
    """A job's data view and training session (model, set-up algorithm, one-worker pool) in this process."""

    def __init__(self, flat: dict[str, Any]) -> None:
        from hetbench.train.session import TrainingSession

        job = FlowerJob.from_config(flat)
        self.data = job.data()
        self.session = TrainingSession.start(self.data, job.algorithm(), job.train_config(workers=1))
        self.algorithm, self.run, self.pool = self.session.algorithm, self.session.run, self.session.pool


def _prepared(job: ConfigRecord) -> _Client:
    flat = dict(job)
    key = json.dumps(flat, sort_keys=True)
    if key not in _PREPARED:
        _PREPARED.clear()  # one job at a time per process: a new run frees the last one's data
        _PREPARED[key] = _Client(flat)
    return _PREPARED[key]


def state_prefix(job: ConfigRecord) -> str:
    """The prefix of the ``context.state`` keys of ``job``'s per-client state: ``hetbench.<digest of the job>.``,
    so that a session's next job (another record, its ``session-run`` at least) never reads this one's.

    Examples
    --------
    >>> from flwr.app import ConfigRecord
    >>> a = state_prefix(ConfigRecord({"algo": "scaffold", "session-run": 1}))
    >>> a.startswith("hetbench.") and a != state_prefix(ConfigRecord({"algo": "scaffold", "session-run": 2}))
    True
    """
    import hashlib

    return f"hetbench.{hashlib.sha256(json.dumps(dict(job), sort_keys=True).encode()).hexdigest()[:12]}."


def served_clients(node_config: dict[str, Any], num_clients: int) -> list[int]:
    """The hetbench clients a node serves, from its node config; HetbenchError when they are not clients of
    the split.

    Examples
    --------
    >>> served_clients({"partition-id": 2, "num-partitions": 4}, 4), served_clients({"partition-ids": "0, 3"}, 4)
    ([2], [0, 3])
    >>> served_clients({"partition-id": 4, "num-partitions": 4}, 4)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: partition-id 4 is out of range: the split has 4 clients (partition ids 0..3)
    """
    if "partition-ids" in node_config:
        text = str(node_config["partition-ids"])
        try:
            ids = [int(s) for s in text.replace(" ", "").split(",") if s]
        except ValueError:
            raise HetbenchError(f"partition-ids must be a comma list of integers (got '{text}')") from None
        name = "partition-ids"
    elif "partition-id" in node_config:
        try:
            ids = [int(node_config["partition-id"])]
        except (TypeError, ValueError):
            raise HetbenchError(f"partition-id must be an integer (got '{node_config['partition-id']}')") from None
        name = "partition-id"
    else:
        raise HetbenchError("the SuperNode has no partition-id in its node config; start it with "
                            "`node_config` \"partition-id=K num-partitions=N\"")
    bad = [k for k in ids if not 0 <= k < num_clients]
    if bad or not ids:
        raise HetbenchError(f"{name} {bad[0] if bad else text} is out of range: the split has {num_clients} clients "
                            f"(partition ids 0..{num_clients - 1})")
    given = node_config.get("num-partitions")
    if given is not None and int(given) != num_clients:
        raise HetbenchError(f"num-partitions={given} in the node config, but the split has {num_clients} clients")
    return ids


@app.query()
def query(msg: Message, context: Context) -> Message:
    """Answer which clients this node serves (and load the job's data, so the first round does not)."""
    try:
        client = _prepared(msg.content["job"])
        ids = served_clients(dict(context.node_config), client.data.num_clients)
        info = ConfigRecord({"partition-ids": ids})
    except HetbenchError as exc:
        info = ConfigRecord({"error": str(exc)})
    return Message(RecordDict({"info": info}), reply_to=msg)


@app.train()
def train(msg: Message, context: Context) -> Message:
    """One client update with hetbench's ``Algorithm.client_update``; the per-client state the algorithm
    declares lives in ``context.state``."""
    import numpy as np

    client = _prepared(msg.content["job"])
    algorithm, run = client.algorithm, client.run
    r = int(msg.content["round"]["server-round"])
    k = int(msg.content["round"]["client"])
    if k not in served_clients(dict(context.node_config), client.data.num_clients):
        raise HetbenchError(f"this node does not serve client {k}")
    model = unpack(msg.content["model"], ConfigRecord())
    run.global_params, run.global_buffers = model["params"], model["buffers"]
    run.round = r
    for attr, value in unpack(msg.content["server-arrays"], msg.content["server-config"]).items():
        if attr in algorithm.server_to_client:
            setattr(algorithm, attr, value)
    prefix = state_prefix(msg.content["job"])
    for key in [key for key in context.state if key.startswith("hetbench.") and not key.startswith(prefix)]:
        del context.state[key]  # an earlier job's state (a session runs jobs one after the other): never read
    for attr in algorithm.client_state:  # this client's entry only: other clients' state is not here
        key = f"{prefix}{attr}.{k}"
        setattr(algorithm, attr, {k: unpack(context.state[key], context.state[key + ".config"])["value"]}
                if key in context.state else {})
    draw = int(msg.content["round"].get("draw", 0))  # a client drawn again in the round (FedVC)
    (update,) = list(client.pool.updates(r, np.array([k]), draws=[draw]))
    for attr in algorithm.client_state:
        if k in getattr(algorithm, attr):  # a tensor, an array, a number, a string, a boolean or None
            key = f"{prefix}{attr}.{k}"
            context.state[key], context.state[key + ".config"] = pack({"value": getattr(algorithm, attr).pop(k)})
    reply = update_record(update)
    reply["round"] = ConfigRecord({"slot": int(msg.content["round"].get("slot", -1))})  # which draw this answers
    return Message(reply, reply_to=msg)
