"""FedVC (Hsu et al. 2020, sec. 5.3): virtual clients of N_VC examples, selected by size."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.train.algorithms import make_algorithm
from hetbench.train.algorithms.fedvc import virtual_client_rows
from hetbench.train.sampling import draw_numbers, select_proportional

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


def test_fedvc_draws_each_client_in_proportion_to_its_size():
    """Hsu et al. 2020 sec. 5.3: the probability that a client is selected is proportional to n_k. With K
    draws per round a client is drawn K n_k / n times on average; a client of 40 of 52 examples is 77% of
    the draws (drawn without replacement it could be at most one of every round's 2: 50%)."""
    sizes = np.array([3, 40, 0, 9])
    picks = np.concatenate([select_proportional(7, r, sizes, 2) for r in range(1, 4001)])
    share = np.bincount(picks, minlength=4) / picks.size
    np.testing.assert_allclose(share, sizes / sizes.sum(), atol=0.015)


@settings(max_examples=30, deadline=None)
@given(clients=st.lists(st.integers(0, 5), max_size=12))
def test_draw_numbers_count_earlier_listings(clients):
    draws = draw_numbers(clients)
    assert draws == [clients[:i].count(k) for i, k in enumerate(clients)]


def test_a_client_drawn_twice_trains_two_virtual_clients(tiny_data):
    """A client listed twice in a round trains two virtual clients on their own N_VC examples; its first
    draw is the update it would train alone."""
    from hetbench.train.algorithms import TrainConfig
    from hetbench.train.session import TrainingSession

    data = tiny_data(sizes=(3, 40, 9))
    session = TrainingSession.start(data, make_algorithm("fedvc", vc_size=8),
                                    TrainConfig(workers=1, batch_size=4, lr=0.1, clients_per_round=2))
    try:
        alone = list(session.pool.updates(1, np.array([1])))
        twice = list(session.pool.updates(1, np.array([1, 1])))
        first = session.algorithm.batches(session.run, 1, 1)
    finally:
        session.close()
    assert [u.client for u in twice] == [1, 1]
    assert torch.equal(alone[0].params, twice[0].params)
    assert not torch.equal(twice[0].params, twice[1].params)
    assert sum(b.size for b in first) == 8
