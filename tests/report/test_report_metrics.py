"""report.json holds scalar summaries only; every per-client number is a row of report/clients.parquet."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench import metrics
from hetbench.errors import HetbenchError
from hetbench.report import CLIENTS_FILE, ClientStats, compute_report, read_clients, write_report
from hetbench.report.metrics import PER_CLIENT_KEYS

SUMMARY_KEYS = {
    "num_clients", "num_samples", "num_classes", "class_names", "size_stats", "emd", "emd_stats",
    "jensen_shannon", "jensen_shannon_stats", "hellinger", "hellinger_stats", "classes_per_client_stats",
    "empty_clients", "empty_client_class_cells", "population_distribution", "class_counts", "splits", "dropped", "clients_file",
}
COLUMNS = [
    "client_id", "client_name", "num_samples", "classes_present", "emd", "jensen_shannon", "hellinger",
    "label_classes", "label_counts",
]


def _example(k=6, c=4, n=300, seed=0, empty=(5,)):
    rng = np.random.default_rng(seed)
    cids = rng.integers(0, k, n)
    cids[np.isin(cids, empty)] = 0
    labels = np.minimum(rng.integers(0, c, n), cids % c + rng.integers(0, 2, n))
    test = np.concatenate([[-1, -1], rng.integers(0, k - 1, 40)])
    return (
        {"train": cids, "test": test},
        {"train": labels, "test": rng.integers(0, c, test.size)},
        [f"class{i}" for i in range(c)],
        [f"client{i}" for i in range(k)],
    )


def test_report_keys_are_scalar_summaries_and_the_clients_table_has_every_client():
    cids, labels, classes, clients = _example()
    rep = compute_report(cids, labels, classes, clients, {"train": {"remainder": 3}})
    assert set(rep) == SUMMARY_KEYS
    assert not set(PER_CLIENT_KEYS) & set(rep)
    counts = metrics.label_matrix(cids["train"], labels["train"], 6, 4)
    sizes = counts.sum(axis=1)
    assert rep["num_samples"] == 300 and rep["empty_clients"] == 1
    assert rep["emd"] == pytest.approx(metrics.emd(counts), abs=1e-6)
    assert rep["empty_client_class_cells"] == int((counts == 0).sum())
    assert rep["class_counts"] == counts.sum(axis=0).tolist()
    assert rep["size_stats"]["median"] == float(np.median(sizes))
    assert rep["size_stats"]["p90"] == pytest.approx(np.quantile(sizes, 0.9))
    # distance summaries are over the clients that hold rows
    nonempty = sizes > 0
    assert rep["emd_stats"]["min"] == pytest.approx(metrics.emd_per_client(counts)[nonempty].min(), abs=1e-6)
    assert rep["splits"]["test"] == {"num_rows": 42, "shared_rows": 2, "clients_with_rows": len(np.unique(cids["test"][2:]))}
    table = rep.clients.to_arrow()
    assert table.column_names == COLUMNS + ["rows_test", "rows_train"]
    d = table.to_pydict()
    assert d["client_name"] == clients and d["client_id"] == list(range(6))
    assert d["num_samples"] == sizes.tolist() == d["rows_train"]
    assert d["rows_test"] == np.bincount(cids["test"][2:], minlength=6).tolist()
    assert d["classes_present"] == metrics.classes_per_client(counts).tolist()
    np.testing.assert_allclose(d["emd"], metrics.emd_per_client(counts), atol=1e-6)
    np.testing.assert_allclose(d["jensen_shannon"], metrics.jensen_shannon_per_client(counts), atol=1e-6)
    np.testing.assert_allclose(d["hellinger"], metrics.hellinger_per_client(counts), atol=1e-6)
    for k in range(6):  # the label distribution, sparse: the non-zero cells of row k
        nz = np.flatnonzero(counts[k])
        assert d["label_classes"][k] == nz.tolist() and d["label_counts"][k] == counts[k, nz].tolist()


def test_write_report_writes_json_and_parquet_and_they_read_back(tmp_path):
    cids, labels, classes, clients = _example()
    rep = compute_report(cids, labels, classes, clients)
    plots = write_report(rep, tmp_path)
    assert all((tmp_path / p).is_file() for p in plots)
    assert json.loads((tmp_path / "report.json").read_text()) == json.loads(json.dumps(rep))
    table = read_clients(tmp_path)
    assert table.equals(rep.clients.to_arrow())
    back = ClientStats.from_arrow(table, len(classes))
    assert back.label_counts.to_dense().tolist() == rep.clients.label_counts.to_dense().tolist()
    np.testing.assert_allclose(back.emd, rep.clients.emd)
    assert read_clients(tmp_path, ["num_samples"]).column_names == ["num_samples"]


def test_written_report_is_byte_identical_for_the_same_input(tmp_path):
    cids, labels, classes, clients = _example(seed=3)
    for d in ("a", "b"):
        write_report(compute_report(cids, labels, classes, clients), tmp_path / d)
    for rel in ("report.json", CLIENTS_FILE, "plots/label_distribution_heatmap.png"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_read_clients_of_a_folder_without_it_is_one_clear_error(tmp_path):
    with pytest.raises(HetbenchError, match="clients.parquet is missing"):
        read_clients(tmp_path)
    (tmp_path / "report").mkdir()
    (tmp_path / CLIENTS_FILE).write_bytes(b"PAR1 not really")
    with pytest.raises(HetbenchError, match="cannot read"):
        read_clients(tmp_path)


def test_out_of_range_client_ids_or_labels_are_bad_input():
    with pytest.raises(HetbenchError, match="client_id 3"):
        compute_report({"train": np.array([0, 3])}, {"train": np.array([0, 0])}, ["a"], ["x", "y"])
    with pytest.raises(HetbenchError, match="label outside"):
        compute_report({"train": np.array([0, 1])}, {"train": np.array([0, 2])}, ["a", "b"], ["x", "y"])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 50), st.integers(0, 2**31))
def test_report_json_size_does_not_grow_with_clients(k, c, seed):
    rng = np.random.default_rng(seed)
    n = 2 * k
    rep = compute_report({"train": rng.integers(0, k, n)}, {"train": rng.integers(0, c, n)},
                         [str(i) for i in range(c)], [f"u{i}" for i in range(k)])
    text = json.dumps(rep, indent=1, sort_keys=True)
    assert len(text) < 4_000 + 60 * c  # per class: name, population share and count; nothing per client
    assert rep.clients.num_clients == k and int(rep.clients.sizes.sum()) == n


def test_a_million_clients_report_is_small_and_sparse(tmp_path):
    k = 1_000_000
    rng = np.random.default_rng(0)
    cids = rng.permutation(k)
    rep = compute_report({"train": cids}, {"train": rng.integers(0, 1000, k)}, [str(i) for i in range(1000)],
                         [f"user{i:07d}" for i in range(k)])
    assert len(json.dumps(rep, indent=1, sort_keys=True)) < 100_000
    assert rep.clients.label_counts.counts.size == k  # one cell per client, not 10^9
    assert rep["empty_client_class_cells"] == k * 999
    rep.clients.write(tmp_path / "clients.parquet")
    assert pq.read_metadata(tmp_path / "clients.parquet").num_rows == k
