"""Every source format reads into the same table, and the output loads with datasets."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest


def _users_dataset(n: int = 120, seed: int = 0):
    import datasets

    rng = np.random.default_rng(seed)
    return datasets.Dataset.from_dict(
        {
            "x": rng.normal(size=n).astype("float32"),
            "species": rng.choice(["heron", "owl", "wren"], size=n).tolist(),
            "user": rng.choice([f"u{i:02d}" for i in range(9)], size=n).tolist(),
            "obs_id": [f"o{i:04d}" for i in range(n)],
        }
    )


def test_builtin_digits_is_the_real_sklearn_set(digits_table):
    from sklearn.datasets import load_digits

    d = load_digits()
    assert digits_table.num_rows("train") == 1797
    assert np.array_equal(digits_table.labels["train"], d.target)
    assert digits_table.class_names == [str(i) for i in range(10)]


def test_builtin_mnist5k():
    from hetbench.sources import load_table

    t = load_table("builtin:mnist5k")
    assert t.num_rows("train") == 5000
    assert np.bincount(t.labels["train"]).tolist() == [500] * 10


def test_save_to_disk_with_test_split_defaults_to_global(tmp_path, run_cli):
    import datasets

    dd = datasets.DatasetDict({"train": _users_dataset(120, 0), "test": _users_dataset(40, 1)})
    dd.save_to_disk(tmp_path / "src")
    out = tmp_path / "out"
    code, _, err = run_cli("partition", "dirichlet", "--dataset", tmp_path / "src", "--label-col", "species",
                           "--id-col", "obs_id", "--clients", "4", "--alpha", "1", "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    assert len(ds["train"]) == 120 and len(ds["test"]) == 40
    assert set(ds["test"]["client_id"]) == {-1}
    assert ds["train"].features["label"].names == ["heron", "owl", "wren"]
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["recipe"]["test_split"] == "global"
    from hetbench.contract import read_sample_ids

    ids = read_sample_ids(out)["train"].sample_id.tolist()
    assert sorted(ids) == sorted(ds["train"]["obs_id"])
    assert run_cli("verify", out)[0] == 0


def test_natural_id_aligns_train_and_test(tmp_path, run_cli):
    import datasets

    dd = datasets.DatasetDict({"train": _users_dataset(200, 0), "test": _users_dataset(60, 1)})
    dd.save_to_disk(tmp_path / "src")
    out = tmp_path / "out"
    code, _, err = run_cli("partition", "natural-id", "--dataset", tmp_path / "src", "--label-col", "species",
                           "--column", "user", "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    manifest = json.loads((out / "hetbench.json").read_text())
    names = manifest["client_names"]
    assert names == sorted(names)
    for split in ("train", "test"):
        users = np.asarray(ds[split]["user"])
        cids = np.asarray(ds[split]["client_id"])
        assert all(names[c] == u for c, u in zip(cids, users))


def test_parquet_folder_and_csv_sources(tmp_path):
    from hetbench.sources import load_table

    ds = _users_dataset(50)
    (tmp_path / "pq").mkdir()
    ds.select(range(30)).to_parquet(tmp_path / "pq" / "train-00000-of-00001.parquet")
    ds.select(range(30, 50)).to_parquet(tmp_path / "pq" / "test-00000-of-00001.parquet")
    t = load_table(str(tmp_path / "pq"), label_col="species")
    assert t.split_names == ["train", "test"]
    assert t.num_rows("train") == 30 and t.num_rows("test") == 20
    ds.to_csv(tmp_path / "obs.csv")
    c = load_table(str(tmp_path / "obs.csv"), label_col="species", id_col="obs_id")
    assert c.class_names == ["heron", "owl", "wren"]
    assert list(c.ids("train")[:2]) == ["o0000", "o0001"]
    single = load_table(str(tmp_path / "pq" / "train-00000-of-00001.parquet"), label_col="species")
    assert single.num_rows("train") == 30


def test_integer_labels_keep_their_values_as_names(tmp_path):
    import datasets

    from hetbench.sources import load_table

    datasets.Dataset.from_dict({"label": [3, 7, 3, 11] * 5}).save_to_disk(tmp_path / "d")
    t = load_table(str(tmp_path / "d"))
    assert t.class_names == ["3", "7", "11"]
    assert t.labels["train"][:4].tolist() == [0, 1, 0, 2]


def test_images_from_file_paths_are_embedded_as_bytes(tmp_path, run_cli):
    """An Image column built from paths must not publish paths only (datasets' to_parquet trap)."""
    import datasets
    import pyarrow.parquet as pq
    from PIL import Image

    paths = []
    for i in range(24):
        p = tmp_path / f"img{i}.png"
        Image.fromarray(np.full((6, 6), i * 10, np.uint8)).save(p)
        paths.append(str(p))
    ds = datasets.Dataset.from_dict({"image": paths, "label": [i % 3 for i in range(24)]})
    ds = ds.cast_column("image", datasets.Image())
    ds.save_to_disk(tmp_path / "src")
    out = tmp_path / "out"
    assert run_cli("partition", "iid", "--clients", "3", "--dataset", tmp_path / "src", "--out", out, "-q")[0] == 0
    table = pq.read_table(next((out / "data").glob("train-*.parquet")))
    images = table.column("image").to_pylist()
    assert all(img["bytes"] for img in images)
    for p in paths:  # the published data must not need the source files
        (tmp_path / p).unlink()
    loaded = datasets.load_dataset(str(out), split="train")
    assert loaded[0]["image"].size == (6, 6)


def test_repartition_a_hetbench_build(tmp_path, run_cli):
    import datasets

    first = tmp_path / "first"
    assert run_cli("partition", "iid", "--clients", "4", "--out", first, "-q")[0] == 0
    second = tmp_path / "second"
    code, _, err = run_cli("partition", "shards", "--dataset", first, "--id-col", "sample_id", "--clients", "5",
                           "--test-split", "client", "--out", second, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(second))
    assert "source_client_id" not in ds["train"].column_names
    assert set(ds) == {"train", "test", "global_test"} or set(ds) == {"train", "test"}
    assert run_cli("verify", second)[0] == 0


@pytest.mark.parametrize("bad", ["", "x.txt"])
def test_unreadable_inputs(tmp_path, bad):
    from hetbench.errors import HetbenchError
    from hetbench.sources import load_table

    path = tmp_path / (bad or "empty_dir")
    if bad:
        path.write_text("hello")
    else:
        path.mkdir()
    with pytest.raises(HetbenchError):
        load_table(str(path))


def test_per_split_source_with_distinct_files_and_ids(tmp_path):
    from hetbench.sources import load_table

    (tmp_path / "tr.csv").write_text("x,label\n1,a\n2,b\n3,a\n")
    (tmp_path / "te.csv").write_text("x,label\n4,b\n5,a\n")
    t = load_table(f"train={tmp_path / 'tr.csv'},test={tmp_path / 'te.csv'}", id_col="x")
    assert t.split_names == ["train", "test"]


@pytest.mark.parametrize("spec, needle", [
    ("train={tr},train={te}", "split 'train' is given twice"),
    ("train={tr},test={tr}", "are the same file"),
    ("train={tr},test={copy}", "are the same file"),
    ("train={tr},test={overlap}", "in both splits 'train' and 'test', e.g. '3'"),
])
def test_per_split_source_refuses_a_split_twice_or_a_file_twice(tmp_path, spec, needle):
    from hetbench.errors import HetbenchError
    from hetbench.sources import load_table

    files = {"tr": tmp_path / "tr.csv", "te": tmp_path / "te.csv", "copy": tmp_path / "copy.csv", "overlap": tmp_path / "ov.csv"}
    files["tr"].write_text("x,label\n1,a\n2,b\n3,a\n")
    files["te"].write_text("x,label\n4,b\n5,a\n")
    files["copy"].write_bytes(files["tr"].read_bytes())
    files["overlap"].write_text("x,label\n3,b\n9,a\n")
    with pytest.raises(HetbenchError, match=re.escape(needle)):
        load_table(spec.format(**files), id_col="x")
