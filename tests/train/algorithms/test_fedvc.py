"""FedVC (Hsu et al. 2020, sec. 5.3): virtual clients of N_VC examples, selected by size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.train.algorithms import make_algorithm
from hetbench.train.algorithms.fedvc import virtual_client_rows
from hetbench.train.sampling import select_proportional

pytestmark = pytest.mark.usefixtures("one_thread")


@settings(max_examples=40, deadline=None)
@given(n_k=st.integers(1, 600), n_vc=st.integers(1, 300), seed=st.integers(0, 2**31))
def test_fedvc_draws_exactly_n_vc_examples(n_k, n_vc, seed):
    rows = np.arange(1000, 1000 + n_k)
    got = virtual_client_rows(rows, n_vc, np.random.default_rng(seed))
    assert got.size == n_vc
    assert set(got.tolist()) <= set(rows.tolist())
    if n_k >= n_vc:
        assert np.unique(got).size == n_vc  # without replacement


def test_fedvc_client_batches_and_size_proportional_selection(tiny_data, train):
    data = tiny_data(sizes=(3, 40, 0, 9))
    algo = make_algorithm("fedvc", vc_size=20)
    doc, run = train(data, algo, rounds=2, clients_per_round=2, batch_size=6)
    for k in (0, 1, 3):
        b = algo.batches(run, 1, k)
        assert sum(x.size for x in b) == 20 and [x.size for x in b] == [6, 6, 6, 2]
    picks = np.concatenate([select_proportional(7, r, data.client_sizes, 2) for r in range(1, 400)])
    counts = np.bincount(picks, minlength=4)
    assert counts[2] == 0  # an empty client is never drawn
    assert counts[1] > counts[3] > counts[0]
