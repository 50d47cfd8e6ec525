"""benchmarks/trainer_dispatch.py: the ATen-operation counter that predicts a GPU's speed on a CPU (issue 46,
item 6). It must see the operations of the threads the trainer starts, and it must show what a loop over
clients costs: a round of 10x the clients dispatches about 10x the operations per step index."""

from __future__ import annotations

import threading

import torch

from test_bench_lockstep import _module


def test_the_counter_sees_every_thread_started_inside_it_and_nothing_after():
    dispatch = _module("trainer_dispatch")
    tally = dispatch.Tally()
    with dispatch.counting_every_thread(tally):
        torch.ones(3).add(1)
        mine = tally.n
        worker = threading.Thread(target=lambda: torch.ones(3).mul(2).sum())
        worker.start()
        worker.join()
    assert mine >= 2 and tally.n >= mine + 3  # ones, mul, sum in the worker
    seen = tally.n
    torch.ones(3).add(1)
    threading.Thread(target=lambda: torch.ones(3).sum()).run()
    assert tally.n == seen  # outside the block nothing is counted, and Thread.run is restored


def test_a_loop_over_clients_dispatches_in_proportion_to_them(tmp_path, monkeypatch, capsys):
    dispatch = _module("trainer_dispatch")
    monkeypatch.setattr(dispatch, "CLIENTS", 40)
    monkeypatch.setattr(dispatch, "ROUND_SIZES", (2, 20))
    per_index = dispatch.main()
    ratio = per_index["sequential"][20] / per_index["sequential"][2]
    assert 8 <= ratio <= 12  # ten times the clients, the same steps each: about ten times the operations
    # FedAvg in lockstep is one stacked computation: its operations per step do not grow with the clients
    assert per_index["lockstep"][20] <= 1.1 * per_index["lockstep"][2]
    assert "ops per step index, 20 clients / 2 clients" in capsys.readouterr().out
