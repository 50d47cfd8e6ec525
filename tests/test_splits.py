"""Output splits: the per-client stratified hold-out and ``build_split`` under each test policy."""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason
from hetbench.partitioners import (
    DirichletPartitioner,
    IIDPartitioner,
    NaturalIdPartitioner,
    ShardsPartitioner,
)
from hetbench.splits import SplitRows, build_split, stratified_holdout
from tables import make_table

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])




# ---- stratified_holdout ---------------------------------------------------------------------------
@st.composite
def holdout_case(draw):
    k = draw(st.integers(1, 8))
    c = draw(st.integers(1, 5))
    n = draw(st.integers(0, 200))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    # uneven client sizes, including empty and one-sample clients, and some dropped samples
    weights = rng.dirichlet(np.full(k + 1, 0.5))
    assignment = (rng.choice(k + 1, size=n, p=weights) - 1).astype(np.int32)
    labels = rng.choice(c, size=n, p=rng.dirichlet(np.full(c, 0.7))).astype(np.int64)
    fraction = draw(st.sampled_from([0.01, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.7, 0.9, 0.99]))
    return assignment, labels, k, c, fraction, seed


@PROPS
@given(case=holdout_case())
def test_stratified_holdout_properties(case):
    assignment, labels, k, c, fraction, seed = case
    test = stratified_holdout(assignment, labels, k, c, fraction, np.random.default_rng(seed))
    assert test.dtype == bool and test.shape == assignment.shape
    assert not np.any(test & (assignment < 0))  # dropped samples are never test samples
    for client in range(k):
        mine = assignment == client
        n_k = int(mine.sum())
        t_k = int((test & mine).sum())
        if n_k >= 2:
            assert t_k >= 1 and t_k <= n_k - 1  # at least one test and one train sample
            assert t_k == int(np.clip(round(fraction * n_k), 1, n_k - 1))
        else:
            assert t_k == 0
        for cls in range(c):
            n_kc = int((mine & (labels == cls)).sum())
            t_kc = int((test & mine & (labels == cls)).sum())
            assert 0 <= t_kc <= n_kc
            assert abs(t_kc - fraction * n_kc) <= 1.0  # stratified: within 1 of the class's share
    again = stratified_holdout(assignment, labels, k, c, fraction, np.random.default_rng(seed))
    assert np.array_equal(test, again)  # deterministic given the generator state


def test_stratified_holdout_exact_strata():
    # one client, 10 of class 0 and 30 of class 1, 25% out: 2.5 + 7.5 -> total 10, split 2/8 or 3/7
    assignment = np.zeros(40, dtype=np.int32)
    labels = np.repeat([0, 1], [10, 30])
    for s in range(10):
        test = stratified_holdout(assignment, labels, 1, 2, 0.25, np.random.default_rng(s))
        assert test.sum() == 10
        assert (test[:10].sum(), test[10:].sum()) in {(2, 8), (3, 7)}
    # exactly representable shares are met exactly
    test = stratified_holdout(assignment, np.repeat([0, 1], [20, 20]), 1, 2, 0.5, np.random.default_rng(0))
    assert test[:20].sum() == 10 and test[20:].sum() == 10


# ---- build_split ------------------------------------------------------------------------------------
def _two_split_table(n_train=300, n_test=80, num_classes=4, seed=0):
    rng = np.random.default_rng(seed)
    return make_table(rng.integers(0, num_classes, n_train), num_classes, test_labels=rng.integers(0, num_classes, n_test))


def _check_ordered(out):
    key = np.lexsort((out.rows, out.client_ids))
    assert np.array_equal(key, np.arange(len(out)))  # ordered by (client id, source row)
    assert np.unique(out.rows).size == len(out)


