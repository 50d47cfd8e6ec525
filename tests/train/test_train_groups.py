"""Group protocols (hetbench.train.groups): restricting a split to training and test groups, and the
runs of leave-one-group-out."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.train.data import FederatedData, channel_stats
from hetbench.train.groups import GroupRun, parse_groups, plan_group_runs, restrict_groups, row_stats

GROUPS = ["a", "b", "c", "d"]


def make_data(row_groups: list[list[int]], test_groups: list[int], test_clients: list[int] | None = None,
              group_by: str = "device") -> FederatedData:
    """Client k holds one training row per entry of ``row_groups[k]`` (its group index); the images
    encode the row's group so restrictions can be read back from the pixels."""
    groups = np.concatenate([np.asarray(g, dtype=np.int64) for g in row_groups])
    n = groups.size
    x = np.stack([np.full((1, 2, 2), 10 * g + (i % 7), dtype=np.uint8) for i, g in enumerate(groups)])
    bounds = np.cumsum([0, *[len(g) for g in row_groups]])
    rows = [np.arange(bounds[k], bounds[k + 1]) for k in range(len(row_groups))]
    client_group = np.array([g[0] if len(set(g)) == 1 else -1 for g in row_groups], dtype=np.int64)
    tg = np.asarray(test_groups, dtype=np.int64)
    xt = np.stack([np.full((1, 2, 2), 10 * g, dtype=np.uint8) for g in tg])
    tc = np.full(tg.size, -1) if test_clients is None else np.asarray(test_clients)
    return FederatedData(
        name="groups", path="groups", fingerprint="0" * 64,
        x_train=x, y_train=torch.from_numpy(groups % 2), x_test=xt, y_test=torch.from_numpy(tg % 2),
        client_ids=np.arange(100, 100 + len(row_groups)), client_rows=rows, label_names=["0", "1"],
        group_by=group_by, group_names=list(GROUPS[: int(max(groups.max(), tg.max())) + 1]), test_group=tg,
        test_client=tc, client_group=client_group, mean=np.array([0.1]), std=np.array([0.2]),
    )


@st.composite
def split_and_groups(draw):
    ng = draw(st.integers(2, 4))
    group = st.integers(0, ng - 1)
    row_groups = draw(st.lists(st.lists(group, min_size=1, max_size=5), min_size=1, max_size=8))
    test_groups = list(range(ng)) + draw(st.lists(group, max_size=10))  # every group has test rows
    order = draw(st.permutations(test_groups))
    clients = draw(st.lists(st.integers(-1, len(row_groups) - 1), min_size=len(order), max_size=len(order)))
    data = make_data(row_groups, list(order), clients)
    names = data.group_names
    train = draw(st.none() | st.lists(st.sampled_from(names), min_size=1, unique=True))
    test = draw(st.none() | st.lists(st.sampled_from(names), min_size=1, unique=True))
    return data, train, test


@settings(max_examples=150, deadline=None)
@given(split_and_groups())
def test_restriction_keeps_exactly_the_clients_of_the_train_groups_and_the_rows_of_the_test_groups(case):
    data, train, test = case
    row_group = data.x_train[:, 0, 0, 0] // 10  # what make_data wrote into the pixels
    eligible = [k for k, r in enumerate(data.client_rows)
                if train is None or all(data.group_names[g] in train and len(set(row_group[r])) == 1
                                        for g in row_group[r])]
    try:
        out = restrict_groups(data, train, test)
    except HetbenchError as exc:
        assert not eligible and "leaves no training client" in str(exc)
        return
    # training clients: exactly those whose rows all lie in one training group; their rows untouched
    assert out.client_ids.tolist() == [int(data.client_ids[k]) for k in eligible]
    assert [r.tolist() for r in out.client_rows] == [data.client_rows[k].tolist() for k in eligible]
    for r in out.client_rows:
        assert train is None or {data.group_names[g] for g in row_group[r]} <= set(train)
    assert out.x_train is data.x_train and out.y_train is data.y_train  # shared, not copied
    # tested groups: in the split's order; every test row of them kept, in order, with its group and client
    tested = [g for g in data.group_names if test is None or g in test]
    assert out.group_names == tested
    keep = [i for i, g in enumerate(data.test_group) if data.group_names[g] in tested]
    assert out.x_test.tolist() == data.x_test[keep].tolist()
    assert out.y_test.tolist() == data.y_test.numpy()[keep].tolist()
    assert [out.group_names[g] for g in out.test_group] == [data.group_names[data.test_group[i]] for i in keep]
    old_ids = [int(data.client_ids[data.test_client[i]]) if data.test_client[i] >= 0 else None for i in keep]
    new_ids = [int(out.client_ids[c]) if c >= 0 else None for c in out.test_client]
    assert new_ids == [c if c in out.client_ids.tolist() else None for c in old_ids]
    for k, g in enumerate(out.client_group):  # a client's group, renumbered (or -1 where it is not tested)
        old = data.client_group[eligible[k]]
        assert (out.group_names[g] if g >= 0 else None) == (data.group_names[old] if old >= 0 and
                                                            data.group_names[old] in tested else None)
    if train is None:
        assert out.mean is data.mean and out.std is data.std
    else:
        mean, std = channel_stats(data.x_train[np.concatenate(out.client_rows)])
        assert np.allclose(out.mean, mean) and np.allclose(out.std, std)


def test_no_restriction_is_the_split_itself():
    data = make_data([[0, 0], [1]], [0, 1])
    assert restrict_groups(data) is data


