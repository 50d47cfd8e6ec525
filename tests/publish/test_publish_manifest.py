"""The manifest's content fingerprints: shard sha256s and column digests that do not depend on how
rows are chunked, and that a published folder records for every column."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def _table(values):
    import pyarrow as pa

    n = len(values)
    return pa.table({
        "label": pa.array(values, pa.int64()),
        "text": pa.array([None if v % 3 == 0 else "x" * (v % 5) for v in values], pa.string()),
        "image": pa.array([{"bytes": bytes([v % 256]) * (v % 7), "path": None} if v % 4 else None for v in values],
                          pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        "seq": pa.array([[v, v + 1][: v % 3] for v in values], pa.list_(pa.int32())),
        "flag": pa.array([bool(v % 2) for v in values]),
        "x": pa.array(np.arange(n, dtype=np.float32)),
    })


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=0, max_size=60), st.lists(st.integers(1, 20), min_size=1, max_size=8))
def test_the_digest_does_not_depend_on_chunking(values, cuts):
    from hetbench.publish import digest as dg

    table = _table(values)
    whole = dg.SplitDigest(table.schema)
    whole.update(table)
    pieces = dg.SplitDigest(table.schema)
    start, i = 0, 0
    while start < len(values):
        step = cuts[i % len(cuts)]
        pieces.update(table.slice(start, step))
        start, i = start + step, i + 1
    assert whole.columns() == pieces.columns() and whole.num_rows == pieces.num_rows == len(values)


def test_the_digest_survives_a_parquet_round_trip_and_sees_one_changed_value(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hetbench.publish import digest as dg

    monkeypatch.setattr(dg, "BLOCK_ROWS", 16)
    table = _table(list(range(100)))
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=7)
    written, read = dg.SplitDigest(table.schema, keep_blocks=True), dg.SplitDigest(table.schema)
    written.update(table)
    for batch in pq.ParquetFile(tmp_path / "t.parquet").iter_batches(batch_size=9):
        read.update(batch)
    assert written.columns() == read.columns()
    labels = table.column("label").to_pylist()
    labels[40] += 1
    changed = dg.SplitDigest(table.schema, keep_blocks=True)
    changed.update(table.set_column(0, "label", pa.array(labels, pa.int64())))
    diff = {c for c in written.columns() if written.columns()[c] != changed.columns()[c]}
    assert diff == {"label"}
    assert dg.first_differing_block(written.blocks("label"), changed.blocks("label")) == 40 // 16


def test_a_published_folder_records_every_column_and_every_shard(tmp_path):
    from hetbench.partitioners import IIDPartitioner
    from hetbench.pipeline import make_split
    from hetbench.publish.digest import DIGEST_VERSION, file_sha256, split_digest

    out = tmp_path / "d"
    make_split("builtin:digits", IIDPartitioner(5), out, quiet=True)
    m = json.loads((out / "hetbench.json").read_text())
    assert m["content_digest"]["version"] == DIGEST_VERSION
    for split, info in m["splits"].items():
        assert sorted(p.relative_to(out).as_posix() for p in (out / "data").glob(f"{split}-*")) == info["files"]
        assert {f: file_sha256(out / f) for f in info["files"]} == info["file_sha256"]
        assert set(info["column_sha256"]) == {"image", "label", "sample_id", "client_id"}
        assert info["content_sha256"] == split_digest(info["column_sha256"])


def test_many_shards_give_the_same_content_digest_as_one(tmp_path):
    from hetbench.partitioners import IIDPartitioner
    from hetbench.publish import publish_split
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    fs = build_split(load_table("builtin:digits"), IIDPartitioner(5))
    publish_split(fs, tmp_path / "one", quiet=True)
    publish_split(fs, tmp_path / "many", quiet=True, shard_bytes=20_000)
    one, many = (json.loads((tmp_path / n / "hetbench.json").read_text())["splits"]["train"] for n in ("one", "many"))
    assert len(many["files"]) > 1 and len(one["files"]) == 1
    assert one["column_sha256"] == many["column_sha256"]
    from hetbench.tools.verify import verify_folder

    assert verify_folder(tmp_path / "many").exit_code == 0


@pytest.mark.parametrize("rel", ["../x.parquet", "/etc/passwd", "data/../../x", "", "C:\\x.parquet"])
def test_safe_path_refuses_what_leaves_the_folder(tmp_path, rel):
    from hetbench.errors import HetbenchError
    from hetbench.contract import safe_path

    with pytest.raises(HetbenchError, match="outside the build folder"):
        safe_path(tmp_path, rel)
