"""NaturalIdPartitioner: one client per distinct value of a column, and its pure functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason
from hetbench.partitioners import NaturalIdPartitioner
from hetbench.partitioners.natural_id import encode_keys, natural_id_assignment
from partition_checks import PROPS, check_invariants, check_seeds
from tables import make_table

# ---- natural id ------------------------------------------------------------------------------------
user_values = st.one_of(
    st.lists(st.one_of(st.none(), st.integers(-50, 1000)), min_size=1, max_size=80),
    st.lists(st.one_of(st.none(), st.text(alphabet="abcXYZ019_", min_size=0, max_size=3)), min_size=1, max_size=80),
)


@PROPS
@given(users=user_values, min_samples=st.integers(0, 4), seed=st.integers(0, 2**31 - 1))
def test_natural_id(users, min_samples, seed):
    n = len(users)
    labels = np.random.default_rng(seed).integers(0, 3, n)
    present = [u for u in users if u is not None]
    counts = {u: present.count(u) for u in set(present)}
    kept_values = sorted(u for u, c in counts.items() if c >= max(min_samples, 1))
    make = lambda: NaturalIdPartitioner(column="user", min_samples=min_samples)  # noqa: E731
    if not kept_values:
        with pytest.raises(HetbenchError):
            make().partition(make_table(labels, 3, users=users), seed)
        return
    part = check_seeds(make, lambda: make_table(labels, 3, users=users), seed)
    check_invariants(part, labels, 3, len(kept_values))
    # one client per distinct (kept) value, names sorted (numbers numerically, strings lexically)
    assert part.client_names == tuple(str(v) for v in kept_values)
    assert np.all(part.client_sizes() >= max(min_samples, 1))
    for i, u in enumerate(users):
        a = part.assignment[i]
        if u is None:
            assert a == -1 and part.drop_reason[i] == DropReason.MISSING_VALUE
        elif counts[u] < max(min_samples, 1):
            assert a == -1 and part.drop_reason[i] == DropReason.CLIENT_TOO_SMALL
        else:
            assert part.client_names[a] == str(u)
    # the assignment does not depend on the seed
    other = make().partition(make_table(labels, 3, users=users), seed + 1)
    assert np.array_equal(other.assignment, part.assignment)


def test_natural_id_numeric_sort_and_nan():
    users = [10.0, 2.0, float("nan"), 2.0, 10.0, 9.5]
    labels = np.zeros(len(users), dtype=np.int64)
    part = NaturalIdPartitioner(column="user").partition(make_table(labels, 1, users=users), 0)
    assert part.client_names == ("2.0", "9.5", "10.0")
    assert part.assignment.tolist() == [2, 0, -1, 0, 2, 1]
    assert part.dropped_counts() == {"missing-value": 1}


def test_natural_id_pure_functions():
    import pyarrow as pa

    codes, values = encode_keys([pa.array([3, 1, None, 3]), pa.array([1, 7])])
    assert values == [1, 3, 7]
    assert codes[0].tolist() == [1, 0, -1, 1]
    assert codes[1].tolist() == [0, 2]
    a, r, cov = natural_id_assignment(codes[0], len(values), min_samples=2)
    assert a.tolist() == [0, -1, -1, 0]
    assert r.tolist() == [0, DropReason.CLIENT_TOO_SMALL, DropReason.MISSING_VALUE, 0]
    assert cov.tolist() == [-1, 0, -1]


def test_natural_id_errors():
    t = make_table([0, 1, 0], 2, users=["a", "a", "b"])
    with pytest.raises(HetbenchError):
        NaturalIdPartitioner(column="user", min_samples=-1)
    with pytest.raises(HetbenchError):
        NaturalIdPartitioner(column="nope").partition(t)
    with pytest.raises(HetbenchError):
        NaturalIdPartitioner(column="user", min_samples=5).partition(t)
