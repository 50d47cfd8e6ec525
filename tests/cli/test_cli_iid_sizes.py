"""``partition iid --sizes`` count training rows (issue 14): the sizes before the client policy's hold-out
leave exactly the asked training rows, whatever the labels and the fraction."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.partitioners.iid import sizes_before_holdout
from hetbench.seeding import make_rng
from hetbench.splits import stratified_holdout


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=8),
    fraction=st.floats(0.01, 0.95),
    classes=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_training_rows_left_are_the_sizes(sizes, fraction, classes, seed):
    train = np.asarray(sizes, dtype=np.int64)
    before = sizes_before_holdout(train, fraction)
    assert np.all(before >= train)
    assignment = np.repeat(np.arange(train.size), before).astype(np.int32)
    labels = make_rng(seed).integers(0, classes, assignment.size)
    held = stratified_holdout(assignment, labels, train.size, classes, fraction, make_rng(seed, 1))
    left = np.bincount(assignment[~held], minlength=train.size)
    assert left.tolist() == train.tolist()
    # the smallest such sizes: one row fewer would leave fewer training rows
    smaller = np.maximum(before - 1, 0)
    assert np.all((sizes_before_holdout(np.maximum(train - 1, 0), fraction) <= smaller) | (train == 0))
