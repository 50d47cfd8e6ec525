"""The centralised reference run: an average FL round's worth of examples per round."""

from __future__ import annotations

import pytest

from hetbench.train.algorithms import make_algorithm

pytestmark = pytest.mark.usefixtures("one_thread")


def test_centralised_run_processes_an_average_rounds_worth_of_examples(tiny_data, train):
    data = tiny_data(sizes=(10, 20, 30))
    algo = make_algorithm("central")
    doc, run = train(data, algo, rounds=3, clients_per_round=2, batch_size=5)
    assert algo.per_round == 2 * 20
    assert doc["final"]["relative_accuracy"] == 1.0
    assert len(doc["curves"]["train_loss"]) == 3
