"""``hetbench.contract.group_by_client``: the one per-client grouping ``ClientPartitions``, the Flower
partitioner and the trainer slice clients by."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hetbench.contract.client_rows import group_by_client
from hetbench.errors import HetbenchError


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-1, 6), max_size=60), st.integers(0, 3), st.booleans())
def test_every_client_gets_exactly_its_rows_in_their_order(ids, extra, with_key):
    ids = np.array(ids, dtype=np.int64)
    n = int(ids.max(initial=-1)) + 1 + extra  # clients without rows at the end exist too
    key = np.arange(ids.size)[::-1] if with_key else None  # a second key reverses each client's rows
    rows = group_by_client(ids, n, then_by=key)
    assert rows.num_clients == n and rows.sizes().sum() == (ids >= 0).sum()
    for k in range(n):
        expect = np.flatnonzero(ids == k)
        np.testing.assert_array_equal(rows.indices(k), expect[::-1] if with_key else expect)
    grouped = np.arange(ids.size) if rows.order is None else rows.order
    np.testing.assert_array_equal(np.sort(grouped[rows.shared]), np.flatnonzero(ids < 0))


def test_grouped_rows_need_no_order_and_the_count_defaults_to_the_largest_id():
    rows = group_by_client(np.array([-1, -1, 0, 2, 2]))
    assert rows.order is None and rows.num_clients == 3 and rows.sizes().tolist() == [1, 0, 2]


@pytest.mark.parametrize("num_clients", [-1, 2.0, True])
def test_a_client_count_that_is_not_a_count_is_refused(num_clients):
    with pytest.raises(HetbenchError, match="num_clients must be a non-negative integer"):
        group_by_client(np.array([0, 1]), num_clients)


def test_an_id_beyond_the_count_is_refused_naming_it():
    with pytest.raises(HetbenchError, match="client_id 5, outside 0 to 2"):
        group_by_client(np.array([0, 5, 1]), 3)
