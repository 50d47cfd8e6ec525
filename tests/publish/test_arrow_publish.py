"""Publishing in one Arrow pass (issue 16): sample ids in ``sample_ids.parquet`` beside the manifest
(format 3), digested in it and read by verify and the Flower partitioner; format 2 folders (ids as
JSON lists) still verify and load; the same shards whatever the source's chunking; images published
as the source's bytes."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def users_build(tmp_path_factory):
    """A split with a shared test set (client_id -1) and string sample ids."""
    from hetbench.partitioners import NaturalIdPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("ids") / "users"
    make_split("builtin:observations", NaturalIdPartitioner("observer"), out, id_col="obs_id", test_split="heldout",
               quiet=True)
    return out


@pytest.fixture
def build(users_build, tmp_path):
    out = tmp_path / "users"
    shutil.copytree(users_build, out)
    return out


def _manifest(folder):
    return json.loads((folder / "hetbench.json").read_text())


def _verify(run_cli, folder):
    code, out, err = run_cli("verify", folder)
    text = (out + err).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return code, text


def test_the_ids_are_a_parquet_file_the_manifest_digests(users_build):
    from hetbench.publish.digest import file_sha256
    from hetbench.contract import read_sample_ids

    manifest = _manifest(users_build)
    entry = manifest["sample_ids"]
    assert manifest["format"] == 4
    assert entry["file"] == "sample_ids.parquet" and set(entry) == {"file", "sha256", "num_rows"}
    assert entry["sha256"] == file_sha256(users_build / "sample_ids.parquet")
    table = pq.read_table(users_build / "sample_ids.parquet")
    assert table.column_names == ["split", "client_id", "sample_id"] and table.num_rows == entry["num_rows"]
    assert (users_build / "hetbench.json").stat().st_size < 20_000  # no per-row lists in the JSON
    ids = read_sample_ids(users_build)
    for split in manifest["splits"]:
        shards = pq.read_table([users_build / f for f in manifest["splits"][split]["files"]], columns=["client_id", "obs_id"])
        assert np.array_equal(ids[split].client_id, shards.column("client_id").to_numpy())
        assert ids[split].sample_id.tolist() == shards.column("obs_id").to_pylist()
    assert ids["test"].shared.size == manifest["splits"]["test"]["num_rows"]


def test_sample_ids_edited_with_a_rerecorded_file_sha_fail(build, run_cli):
    from hetbench.publish.digest import file_sha256

    path = build / "sample_ids.parquet"
    table = pq.read_table(path)
    ids = table.column("sample_id").to_pylist()
    ids[3] = "forged"
    pq.write_table(table.set_column(2, "sample_id", pa.array(ids, pa.string())), path)
    m = _manifest(build)
    m["sample_ids"]["sha256"] = file_sha256(path)
    (build / "hetbench.json").write_text(json.dumps(m, indent=1, sort_keys=True))
    code, text = _verify(run_cli, build)
    assert code == 1 and "sample_ids.parquet" in text and "assignment_sha256" in text


def test_a_missing_ids_file_fails_naming_it(build, run_cli):
    (build / "sample_ids.parquet").unlink()
    code, text = _verify(run_cli, build)
    assert code == 1 and "sample_ids.parquet" in text and "missing" in text


def test_a_newer_manifest_format_cannot_be_checked(build, run_cli):
    m = _manifest(build)
    m["format"] = 99
    (build / "hetbench.json").write_text(json.dumps(m))
    code, text = _verify(run_cli, build)
    assert code == 2 and "format 99" in text


def _as_format_2(folder):
    """Rewrite a format 3 folder as hetbench 0.1's format 2 wrote it: ids as JSON lists in the manifest."""
    from hetbench.contract import read_sample_ids
    from hetbench.publish.manifest import assignment_digest

    m = _manifest(folder)
    ids = read_sample_ids(folder)
    m["sample_ids"] = {s: {"clients": v.by_name(m["client_names"]), "shared": v.shared.tolist()} for s, v in ids.items()}
    m["assignment_sha256"] = assignment_digest(m["sample_ids"])
    m["format"] = 2
    (folder / "hetbench.json").write_text(json.dumps(m, indent=1, sort_keys=True))
    (folder / "sample_ids.parquet").unlink()
    return m


def test_a_format_2_folder_still_verifies_and_loads(build, run_cli):
    import datasets

    from hetbench.flower import HetbenchPartitioner
    from hetbench.contract import read_sample_ids

    m = _as_format_2(build)
    code, text = _verify(run_cli, build)
    assert code == 0 and text.startswith("OK"), text
    ids = read_sample_ids(build)
    assert ids["train"].by_name(m["client_names"]) == m["sample_ids"]["train"]["clients"]
    partitioner = HetbenchPartitioner(build)
    partitioner.dataset = datasets.load_dataset(str(build), split="train")
    k = int(ids["train"].client_id[0])
    assert partitioner.load_partition(k)["obs_id"] == ids["train"].of_client(k).tolist()