def test_build_split_global_policy():
    table = _two_split_table()
    fs = build_split(table, DirichletPartitioner(num_clients=6, alpha=0.3), seed=4)  # default: global
    assert fs.recipe["test_split"] == "global"
    assert fs.recipe["test_fraction"] is None
    assert set(fs.outputs) == {"train", "test"}
    train, test = fs.outputs["train"], fs.outputs["test"]
    assert train.source_split == "train" and test.source_split == "test"
    _check_ordered(train)
    kept = np.flatnonzero(fs.partition.assignment >= 0)
    assert np.array_equal(np.sort(train.rows), kept)
    assert np.array_equal(train.client_ids, fs.partition.assignment[train.rows])
    # the test split is kept whole and shared
    assert np.array_equal(test.rows, np.arange(80))
    assert np.all(test.client_ids == -1)
    assert np.array_equal(fs.labels("test"), table.labels["test"])
    assert np.array_equal(fs.labels("train"), table.labels["train"][train.rows])
    # deterministic
    again = build_split(_two_split_table(), DirichletPartitioner(num_clients=6, alpha=0.3), seed=4)
    assert again.fingerprint == fs.fingerprint
    other = build_split(_two_split_table(), DirichletPartitioner(num_clients=6, alpha=0.3), seed=5)
    assert other.fingerprint != fs.fingerprint


@FEW
@given(
    k=st.integers(1, 10),
    fraction=st.sampled_from([0.05, 0.2, 0.5, 0.8]),
    seed=st.integers(0, 2**31 - 1),
    method=st.sampled_from(["iid", "dirichlet", "shards"]),
)
def test_build_split_client_policy(k, fraction, seed, method):
    table = _two_split_table(n_train=120, n_test=30, seed=seed % 1000)
    part = {
        "iid": lambda: IIDPartitioner(num_clients=k),
        "dirichlet": lambda: DirichletPartitioner(num_clients=k, alpha=0.2, scheme="class", min_size=2),
        "shards": lambda: ShardsPartitioner(num_clients=k, shards_per_client=2),
    }[method]
    fs = build_split(table, part(), seed=seed, test_split="client", test_fraction=fraction, count_training_rows=False)
    assert set(fs.outputs) == {"train", "test", "global_test"}
    assert fs.recipe["test_split"] == "client" and fs.recipe["test_fraction"] == fraction
    train, test, glob = fs.outputs["train"], fs.outputs["test"], fs.outputs["global_test"]
    assert train.source_split == test.source_split == "train"
    _check_ordered(train)
    _check_ordered(test)
    # disjoint, and together exactly the kept training rows
    assert np.intersect1d(train.rows, test.rows).size == 0
    a = fs.partition.assignment
    assert np.array_equal(np.sort(np.concatenate([train.rows, test.rows])), np.flatnonzero(a >= 0))
    assert np.array_equal(train.client_ids, a[train.rows])
    assert np.array_equal(test.client_ids, a[test.rows])
    sizes = fs.partition.client_sizes()
    t = np.bincount(test.client_ids, minlength=k)
    r = np.bincount(train.client_ids, minlength=k)
    for c in range(k):
        if sizes[c] >= 2:
            assert t[c] >= 1 and r[c] >= 1
            assert t[c] == int(np.clip(round(fraction * sizes[c]), 1, sizes[c] - 1))
    # the source test split is kept beside it, shared
    assert glob.source_split == "test"
    assert np.array_equal(glob.rows, np.arange(30)) and np.all(glob.client_ids == -1)
    again = build_split(
        _two_split_table(n_train=120, n_test=30, seed=seed % 1000), part(), seed=seed, test_split="client", test_fraction=fraction,
        count_training_rows=False,
    )
    assert again.fingerprint == fs.fingerprint
    for name in fs.outputs:
        assert np.array_equal(again.outputs[name].rows, fs.outputs[name].rows)


def test_build_split_client_policy_is_default_without_test_split():
    table = make_table(np.arange(50) % 5, 5)
    fs = build_split(table, IIDPartitioner(num_clients=5), seed=1)
    assert fs.recipe["test_split"] == "client"
    assert set(fs.outputs) == {"train", "test"}
    assert len(fs.outputs["test"]) == 5 * 2  # 10 per client, 20 %


def _natural_table():
    train_users = ["u3", "u1", "u2", "u1", "u3", "u3", None, "u4", "u1", "u2"]
    test_users = ["u2", "u1", "u5", "u3", None, "u4", "u1"]
    rng = np.random.default_rng(0)
    return make_table(
        rng.integers(0, 3, len(train_users)), 3, users=train_users,
        test_labels=rng.integers(0, 3, len(test_users)), test_users=test_users,
    ), train_users, test_users


