"""Tests for the Hsu et al. 2020 (sec. 4) per-user filters and the ``users`` partitioner."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason
from hetbench.seeding import make_rng
from hetbench.partitioners.user_filters import inaturalist_balance, landmarks_filter, user_disjoint_test_split
from hetbench.partitioners.users import UsersPartitioner, surviving_classes
from tables import make_table

BIRDCLEF = Path(__file__).resolve().parents[3] / "shared" / "data" / "geo" / "birdclef2022_train_metadata.csv"


def _reference_filter(users, classes, ci, cu, ui, uc):
    """Slow, obvious reference: drop violating classes / users one pass at a time until stable."""
    rows = {i for i in range(len(users)) if users[i] >= 0 and classes[i] >= 0}
    while True:
        by_class, by_user = defaultdict(list), defaultdict(list)
        for i in rows:
            by_class[classes[i]].append(i)
            by_user[users[i]].append(i)
        bad = set()
        for rs in by_class.values():
            if len(rs) < ci or len({users[i] for i in rs}) < cu:
                bad.update(rs)
        for rs in by_user.values():
            if len(rs) < ui or len({classes[i] for i in rs}) < uc:
                bad.update(rs)
        if not bad:
            return np.array([i in rows for i in range(len(users))], dtype=bool)
        rows -= bad


def _check_thresholds(users, classes, keep, ci, cu, ui, uc):
    u, c = users[keep], classes[keep]
    for cls in np.unique(c):
        m = c == cls
        assert m.sum() >= ci and np.unique(u[m]).size >= cu
    for usr in np.unique(u):
        m = u == usr
        assert m.sum() >= ui and np.unique(c[m]).size >= uc


tables = st.integers(1, 200).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-1, 12), min_size=n, max_size=n),
        st.lists(st.integers(-1, 8), min_size=n, max_size=n),
        st.tuples(st.integers(0, 6), st.integers(0, 4), st.integers(0, 6), st.integers(0, 4)),
    )
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables)
def test_landmarks_filter_fixed_point(data):
    users, classes, (ci, cu, ui, uc) = data
    users, classes = np.array(users, np.int64), np.array(classes, np.int64)
    res = landmarks_filter(users, classes, ci, cu, ui, uc)
    keep = res.keep
    assert keep.dtype == bool and keep.shape == users.shape
    assert not np.any(keep & ((users < 0) | (classes < 0)))
    _check_thresholds(users, classes, keep, ci, cu, ui, uc)
    # the largest fixed point, as found by a naive loop
    assert np.array_equal(keep, _reference_filter(users.tolist(), classes.tolist(), ci, cu, ui, uc))
    # applying it again changes nothing
    again = landmarks_filter(users[keep], classes[keep], ci, cu, ui, uc)
    assert again.keep.all() and again.iterations == 0
    assert (res.emptied_by is None) == bool(keep.any())


def test_landmarks_filter_cascades():
    # user 0 only just reaches 2 classes; class 2 is too small, which then sinks user 0
    users = np.array([0, 0, 1, 1, 2, 2, 1, 2])
    classes = np.array([1, 2, 0, 1, 0, 3, 3, 1])
    res = landmarks_filter(users, classes, min_class_images=2, min_class_users=2, min_user_images=2, min_user_classes=2)
    _check_thresholds(users, classes, res.keep, 2, 2, 2, 2)
    assert res.iterations == 1
    assert res.keep.tolist() == [False, False, True, True, True, True, True, True]


def test_landmarks_filter_long_cascade():
    # a core of users 0-2 on classes 0-2 survives; a chain hanging off it unravels one link a round:
    # class 5 has one user (5), so user 5 loses a class, so class 4 loses a user, ...
    core = [(u, c) for u in range(3) for c in range(3)]
    chain = [(2, 3), (3, 3), (3, 4), (4, 4), (4, 5), (5, 5)]
    users, classes = (np.array(x, np.int64) for x in zip(*(core + chain)))
    res = landmarks_filter(users, classes, min_class_images=1, min_class_users=2, min_user_images=1, min_user_classes=2)
    assert res.keep.tolist() == [True] * len(core) + [False] * len(chain)
    assert res.iterations >= 3


def test_landmarks_filter_names_emptying_criterion():
    users = np.repeat(np.arange(5), 4)
    classes = np.tile(np.arange(4), 5)  # 4 classes x 5 users, 5 images each
    assert landmarks_filter(users, classes, 5, 5, 4, 4).keep.all()
    assert landmarks_filter(users, classes, 6, 1, 1, 1).emptied_by == "min_class_images"
    assert landmarks_filter(users, classes, 1, 6, 1, 1).emptied_by == "min_class_users"
    assert landmarks_filter(users, classes, 1, 1, 5, 1).emptied_by == "min_user_images"
    assert landmarks_filter(users, classes, 1, 1, 1, 5).emptied_by == "min_user_classes"
    assert landmarks_filter(np.full(3, -1), np.zeros(3, np.int64)).emptied_by == "input"


def test_partitioner_emptying_filter_raises_naming_criterion():
    table = make_table(np.tile(np.arange(4), 5), users=[f"u{i}" for i in np.repeat(np.arange(5), 4)])
    part = UsersPartitioner(column="user", min_class_users=6, min_class_images=1, min_user_images=1, min_user_classes=1)
    with pytest.raises(HetbenchError, match="min_class_users=6"):
        part.partition(table, 0)
    with pytest.raises(HetbenchError, match="min_train"):
        UsersPartitioner(column="user", filters="inaturalist", min_train=6, per_class=6).partition(table, 0)
    with pytest.raises(HetbenchError, match="no threshold"):
        UsersPartitioner(column="user", filters="inaturalist", min_class_users=3)
    with pytest.raises(HetbenchError, match="unknown user filter"):
        UsersPartitioner(column="user", filters="gld")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 6), st.booleans()), min_size=1, max_size=300), st.integers(1, 8), st.integers(0, 4))
def test_inaturalist_balance(rows, min_train, slack):
    classes = np.array([c for c, _ in rows], np.int64)
    is_train = np.array([t for _, t in rows], bool)
    per_class = max(1, min_train - slack)
    keep = inaturalist_balance(classes, is_train, make_rng(3), min_train=min_train, per_class=per_class)
    for c in range(7):
        n_train = int(np.sum((classes == c) & is_train))
        kept_train = int(np.sum(keep & (classes == c) & is_train))
        kept_test = int(np.sum(keep & (classes == c) & ~is_train))
        if n_train >= min_train:
            assert kept_train == per_class
            assert kept_test == int(np.sum((classes == c) & ~is_train))
        else:
            assert kept_train == 0 and kept_test == 0
    assert not keep[classes < 0].any()
    # seeded: the same rng seed gives the same rows
    assert np.array_equal(keep, inaturalist_balance(classes, is_train, make_rng(3), min_train, per_class))


def test_inaturalist_balance_is_uniform_subsample():
    classes = np.repeat([0, 1, 2], [250, 100, 99])
    keep = inaturalist_balance(classes, np.ones(classes.size, bool), make_rng(0))
    assert np.bincount(classes[keep], minlength=3).tolist() == [100, 100, 0]
    other = inaturalist_balance(classes, np.ones(classes.size, bool), make_rng(1))
    assert not np.array_equal(keep, other)  # a different seed draws other rows of class 0
    with pytest.raises(HetbenchError):
        inaturalist_balance(classes, np.ones(classes.size, bool), make_rng(0), min_train=50, per_class=60)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 15), st.integers(0, 9)), min_size=2, max_size=300),
    st.floats(0.05, 0.95),
    st.integers(0, 2**16),
)
def test_user_disjoint_test_split(rows, fraction, seed):
    users = np.array([u for u, _ in rows], np.int64)
    classes = np.array([c for _, c in rows], np.int64)
    if np.unique(users[users >= 0]).size < 2:
        with pytest.raises(HetbenchError):
            user_disjoint_test_split(users, classes, None, fraction, make_rng(seed))
        return
    allowed = np.arange(10) % 2 == 0
    for ktc in (None, allowed):
        train, test = user_disjoint_test_split(users, classes, ktc, fraction, make_rng(seed))
        assert not np.any(train & test)
        assert not np.intersect1d(users[train], users[test]).size  # disjoint users
        assert set(classes[test]) <= set(classes[train])  # test classes within train classes
        if ktc is not None:
            assert allowed[classes[test]].all()
        assert train.any()
        assert not np.any((train | test) & (users < 0))
        # every row of a training user is a training row
        assert np.array_equal(train, np.isin(users, users[train]) & (users >= 0))


def test_users_partitioner_small_table():
    # 3 classes x users a, b, c with 2 rows of each class; user d has one class only; " a" strips to "a"
    users = ["b", "a", "c", " a ", "d", "d", None, "c", "b", "a", "c", "b", "a", "c", "b", "d"]
    labels = [0, 0, 0, 1, 0, 0, 0, 1, 1, 2, 2, 2, 1, 2, 0, 0]
    table = make_table(labels, users=users)
    part = UsersPartitioner(column="user", min_class_images=1, min_class_users=2, min_user_images=1, min_user_classes=2)
    p = part.partition(table, 0)
    assert p.num_clients == 3 and p.client_names == ("a", "b", "c")
    a = p.assignment
    names = np.array(p.client_names + ("-",))[a]
    assert [n if n != "-" else None for n in names] == [
        u.strip() if u is not None and u.strip() != "d" else None for u in users
    ]
    r = p.drop_reason
    assert np.all(r[[4, 5, 15]] == DropReason.FILTERED)
    assert r[6] == DropReason.MISSING_VALUE
    assert p.recipe["method"] == "users"
    assert p.recipe["params"] == {
        "column": "user", "filters": "landmarks", "min_samples": 1, "strip": True,
        "min_class_images": 1, "min_class_users": 2, "min_user_images": 1, "min_user_classes": 2,
    }
    # without stripping " a " is a user of its own with one class: filtered
    p2 = UsersPartitioner(column="user", strip=False, min_class_images=1, min_class_users=2,
                          min_user_images=1, min_user_classes=2).partition(table, 0)
    assert p2.client_names == ("a", "b", "c") and p2.drop_reason[3] == DropReason.FILTERED
    # rebuilding from the recipe gives the same partition
    from hetbench.partitioners.users import UsersPartitioner as UP

    assert UP(**p.recipe["params"]).partition(table, 0).fingerprint == p.fingerprint


def test_users_partitioner_assign_split_and_none_filter():
    labels = [0, 0, 1, 1, 2, 2, 0, 1]
    users = ["x", "y", "x", "y", "z", "z", "z", "z"]
    table = make_table(labels, users=users, test_labels=[0, 2, 1, 0], test_users=["y", "x", "q", "z"])
    part = UsersPartitioner(column="user", min_class_images=2, min_class_users=2, min_user_images=1, min_user_classes=2)
    p = part.partition(table, 0)
    assert set(surviving_classes(p, table.labels["train"])) == {0, 1}
    sub = part.assign_split(table, "test", p)
    assert sub.assignment.tolist() == [p.client_names.index("y"), -1, -1, p.client_names.index("z")]
    assert sub.drop_reason.tolist() == [0, DropReason.FILTERED, DropReason.CLIENT_TOO_SMALL, 0]
    plain = UsersPartitioner(column="user", filters="none").partition(table, 0)
    assert plain.num_kept == 8 and plain.client_names == ("x", "y", "z")


def test_users_partitioner_inaturalist():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], [30, 12, 9])
    users = [f"u{k:02d}" for k in rng.integers(0, 20, labels.size)]
    table = make_table(labels, users=users)
    p = UsersPartitioner(column="user", filters="inaturalist", min_train=10, per_class=10).partition(table, 7)
    kept = p.assignment >= 0
    assert np.bincount(labels[kept], minlength=3).tolist() == [10, 10, 0]
    assert list(p.client_names) == sorted(set(np.array(users)[kept]))
    assert np.all(p.drop_reason[~kept] == DropReason.FILTERED)


def test_birdclef_landmarks_filter_matches_sources_md():
    if not BIRDCLEF.exists():
        pytest.skip(f"real-data fixture not found: {BIRDCLEF}")
    from hetbench.sources import load_table

    table = load_table(str(BIRDCLEF), label_col="primary_label")
    p = UsersPartitioner(column="author", filters="landmarks", strip=True).partition(table, 0)
    labels = table.labels["train"]
    assert p.num_kept == 7898
    assert p.num_clients == 82
    assert surviving_classes(p, labels).size == 66
    assert p.dropped_counts() == {"filtered": 14852 - 7898}
    assert list(p.client_names) == sorted(p.client_names)
    assert all(n == n.strip() for n in p.client_names)
    _check_thresholds(p.assignment, labels, p.assignment >= 0, 30, 10, 30, 5)