def test_a_format_2_folder_with_moved_ids_fails(build, run_cli):
    m = _as_format_2(build)
    clients = m["sample_ids"]["train"]["clients"]
    first, second = sorted(clients)[:2]
    clients[second].append(clients[first].pop())
    (build / "hetbench.json").write_text(json.dumps(m, indent=1, sort_keys=True))
    code, text = _verify(run_cli, build)
    assert code == 1 and "sample ids" in text


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=8), st.lists(st.integers(0, 10**6), min_size=0, max_size=60))
def test_a_gather_across_chunks_is_arrow_take(chunks, picks):
    """SourceRows.take on any chunking gives what pyarrow's take gives on the whole table."""
    from hetbench.publish.parquet import SourceRows

    n = sum(chunks)
    whole = pa.table({"x": np.arange(n) * 3, "s": [f"r{i}" for i in range(n)]})
    starts = np.cumsum([0, *chunks])
    chunked = pa.Table.from_batches([b for a, z in zip(starts[:-1], starts[1:]) for b in whole.slice(a, z - a).to_batches()])
    idx = np.array([p % n for p in picks], dtype=np.int64)
    got = SourceRows(chunked).take(idx)
    assert got.equals(whole.take(pa.array(idx, pa.int64())))


def test_a_memory_mapped_source_publishes_the_same_bytes(tmp_path, monkeypatch):
    """Above the in-memory size a parquet source goes through the datasets cache (memory-mapped, many
    chunks): the published folder is byte for byte the same."""
    import hetbench.sources.files as files
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    rng = np.random.default_rng(0)
    src = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": rng.permutation(5000), "label": rng.integers(0, 7, 5000), "x": rng.random(5000)}),
                   src, row_group_size=700)
    make_split(str(src), DirichletPartitioner(9, alpha=0.3), tmp_path / "memory", id_col="id", name="rows", quiet=True)
    monkeypatch.setattr(files, "IN_MEMORY_PARQUET_BYTES", 0)
    make_split(str(src), DirichletPartitioner(9, alpha=0.3), tmp_path / "mapped", id_col="id", name="rows", quiet=True)
    for path in sorted((tmp_path / "memory").rglob("*")):
        if path.is_file() and path.suffix in (".parquet", ".json"):
            rel = path.relative_to(tmp_path / "memory")
            assert path.read_bytes() == (tmp_path / "mapped" / rel).read_bytes(), rel


def test_images_with_bytes_pass_through_as_datasets_would_embed_them():
    """Image structs that hold their bytes are not re-read or re-encoded; their path becomes its base
    name, exactly as datasets' embed_table_storage writes it."""
    import datasets
    from datasets.table import embed_table_storage

    from hetbench.publish.parquet import OutputRows

    features = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")})
    image = pa.StructArray.from_arrays(
        [pa.array([b"\x89PNG-a", b"\x89PNG-b", None], pa.binary()), pa.array(["/a/b/x.png", "y.png", None], pa.string())],
        ["bytes", "path"], mask=pa.array([False, False, True]))
    table = pa.Table.from_arrays([image, pa.array([0, 1, 2])], schema=features.arrow_schema)
    rows = OutputRows.__new__(OutputRows)
    rows._media, rows._features = ["image"], features
    assert rows._embedded(table).equals(embed_table_storage(table))


def test_published_images_are_the_source_bytes(tmp_path):
    """A parquet source of encoded images is published byte for byte: no decode, no re-encode."""
    import io

    import datasets
    from PIL import Image

    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    rng = np.random.default_rng(1)
    blobs = []
    for _ in range(60):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(buf, format="PNG", compress_level=1)
        blobs.append(buf.getvalue())
    features = datasets.Features({"id": datasets.Value("int64"), "image": datasets.Image(), "label": datasets.Value("int64")})
    image = pa.StructArray.from_arrays([pa.array(blobs, pa.binary()), pa.array([f"dir/{k}.png" for k in range(60)])],
                                       ["bytes", "path"])
    src = tmp_path / "images.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(np.arange(60)), image, pa.array(rng.integers(0, 3, 60))],
                                        schema=features.arrow_schema), src)
    make_split(str(src), DirichletPartitioner(4, alpha=1.0), tmp_path / "out", id_col="id", quiet=True)
    published = pq.read_table(sorted((tmp_path / "out" / "data").glob("*.parquet")))
    rows = published.column("image").to_pylist()
    assert len(rows) == 60
    for k, row in zip(published.column("id").to_pylist(), rows):
        assert row["bytes"] == blobs[k] and row["path"] == f"{k}.png"
