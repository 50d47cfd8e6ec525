"""What an engine that runs clients elsewhere (Flower) sends for every registered algorithm survives the
trip bit for bit: each client update, the server state its clients read (``server_to_client``) and the
state each client keeps (``client_state``). A value Flower's records cannot carry (a dict, a list) fails
here in seconds instead of in the slow Flower parity test."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

pytest.importorskip("flwr")

from hetbench.train.algorithms import ALGORITHMS, TrainConfig, make_algorithm  # noqa: E402
from hetbench.train.simulation import LocalClients, run_training  # noqa: E402

SIZES = (10, 14, 8, 12, 9, 11)


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(b, torch.Tensor) and isinstance(a, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    return type(a) is type(b) and a == b


class Recording(LocalClients):
    """The local engine, sending every update it hands to the round loop through Flower's records on the
    way (before the server's accumulate consumes its ``extra``): (what was sent, what arrived)."""

    def __init__(self, session) -> None:
        super().__init__(session)
        self.seen: list = []

    def updates(self, round_index, clients):
        from hetbench.flower.backend import client_update, update_record

        for update in super().updates(round_index, clients):
            sent = dataclasses.replace(update, params=update.params.clone(), buffers=update.buffers.clone())
            self.seen.append((sent, dict(update.extra), client_update(update_record(update))))
            yield update


@pytest.mark.parametrize("name", [n for n in ALGORITHMS.names() if n != "central"])
def test_every_update_and_declared_state_round_trips_through_flower_records(tiny_data, name):
    from hetbench.flower.records import pack, unpack

    data = tiny_data(sizes=SIZES, skew=True)
    options = {"model": "resnet10", "norm": "group"} if getattr(ALGORITHMS[name], "requires_norm", False) else {}
    algorithm = make_algorithm(name, **({"vc_size": 16} if name == "fedvc" else {}))
    recorders: list[Recording] = []

    def backend(session):
        recorders.append(Recording(session))
        return recorders[-1]

    sent = []  # what an engine would send each client, captured before the round's updates (as Flower does)
    config = TrainConfig(rounds=2, clients_per_round=3, batch_size=4, lr=0.1, workers=1, **options)
    _, run = run_training(data, algorithm, config, return_state=True, backend=backend,
                          on_round=lambda r, s: sent.append({a: getattr(algorithm, a) for a in algorithm.server_to_client}))
    (recording,) = recorders
    assert len(recording.seen) == 6
    for update, extra, back in recording.seen:
        for field in ("client", "weight", "loss", "steps", "num_samples", "params", "buffers"):
            assert _same(getattr(back, field), getattr(update, field)) or (
                field == "weight" and float(back.weight) == float(update.weight)), (name, field)
        assert sorted(back.extra) == sorted(extra), name
        for key, value in extra.items():
            got = back.extra[key]
            assert _same(got, value) or (isinstance(value, (float, int)) and got == value), (name, key)
    for state in sent:
        back = unpack(*pack(state))
        assert sorted(back) == sorted(state) and all(_same(back[k], v) or back[k] == v for k, v in state.items()), name
    for attr in algorithm.client_state:
        for value in getattr(algorithm, attr).values():
            got = unpack(*pack({"value": value}))["value"]
            assert _same(got, value) if isinstance(value, torch.Tensor) else np.array_equal(got, value), (name, attr)