def test_build_split_natural_policy():
    table, train_users, test_users = _natural_table()
    fs = build_split(table, NaturalIdPartitioner(column="user", min_samples=2), seed=0)  # default: natural
    assert fs.recipe["test_split"] == "natural"
    names = fs.client_names
    assert names == ("u1", "u2", "u3")  # sorted; u4 has 1 < 2 training rows
    assert list(names) == sorted(names)
    train, test = fs.outputs["train"], fs.outputs["test"]
    _check_ordered(train)
    _check_ordered(test)
    for out, users in ((train, train_users), (test, test_users)):
        for row, cid in zip(out.rows, out.client_ids):
            assert names[cid] == users[row]  # a user's rows carry that user's client id in every split
    # a user's train and test rows share one client id
    train_ids = {train_users[r]: c for r, c in zip(train.rows, train.client_ids)}
    for r, c in zip(test.rows, test.client_ids):
        assert train_ids[test_users[r]] == c
    assert sorted(test_users[r] for r in test.rows) == ["u1", "u1", "u2", "u3"]
    # dropped rows and their reasons, per split
    assert fs.dropped["train"] == {"client-too-small": 1, "missing-value": 1}
    assert fs.dropped["test"] == {"client-too-small": 2, "missing-value": 1}  # u5 (unseen), u4 (too small)
    again = build_split(_natural_table()[0], NaturalIdPartitioner(column="user", min_samples=2), seed=0)
    assert again.fingerprint == fs.fingerprint


@FEW
@given(
    train_users=st.lists(st.integers(0, 30), min_size=1, max_size=40),
    test_users=st.lists(st.integers(0, 40), min_size=1, max_size=20),
    min_samples=st.integers(1, 3),
)
def test_build_split_natural_policy_properties(train_users, test_users, min_samples):
    counts = {u: train_users.count(u) for u in set(train_users)}
    kept = sorted(u for u, c in counts.items() if c >= min_samples)
    table = make_table(
        np.zeros(len(train_users)), 1, users=train_users, test_labels=np.zeros(len(test_users)), test_users=test_users
    )
    if not kept:
        with pytest.raises(HetbenchError):
            build_split(table, NaturalIdPartitioner(column="user", min_samples=min_samples), test_split="natural")
        return
    fs = build_split(table, NaturalIdPartitioner(column="user", min_samples=min_samples), test_split="natural")
    assert fs.client_names == tuple(str(u) for u in kept)  # numeric ids sorted numerically
    test = fs.outputs["test"]
    expected_rows = [i for i, u in enumerate(test_users) if u in kept]
    assert sorted(test.rows.tolist()) == expected_rows
    for r, c in zip(test.rows, test.client_ids):
        assert fs.client_names[c] == str(test_users[r])
    assert sum(fs.dropped["test"].values()) == len(test_users) - len(expected_rows)


@pytest.mark.parametrize("test_type", ["null", "int32"])
def test_build_split_natural_names_sorted_numerically_whatever_the_test_column_type(test_type):
    """Regression: encode_keys used to cast every split to string when the splits' Arrow types
    differed (an all-null or a narrower-int test column), so numeric ids sorted lexically."""
    train_users = [2, 10, 9, 2, 10, 9]
    if test_type == "null":
        test_users, features = [None, None], None
    else:
        test_users = [10, 2]
        features = datasets.Features({"label": datasets.Value("int64"), "user": datasets.Value("int32")})
    table = make_table(
        np.zeros(6), 1, users=train_users, test_labels=np.zeros(2), test_users=test_users, features=features
    )
    fs = build_split(table, NaturalIdPartitioner(column="user"), test_split="natural")
    assert fs.client_names == ("2", "9", "10")


def test_build_split_natural_partitioner_with_global_policy():
    table, train_users, _ = _natural_table()
    fs = build_split(table, NaturalIdPartitioner(column="user"), test_split="global")
    assert np.all(fs.outputs["test"].client_ids == -1)
    assert len(fs.outputs["test"]) == table.num_rows("test")


