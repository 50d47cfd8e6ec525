"""A split of many classes keeps its per-class lists in ``report/classes.parquet``, not in ``report.json``
(issue 43: a million-label split's report.json was 26 MB); a split of a few keeps them in ``report.json``."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetbench.report import CLASSES_FILE, compute_report, read_classes
from hetbench.report.classes import MAX_INLINE_CLASSES, PER_CLASS_KEYS


def _labelled(path, rows: int, classes: int) -> None:
    rng = np.random.default_rng(0)
    labels = np.concatenate([np.arange(classes), rng.integers(0, classes, rows - classes)])  # every class present
    pq.write_table(pa.table({"id": np.arange(rows), "label": [f"c{v:05d}" for v in labels]}), path)


def test_the_per_class_lists_move_to_a_parquet_file_above_the_limit():
    def report(classes):
        labels = np.arange(3 * classes) % classes
        return compute_report({"train": labels % 4}, {"train": labels}, [f"c{i}" for i in range(classes)],
                              ["a", "b", "c", "d"])

    few, many = report(MAX_INLINE_CLASSES), report(MAX_INLINE_CLASSES + 1)
    assert set(PER_CLASS_KEYS) <= set(few) and "classes_file" not in few and few.classes is None
    assert not set(PER_CLASS_KEYS) & set(many) and many["classes_file"] == CLASSES_FILE
    table = many.classes.to_arrow()
    assert table.column_names == ["label", "class_name", "num_samples", "population"]
    assert table.column("num_samples").to_pylist() == [3] * (MAX_INLINE_CLASSES + 1)
    assert table.column("class_name").to_pylist()[-1] == f"c{MAX_INLINE_CLASSES}"


@pytest.mark.parametrize("classes", [12, 1500])
def test_a_split_of_many_classes_verifies_and_reads_back_its_classes(tmp_path, run_cli, classes):
    _labelled(tmp_path / "rows.parquet", 4000, classes)
    out = tmp_path / "split"
    code, _, err = run_cli("partition", "dirichlet", "--alpha", "0.5", "--clients", "8", "--dataset",
                           tmp_path / "rows.parquet", "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    listed = read_classes(out)
    manifest = json.loads((out / "hetbench.json").read_text())
    assert listed["class_names"] == manifest["class_names"] and len(listed["class_names"]) == classes
    assert sum(listed["class_counts"]) == report["num_samples"]
    assert abs(sum(listed["population_distribution"]) - 1) < 1e-3
    if classes > MAX_INLINE_CLASSES:
        assert report["classes_file"] == CLASSES_FILE and not set(PER_CLASS_KEYS) & set(report)
        assert (out / "report.json").stat().st_size < 20_000  # the lists alone were about 40 kB here
        assert CLASSES_FILE in manifest["files"]
    else:
        assert report["class_counts"] == listed["class_counts"] and not (out / CLASSES_FILE).exists()
    code, stdout, err = run_cli("verify", out)
    assert code == 0 and "OK" in stdout, err
    code, _, err = run_cli("report", out)  # recomputed in place: the same files
    assert code == 0, err
    assert json.loads((out / "report.json").read_text()) == report and read_classes(out) == listed
    if classes > MAX_INLINE_CLASSES:  # a changed count is found
        table = pq.read_table(out / CLASSES_FILE)
        counts = table.column("num_samples").to_numpy().copy()
        counts[0] += 1
        pq.write_table(table.set_column(2, "num_samples", pa.array(counts)), out / CLASSES_FILE, compression="zstd")
        code, stdout, err = run_cli("verify", out)
        assert code != 0 and "classes.parquet" in stdout + err