def test_normalisation_comes_from_the_training_clients_only():
    data = make_data([[0, 0, 0], [1, 1]], [0, 1])
    out = restrict_groups(data, ["a"])
    assert out.mean[0] == pytest.approx(float(data.x_train[:3].mean()) / 255)
    assert row_stats(data.x_train, np.arange(5))[0] == pytest.approx(channel_stats(data.x_train)[0])
    as_tensor = row_stats(torch.from_numpy(data.x_train), np.array([3, 0, 1]))  # a tensor works too, rows in any order
    assert np.allclose(as_tensor, row_stats(data.x_train, np.array([0, 1, 3])))


def test_a_client_spanning_two_groups_never_trains_in_a_restriction():
    data = make_data([[0, 1], [0], [1]], [0, 1])
    assert restrict_groups(data, ["a", "b"]).client_ids.tolist() == [101, 102]


BAD = {
    "unknown group": (dict(train_groups=["x"]), "'x' is not a group of column 'device' of this split (groups: a, b, c)"),
    "unknown test group": (dict(test_groups=["a", "zz"]), "test_groups: 'zz' is not a group"),
    "no client left": (dict(train_groups=["c"]), "train_groups c leaves no training client: none of the 3 clients"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_restrictions_are_one_clear_line(case):
    data = make_data([[0, 1], [0], [1]], [0, 1, 2])
    kwargs, needle = BAD[case]
    with pytest.raises(HetbenchError, match=None) as info:
        restrict_groups(data, **kwargs)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_a_split_without_groups_or_with_one_group_per_client_missing():
    no_groups = make_data([[0], [0]], [0], group_by="all")
    with pytest.raises(HetbenchError, match="needs groups, but the split has none"):
        restrict_groups(no_groups, ["a"])
    with pytest.raises(HetbenchError, match="needs groups"):
        plan_group_runs(no_groups, protocol="leave-one-group-out")
    mixed = make_data([[0, 1], [1, 0]], [0, 1])  # no client has one group (as when train lacks the column)
    with pytest.raises(HetbenchError, match="no client's training rows all share one group of column 'device'"):
        restrict_groups(mixed, ["a"])


def test_group_names_of_the_whole_list_are_checked():
    with pytest.raises(HetbenchError, match="test_groups is empty"):
        parse_groups(" , ", "`test_groups`")
    assert parse_groups(("x", " y"), "--train-groups") == ("x", "y")
    assert parse_groups(None, "--train-groups") is None


def test_leave_one_group_out_trains_on_every_other_group_and_tests_all():
    data = make_data([[0], [1], [2], [2]], [0, 1, 2])
    runs = plan_group_runs(data, protocol="leave-one-group-out")
    assert [(r.held_out, r.train_groups, r.test_groups, r.tag) for r in runs] == [
        ("a", ("b", "c"), None, "logo_a"), ("b", ("a", "c"), None, "logo_b"), ("c", ("a", "b"), None, "logo_c")]
    held_c = restrict_groups(data, runs[2].train_groups, runs[2].test_groups)
    assert held_c.client_ids.tolist() == [100, 101] and held_c.group_names == ["a", "b", "c"]


def test_cross_group_trains_each_group_alone_and_tests_all():
    data = make_data([[0], [1], [2], [2]], [0, 1, 2])
    runs = plan_group_runs(data, protocol="cross-group")
    assert [(r.held_out, r.train_groups, r.test_groups, r.tag) for r in runs] == [
        (None, ("a",), None, "train_a"), (None, ("b",), None, "train_b"), (None, ("c",), None, "train_c")]
    only_c = restrict_groups(data, runs[2].train_groups, runs[2].test_groups)
    assert only_c.client_ids.tolist() == [102, 103] and only_c.group_names == ["a", "b", "c"]
    for bad, message in ((dict(train_groups=["a"]), "protocol cross-group chooses the training groups itself"),
                         (dict(test_groups=["a"]), "protocol cross-group tests every group, so test_groups cannot")):
        with pytest.raises(HetbenchError, match=message):
            plan_group_runs(data, protocol="cross-group", **bad)
    spanning = make_data([[0], [1, 0]], [0, 1])  # group b's only client also holds rows of a: b cannot train alone
    with pytest.raises(HetbenchError, match="protocol cross-group, training on 'b' alone, leaves no training client"):
        plan_group_runs(spanning, protocol="cross-group")


def test_protocol_errors_before_any_training():
    data = make_data([[0], [1], [1]], [0, 1])
    with pytest.raises(HetbenchError, match="protocol 'loo' is not one of leave-one-group-out"):
        plan_group_runs(data, protocol="loo")
    with pytest.raises(HetbenchError, match="drop train_groups"):
        plan_group_runs(data, ["a"], protocol="leave-one-group-out")
    with pytest.raises(HetbenchError, match="cannot leave out 'b'"):
        plan_group_runs(data, test_groups=["a"], protocol="leave-one-group-out")
    with pytest.raises(HetbenchError, match="at least 2 groups"):
        plan_group_runs(make_data([[0]], [0]), protocol="leave-one-group-out")
    one_sided = make_data([[0], [1, 0]], [0, 1])  # holding out 'a' leaves only a client spanning both
    with pytest.raises(HetbenchError, match="holding out 'a', leaves no training client"):
        plan_group_runs(one_sided, protocol="leave-one-group-out")


def test_tags_name_different_group_sets_differently():
    tags = {GroupRun(t).tag for t in [("a",), ("b",), ("a", "b"), ("a+b",), ("tone=x+y",), ("a b",), ("a_b",)]}
    assert len(tags) == 7
    assert GroupRun(("a+b",)).tag.startswith("train_a+b_")  # hashed: it would read as two groups
    assert GroupRun((), None, "tone=srgb-gamma+equalize").tag == "logo_tone=srgb-gamma+equalize"
    many = GroupRun(tuple(f"user{i}" for i in range(40))).tag
    assert many.startswith("train_40groups_") and len(many) < 40