def test_build_split_errors():
    table = _two_split_table(n_train=40, n_test=10)
    iid = IIDPartitioner(num_clients=4)
    for bad in (0.0, 1.0, -0.1, 1.5, float("nan")):
        with pytest.raises(HetbenchError):
            build_split(table, iid, test_split="client", test_fraction=bad)
    with pytest.raises(HetbenchError):
        build_split(table, iid, test_split="bogus")
    with pytest.raises(HetbenchError):
        build_split(table, iid, test_split="natural")
    with pytest.raises(HetbenchError):
        build_split(table, DirichletPartitioner(num_clients=3), test_split="natural")
    with pytest.raises(HetbenchError):
        build_split(make_table(np.arange(10) % 2, 2), iid, test_split="global")  # no test split
    with pytest.raises(HetbenchError):
        build_split(table, iid, train_split="validation")
    # test_fraction is only checked (and recorded) for the client policy
    fs = build_split(table, iid, test_split="global", test_fraction=5.0)
    assert fs.recipe["test_fraction"] is None


def test_build_split_drop_reasons_reported():
    labels = np.repeat(np.arange(4), 10)
    table = make_table(labels, 4, test_labels=np.arange(8) % 4)
    fs = build_split(table, ShardsPartitioner(num_clients=3, shards_per_client=2), seed=0)
    assert fs.dropped["train"] == {"remainder": 40 % 6}
    assert np.all(fs.partition.drop_reason[fs.partition.assignment < 0] == DropReason.REMAINDER)


def test_heldout_clients_policy():
    """Whole clients become the shared test set; no test client appears in training; classes
    unseen in training are dropped from test."""
    from hetbench.partitioners import NaturalIdPartitioner

    rng = np.random.default_rng(0)
    users = [f"u{u:02d}" for u in rng.integers(0, 20, size=400)]
    labels = rng.integers(0, 4, size=400)
    t = make_table(labels, 5, users=users)
    fs = build_split(t, NaturalIdPartitioner("user"), seed=3, test_split="heldout", test_fraction=0.25)
    held = fs.partition.recipe["heldout_clients"]
    assert len(held) == 5 and fs.num_clients == 15
    assert not set(held) & set(fs.client_names)
    user_col = np.asarray(users)
    test_users = set(user_col[fs.outputs["test"].rows])
    train_users = set(user_col[fs.outputs["train"].rows])
    assert test_users <= set(held) and not test_users & train_users
    assert set(fs.outputs["test"].client_ids) == {-1}
    assert len(fs.outputs["train"]) + len(fs.outputs["test"]) == 400
    again = build_split(t, NaturalIdPartitioner("user"), seed=3, test_split="heldout", test_fraction=0.25)
    assert again.fingerprint == fs.fingerprint


# ---- empty clients ---------------------------------------------------------------------------------
def _empty_count(fs):
    return fs.num_clients - np.unique(fs.outputs["train"].client_ids).size


@FEW
@given(k=st.integers(1, 60), alpha=st.sampled_from([0.001, 0.01, 0.1, 1.0]), seed=st.integers(0, 2**31 - 1),
       policy=st.sampled_from(["global", "client"]))
def test_empty_clients_are_an_error_unless_allowed(k, alpha, seed, policy):
    """A split that leaves clients without training rows raises, naming how many, unless allow_empty;
    with allow_empty the same split is built and the recipe records it."""
    table = make_table(np.arange(120) % 6, 6, test_labels=np.arange(12) % 6)
    part = DirichletPartitioner(num_clients=k, alpha=alpha, scheme="class")
    allowed = build_split(table, part, seed=seed, test_split=policy, allow_empty=True)
    empty = _empty_count(allowed)
    assert allowed.recipe["allow_empty"] is True
    if empty:
        with pytest.raises(HetbenchError, match=rf"^{empty} of {k} clients? ha(s|ve) no training rows.*allow_empty"):
            build_split(table, part, seed=seed, test_split=policy)
    else:
        fs = build_split(table, part, seed=seed, test_split=policy)
        assert "allow_empty" not in fs.recipe  # default recipes (and fingerprints) unchanged
        assert fs.fingerprint != allowed.fingerprint  # the recipe says how it was built
        assert all(np.array_equal(fs.outputs[s].rows, allowed.outputs[s].rows) for s in fs.outputs)


