"""``--min-samples`` (natural-id, users) and ``--min-size`` (Dirichlet's class scheme, embedding) count
*training* rows (issue 31, item 4a): under the ``client`` test policy every client holds out a share of
its rows for testing, and the minimum must still hold after that hold-out, in the train split the build
writes (what ``size_stats`` and the summary count)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partitioners import DirichletPartitioner, NaturalIdPartitioner, get_partitioner
from hetbench.partitioners.base import rows_for_training, sizes_before_holdout, training_holdout
from hetbench.partitioners.embedding import EmbeddingPartitioner
from hetbench.partitioners.users import UsersPartitioner
from hetbench.seeding import make_rng
from hetbench.splits import build_split, stratified_holdout
from partition_checks import PROPS
from tables import make_table

fractions = st.floats(0.01, 0.95)


def _train_rows(fs) -> np.ndarray:
    """Training rows per client of a built split (its ``train`` output)."""
    return np.bincount(fs.outputs["train"].client_ids, minlength=fs.num_clients)


@PROPS
@given(n=st.integers(0, 400), min_train=st.integers(0, 60), fraction=fractions, classes=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_rows_for_training_is_the_fewest_rows_that_keep_the_minimum(n, min_train, fraction, classes, seed):
    """The threshold agrees with the hold-out the client policy really takes (stratified_holdout), and is
    the smallest that works: one row fewer leaves fewer training rows."""
    need = rows_for_training(min_train, fraction)
    assert (n - training_holdout(n, fraction) >= min_train) == (n >= need)
    labels = make_rng(seed).integers(0, classes, n)
    held = stratified_holdout(np.zeros(n, np.int32), labels, 1, classes, fraction, make_rng(seed, 1))
    assert int(held.sum()) == training_holdout(n, fraction)
    if 0 < min_train and fraction <= 0.95:  # where the IID sizes helper finds its exact size, both agree
        assert need <= int(sizes_before_holdout(np.array([min_train]), fraction)[0])


@PROPS
@given(users=st.lists(st.integers(0, 12), min_size=1, max_size=120), min_samples=st.integers(0, 9),
       fraction=fractions, seed=st.integers(0, 2**16))
def test_natural_id_keeps_only_clients_with_min_samples_training_rows(users, min_samples, fraction, seed):
    """Any table, any minimum: every kept client has >= min_samples training rows after its hold-out, and
    every value that could keep them is a client."""
    table = make_table(make_rng(seed).integers(0, 3, len(users)), 3, users=users)
    partitioner = NaturalIdPartitioner("user", min_samples, holdout_fraction=fraction)
    counts = np.bincount(users)
    can_keep = [u for u in range(counts.size) if counts[u] - training_holdout(int(counts[u]), fraction) >= max(min_samples, 1)]
    if not can_keep:
        with pytest.raises(HetbenchError, match="training row"):
            build_split(table, partitioner, seed, test_split="client", test_fraction=fraction)
        return
    fs = build_split(table, partitioner, seed, test_split="client", test_fraction=fraction)
    assert fs.partition.client_names == tuple(str(u) for u in can_keep)
    assert _train_rows(fs).min() >= max(min_samples, 1)


@PROPS
@given(users=st.lists(st.integers(0, 8), min_size=1, max_size=80), min_samples=st.integers(2, 8),
       fraction=fractions, seed=st.integers(0, 2**16))
def test_users_partitioner_counts_training_rows_too(users, min_samples, fraction, seed):
    table = make_table(make_rng(seed).integers(0, 3, len(users)), 3, users=users)
    partitioner = UsersPartitioner("user", filters="none", min_samples=min_samples, holdout_fraction=fraction)
    try:
        fs = build_split(table, partitioner, seed, test_split="client", test_fraction=fraction)
    except HetbenchError as exc:
        assert "training rows" in str(exc)
        assert all(c - training_holdout(int(c), fraction) < min_samples for c in np.bincount(users))
        return
    assert _train_rows(fs).min() >= min_samples


@st.composite
def dirichlet_case(draw):
    class_counts = draw(st.lists(st.integers(0, 40), min_size=1, max_size=5).filter(lambda c: sum(c) >= 1))
    n = sum(class_counts)
    k = draw(st.integers(1, min(n, 10)))
    min_size = draw(st.integers(0, max(n // k, 0) + 3))  # some cases impossible once the hold-out counts
    return class_counts, k, min_size


@PROPS
@given(case=dirichlet_case(), alpha=st.sampled_from([0.0, 0.05, 0.5, 5.0, math.inf]), fraction=fractions,
       seed=st.integers(0, 2**16))
def test_dirichlet_repair_meets_min_size_in_training_rows(case, alpha, fraction, seed):
    """The class scheme's repair gives every client enough rows that --min-size training rows remain after
    its hold-out; a request that cannot be met fails at once, naming the training rows."""
    class_counts, k, min_size = case
    labels = make_rng(seed).permutation(np.repeat(np.arange(len(class_counts)), class_counts))
    table = make_table(labels, len(class_counts))
    partitioner = DirichletPartitioner(k, alpha, "class", min_size=min_size, holdout_fraction=fraction)
    if k * rows_for_training(min_size, fraction) > labels.size:
        with pytest.raises(HetbenchError, match=f"min_size {min_size} is impossible: {k} clients x {min_size} training"):
            partitioner.partition(table, seed)
        return
    fs = build_split(table, partitioner, seed, test_split="client", test_fraction=fraction, allow_empty=True)
    assert _train_rows(fs).min() >= min_size
    assert fs.partition.num_kept == labels.size  # the repair moves rows, it drops none


def test_min_size_without_a_hold_out_counts_every_row():
    """Without ``holdout_fraction`` (a build under another test policy) every row of the partitioned split
    is a training row: the minimum is the plain row count, as before."""
    labels = np.repeat(np.arange(3), [30, 20, 10])
    part = DirichletPartitioner(6, 0.1, "class", min_size=10).partition(make_table(labels), 0)
    assert part.client_sizes().tolist() == [10] * 6
    with_holdout = DirichletPartitioner(6, 0.1, "class", min_size=10, holdout_fraction=0.2)
    with pytest.raises(HetbenchError, match=r"6 clients x 10 training rows \(12 rows before each client holds out "
                                            r"0\.2 of its rows for testing\) needs 72 rows, more than the 60 there are"):
        with_holdout.partition(make_table(labels), 0)


@pytest.mark.parametrize("make, recorded", [
    (lambda: NaturalIdPartitioner("user", 5, holdout_fraction=0.2), True),
    (lambda: NaturalIdPartitioner("user", 1, holdout_fraction=0.2), False),  # one row always trains: nothing to record
    (lambda: UsersPartitioner("user", "none", 3, holdout_fraction=0.3), True),
    (lambda: DirichletPartitioner(4, 0.5, "class", min_size=5, holdout_fraction=0.2), True),
    (lambda: DirichletPartitioner(4, 0.5, "class", min_size=0, holdout_fraction=0.2), False),
    (lambda: DirichletPartitioner(4, 0.5, "client", holdout_fraction=0.2), False),
    (lambda: EmbeddingPartitioner(4, 0.5, 3, "class", "pixels:4", min_size=5, holdout_fraction=0.2), True),
])
def test_the_recipe_records_the_hold_out_only_where_it_counts(make, recorded):
    """``hetbench verify`` rebuilds the partitioner from its recipe: the hold-out travels in the params,
    and recipes of splits it does not change stay as they were."""
    p = make()
    assert ("holdout_fraction" in p.params()) == recorded
    assert get_partitioner(p.name, p.params()).params() == p.params()


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.5])
def test_a_hold_out_outside_0_1_is_refused(fraction):
    with pytest.raises(HetbenchError, match="test_fraction must be between 0 and 1"):
        NaturalIdPartitioner("user", 5, holdout_fraction=fraction)
