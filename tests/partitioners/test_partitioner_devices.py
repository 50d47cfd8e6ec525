"""DevicePartitioner: clients are devices (HeteroSwitch), through the one build_split path."""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partitioners import REGISTRY, get_partitioner
from hetbench.partitioners.devices import DevicePartitioner, allocate_clients
from hetbench.splits import build_split
from hetbench.table import SampleTable


def device_table(devices: list[str], test_devices: list[str] | None = None) -> SampleTable:
    def ds(devs):
        return datasets.Dataset.from_dict({"device": devs, "label": [i % 2 for i in range(len(devs))],
                                           "sample_id": [f"r{i}" for i in range(len(devs))]})

    splits = {"train": ds(devices)}
    labels = {"train": np.arange(len(devices)) % 2}
    if test_devices is not None:
        splits["test"] = ds(test_devices)
        labels["test"] = np.arange(len(test_devices)) % 2
    return SampleTable(splits=splits, label_column="label", class_names=["a", "b"], labels=labels, id_column="sample_id")


@settings(max_examples=60, deadline=None)
@given(
    weights=st.lists(st.floats(0.01, 10), min_size=1, max_size=6),
    extra=st.integers(0, 30),
    rows_per_device=st.integers(1, 40),
    seed=st.integers(0, 2**31 - 1),
)
def test_deal_gives_every_device_its_clients_and_each_client_only_its_devices_rows(weights, extra, rows_per_device, seed):
    names = [f"dev{i}" for i in range(len(weights))]
    table = device_table([d for d in names for _ in range(rows_per_device)])
    clients = len(names) + extra
    part = DevicePartitioner(clients, dict(zip(names, weights))).partition(table, seed)
    assert part.num_clients == clients and (part.assignment >= 0).all()
    device_of_row = np.asarray(table.splits["train"]["device"])
    for c, name in enumerate(part.client_names):
        rows = part.assignment == c
        assert set(device_of_row[rows]) <= {name.rsplit("/", 1)[0]}
    # each device's rows are dealt evenly: its clients' sizes differ by at most one
    for d in names:
        sizes = [int((part.assignment == c).sum()) for c, n in enumerate(part.client_names) if n.startswith(d + "/")]
        assert sum(sizes) == rows_per_device and max(sizes) - min(sizes) <= 1
    again = DevicePartitioner(clients, dict(zip(names, weights))).partition(table, seed)
    assert np.array_equal(part.assignment, again.assignment)


def test_market_share_allocation_is_proportional_with_one_client_at_least():
    counts = allocate_clients(50, {"big": 0.9, "mid": 0.09, "tiny": 0.01}, np.random.default_rng(0))
    assert counts == {"big": 45, "mid": 5, "tiny": 1} or sum(counts.values()) == 50
    assert sum(counts.values()) == 50 and min(counts.values()) >= 1 and counts["big"] > counts["mid"] > 0


def test_a_device_split_goes_through_build_split_with_a_shared_test_set():
    table = device_table(["x", "y"] * 10, test_devices=["x", "y"] * 3)
    split = build_split(table, DevicePartitioner(4, {"x": 1.0, "y": 1.0}), seed=3)
    assert split.recipe["test_split"] == "global"
    assert (split.outputs["test"].client_ids == -1).all() and len(split.outputs["test"]) == 6
    assert split.partition.recipe["method"] == "device"


def test_a_build_recipe_is_recorded_beside_the_partitioners_own():
    from hetbench.contract import recorded_build
    from hetbench.splits import build_split

    table = device_table(["x", "y"] * 4)
    build = {"method": "iso-isp", "params": {"stages": "wb"}}
    p = DevicePartitioner(2, {"x": 1.0, "y": 1.0}, build=build)
    part = p.partition(table, 0)
    # the partition names the partitioner (the recipe's method is always a partitioner) ...
    assert part.recipe["method"] == "device" and part.recipe["params"]["clients"] == 2
    assert part.recipe["input_fingerprint"] == table.fingerprint
    # ... and the split's recipe records the builder beside it, which verify re-runs
    fs = build_split(table, p, 0, test_split="client", test_fraction=0.25)
    assert fs.recipe["build"] == build and fs.recipe["partition"]["method"] == "device"
    assert recorded_build({"recipe": fs.recipe}) == {"method": "iso-isp", "params": {"stages": "wb"}, "seed": 0}


def test_iid_plan_and_partition_agree():
    weights = {"a": 1.0, "b": 1.0, "c": 1.0}
    p = DevicePartitioner(6, weights, allocation="iid")
    plan = p.plan(30, seed=5)
    rendered = [plan.devices[d] for d in np.sort(plan.device_of_row, kind="stable")]
    part = p.partition(device_table(rendered), seed=5)
    order = np.argsort(plan.device_of_row, kind="stable")
    assert np.array_equal(part.assignment, plan.client_of_row[order])
    assert np.bincount(part.assignment).tolist() == [5] * 6
    with pytest.raises(HetbenchError, match="order of the iid device plan"):
        p.partition(device_table(sorted(rendered, reverse=True)), seed=5)


def test_bad_input_is_one_clear_error():
    table = device_table(["x", "y"])
    with pytest.raises(HetbenchError, match="fewer than the 2 devices"):
        DevicePartitioner(1).partition(table, 0)
    with pytest.raises(HetbenchError, match="no device column 'phone'"):
        DevicePartitioner(column="phone").partition(table, 0)
    with pytest.raises(HetbenchError, match="without a weight: y"):
        DevicePartitioner(2, {"x": 1.0}).partition(table, 0)
    with pytest.raises(HetbenchError, match="positive, finite sum"):
        DevicePartitioner(2, {"x": 0.0, "y": 0.0}).partition(table, 0)
    with pytest.raises(HetbenchError, match="non-negative"):
        DevicePartitioner(2, {"x": -1.0, "y": 2.0}).partition(table, 0)
    with pytest.raises(HetbenchError, match="allocation 'random'.*deal, iid"):
        DevicePartitioner(allocation="random")


def test_registered_and_rebuilt_from_its_recipe():
    assert REGISTRY["device"] is DevicePartitioner
    p = get_partitioner("device", DevicePartitioner(4, {"x": 2.0}, allocation="iid").params())
    assert p.params() == {"clients": 4, "weights": {"x": 2.0}, "column": "device", "allocation": "iid"}
