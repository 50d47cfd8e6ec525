"""The simulated run with every algorithm (hetbench.train.simulation)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_algorithm_learns_something_and_reports_finite_metrics(tiny_data, train):
    data = tiny_data(sizes=(10, 14, 8, 12), skew=False)
    for name in ("fedavg", "fedavgm", "fedprox", "scaffold", "qfedavg", "fedir", "fedvc", "heteroswitch", "dapperfl",
                 "central"):
        doc, _ = train(data, name, rounds=4, clients_per_round=4, lr=0.05)
        f = doc["final"]
        assert 0.0 <= f["accuracy"] <= 100.0 and np.isfinite(f["loss"]), name
        assert doc["curves"]["train_loss"][-1] < doc["curves"]["train_loss"][0] * 1.5, name