def test_empty_clients_from_the_issue_and_nothing_written(tmp_path):
    """builtin:digits, class scheme, alpha 0.01, 100 clients: 49 clients were left empty silently."""
    from hetbench.pipeline import PreparedSplit, make_split
    from hetbench.sources import load_table

    digits = load_table("builtin:digits")
    part = DirichletPartitioner(num_clients=100, alpha=0.01, scheme="class")
    with pytest.raises(HetbenchError, match=r"^49 of 100 clients have no training rows"):
        make_split(digits, part, tmp_path / "out", quiet=True)
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if not p.name.endswith(".lock")]  # no half-written output
    with pytest.raises(HetbenchError, match="allow_empty"):
        PreparedSplit(digits, part).build()
    assert _empty_count(PreparedSplit(digits, part, allow_empty=True).build()) == 49
    split, report = make_split(digits, part, tmp_path / "ok", quiet=True, allow_empty=True)
    assert report["num_clients"] == 100 and _empty_count(split) == 49


def test_heldout_policy_checks_the_clients_left_in_training():
    """Held-out clients are test data, not empty training clients."""
    users = [f"u{u}" for u in np.arange(60) % 6]
    fs = build_split(make_table(np.arange(60) % 3, 3, users=users), NaturalIdPartitioner("user"), seed=0,
                     test_split="heldout", test_fraction=0.5)
    assert fs.num_clients == 3 and _empty_count(fs) == 0


def test_classes_no_output_row_has_are_left_out_in_source_order():
    from hetbench.splits import present_classes

    table = make_table(np.array([0, 0, 2, 2, 3]), num_classes=4)
    outputs = {"train": SplitRows("train", np.array([0, 2, 4]), np.zeros(3, np.int32))}
    assert present_classes(table, outputs).tolist() == [0, -1, 1, 2]
    full = make_table(np.array([0, 1, 2, 3]), num_classes=4)
    assert present_classes(full, {"train": SplitRows("train", np.arange(4), np.zeros(4, np.int32))}) is None


def test_a_split_that_loses_classes_publishes_only_the_remaining_ones():
    # classes 1 and 3 have one row each: natural-id with --min-samples 2 drops the clients holding them
    table = make_table(np.array([0, 0, 1, 2, 2, 3]), users=["a", "a", "b", "c", "c", "d"])
    split = build_split(table, NaturalIdPartitioner("user", min_samples=2), seed=0, test_split="client", test_fraction=0.5,
                        count_training_rows=False)
    assert split.class_names == ["0", "2"] or split.class_names == [table.class_names[0], table.class_names[2]]
    assert sorted(set(split.labels("train").tolist()) | set(split.labels("test").tolist())) == [0, 1]


def test_a_split_and_its_table_print_as_one_line_summaries():
    """Issue 31, item 5: the REPL shows what a split is, never its arrays."""
    from hetbench.partitioners import IIDPartitioner
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    table = load_table("builtin:digits")
    assert repr(build_split(table, IIDPartitioner(4))) == "FederatedSplit(iid, 4 clients; train: 1,437 rows, test: 360 rows; 10 classes)"
    assert "\n" not in repr(table) and "array" not in repr(table)


def test_a_table_in_memory_can_be_split_again_and_keeps_its_columns(tmp_path):
    """make_split adds derived columns (``cluster``) to the split's own copy, never to the caller's table."""
    from hetbench.partitioners import EmbeddingPartitioner
    from hetbench.pipeline import make_split
    from hetbench.sources import load_table

    table = load_table("builtin:digits")
    columns = list(table.splits["train"].column_names)
    for alpha in (100.0, 0.1):  # the second build used to fail: 'cluster' was already a column
        fs, _ = make_split(table, EmbeddingPartitioner(4, alpha, 4, embedder="pixels:4"), tmp_path / f"a{alpha:g}",
                           seed=0, quiet=True)
        assert "cluster" in fs.table.splits["train"].column_names
    assert table.splits["train"].column_names == columns
