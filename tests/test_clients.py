"""ClientPartitions: every client's rows, fast, from a built split or a fresh partition."""

from __future__ import annotations

import numpy as np
import pytest


def test_from_built_split_matches_client_id_filter(tmp_path, run_cli):
    import datasets

    from hetbench.clients import ClientPartitions

    out = tmp_path / "s"
    assert run_cli("partition", "dirichlet", "--alpha", "0.2", "--clients", "6", "--out", out, "-q")[0] == 0
    train = datasets.load_dataset(str(out), split="train")
    clients = ClientPartitions.from_dataset(train)
    assert clients.num_clients == clients.num_partitions == 6
    cids = np.asarray(train["client_id"])
    for i in range(6):
        want = train.filter(lambda c, k=i: c == k, input_columns="client_id")
        got = clients.load_partition(i)
        assert len(got) == len(want) == int((cids == i).sum())
        assert got["sample_id"] == want["sample_id"]
        assert got.features == train.features
        assert got[0]["image"].size == (8, 8)  # features kept: images still decode
        assert clients.table(i).num_rows == len(want)
    assert clients.sizes().sum() == len(train)


def test_from_partition_and_shared_rows():
    import datasets

    from hetbench.clients import ClientPartitions
    from hetbench.partitioners import NaturalIdPartitioner
    from hetbench.sources import load_table

    users = ["b", "a", "c", "a", "b", "a", None]
    ds = datasets.Dataset.from_dict({"label": [0, 1, 0, 1, 1, 0, 1], "user": users, "row": list(range(7))})
    table = load_table(ds)
    part = NaturalIdPartitioner("user").partition(table, 0)
    clients = ClientPartitions.from_partition(ds, part)
    assert part.client_names == ("a", "b", "c")
    assert [clients.numpy(i, ["row"])["row"].tolist() for i in range(3)] == [[1, 3, 5], [0, 4], [2]]
    # unsorted client ids in a plain Dataset get grouped; -1 rows are the shared set
    plain = datasets.Dataset.from_dict({"client_id": [2, -1, 0, 2, 0], "v": [10, 11, 12, 13, 14]})
    grouped = ClientPartitions.from_dataset(plain)
    assert grouped.num_clients == 3 and grouped.sizes().tolist() == [2, 0, 2]
    assert grouped.numpy(2, ["v"])["v"].tolist() == [10, 13]  # keyed by client_id, not by position
    assert grouped.numpy(1, ["v"])["v"].tolist() == []
    assert grouped.shared().column("v").to_pylist() == [11]
    with pytest.raises(Exception, match="out of range"):
        grouped.table(5)


def test_load_table_accepts_in_memory_datasets():
    import datasets

    from hetbench.errors import HetbenchError
    from hetbench.sources import load_table

    dd = datasets.DatasetDict(
        {"train": datasets.Dataset.from_dict({"y": ["x", "y"] * 5}), "test": datasets.Dataset.from_dict({"y": ["y", "z"]})}
    )
    t = load_table(dd, label_col="y")
    assert t.class_names == ["x", "y", "z"]
    assert t.source["dataset"] == "in-memory"
    with pytest.raises(HetbenchError):
        load_table(42)  # type: ignore[arg-type]


def test_keyed_by_client_id_with_empty_clients(tmp_path, run_cli):
    """load_partition(k) is the client whose rows carry client_id k, empty clients included (issue 14)."""
    import datasets

    from hetbench.clients import ClientPartitions
    from hetbench.errors import HetbenchError

    out = tmp_path / "s"
    code, _, err = run_cli("partition", "iid", "--clients", "5", "--sizes", "0,700,0,737,0", "--allow-empty",
                           "--out", out, "-q")
    assert code == 0, err
    train = datasets.load_dataset(str(out), split="train")
    by_rows = ClientPartitions.from_dataset(train)  # the last client is empty: the rows cannot tell
    assert by_rows.num_clients == 4
    clients = ClientPartitions.from_folder(out)  # hetbench.json says 5
    assert clients.num_clients == clients.num_partitions == len(clients) == 5
    cids = np.asarray(train["client_id"])
    for k in range(5):
        part = clients.load_partition(k)
        assert len(part) == int((cids == k).sum()) == clients.table(k).num_rows
        assert set(part["client_id"]) <= {k}
        assert part.features == train.features  # empty clients too
    assert len(clients.load_partition(3)) > 0 and len(clients.load_partition(4)) == 0
    assert clients.sizes().tolist() == [int((cids == k).sum()) for k in range(5)]
    assert [t.num_rows for t in clients] == clients.sizes().tolist()
    for bad in (5, -1, 1.0, True):
        with pytest.raises(HetbenchError, match=r"out of range: this split has 5 clients \(client ids 0 to 4\)|must be an integer"):
            clients.load_partition(bad)
    with pytest.raises(HetbenchError, match="client ids 0 to 4"):
        clients.table(5)
    with pytest.raises(HetbenchError, match="no split 'nope'"):
        ClientPartitions.from_folder(out, "nope")
    with pytest.raises(HetbenchError, match="outside 0 to 1"):
        ClientPartitions.from_dataset(train, num_clients=2)
    # the shared test rows (client_id = -1) are the test split, not a client
    test = ClientPartitions.from_folder(out, "test")
    assert test.num_clients == 5
