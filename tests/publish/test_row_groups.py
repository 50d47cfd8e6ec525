"""Parquet row groups of whole clients: ``filters=[("client_id", "==", k)]`` reads only client k's
row groups, and what it reads is exactly client k's rows (issue 14)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=0, max_size=40), st.integers(1, 12), st.integers(0, 30))
def test_row_group_bounds_hold_whole_clients_within_bounds(sizes, min_rows, extra):
    from hetbench.publish.layout import row_group_bounds

    max_rows = min_rows + extra
    cids = np.repeat(np.arange(len(sizes)) - 1, sizes)  # client -1 first, as shared test rows are
    b = row_group_bounds(cids, min_rows, max_rows)
    n = cids.size
    assert b[0] == 0 and b[-1] == n and np.all(np.diff(b) > 0 if n else True)
    starts = set(np.cumsum([0, *sizes]).tolist())
    for g, (lo, hi) in enumerate(zip(b[:-1], b[1:])):
        assert hi - lo <= max_rows
        if n == 0:
            continue
        inner = set(np.unique(cids[lo:hi]).tolist())
        big = [c for c in inner if sizes[c + 1] > max_rows]
        if big:  # a cut client is alone in its groups, cut into equal pieces
            assert inner == set(big)
            size = sizes[big[0] + 1]
            assert hi - lo in (size // math.ceil(size / max_rows), -(-size // math.ceil(size / max_rows)))
        else:  # whole clients only
            assert lo in starts and hi in starts
            if hi - lo < min_rows and hi < n:  # short only before a client too large to join
                nxt = int(cids[hi])
                assert hi - lo + sizes[nxt + 1] > max_rows


def test_shard_bounds_fall_on_group_bounds():
    from hetbench.publish.layout import shard_bounds

    groups = np.array([0, 5, 9, 30, 31, 40])
    assert shard_bounds(groups, 10).tolist() == [0, 30, 40]
    assert shard_bounds(groups, 100).tolist() == [0, 40]
    assert shard_bounds(np.array([0, 0]), 10).tolist() == [0, 0]


@pytest.fixture(scope="module")
def many_clients(tmp_path_factory):
    """A published natural-id split of 20,000 rows over 400 users of very different sizes (from 1
    to about 2,000 rows), written with small row-group bounds (min 64, max 500 rows) so that
    merging and cutting both happen, and with small shards."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hetbench.partitioners import NaturalIdPartitioner
    from hetbench.publish import layout, publish_split
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    tmp = tmp_path_factory.mktemp("rowgroups")
    rng = np.random.default_rng(0)
    weights = rng.pareto(1.2, 400) + 0.01
    user = rng.choice(400, size=20_000, p=weights / weights.sum())
    table = pa.table({"id": np.arange(20_000), "label": rng.integers(0, 5, 20_000), "user": user})
    pq.write_table(table, tmp / "rows.parquet")
    mp = pytest.MonkeyPatch()
    mp.setattr(layout, "MIN_GROUP_ROWS", 64)
    mp.setattr(layout, "MAX_GROUP_ROWS", 500)
    try:
        fs = build_split(load_table(str(tmp / "rows.parquet"), id_col="id"), NaturalIdPartitioner("user"))
        publish_split(fs, tmp / "out", quiet=True, shard_bytes=150_000)
    finally:
        mp.undo()
    return tmp / "out"


def _client_groups(files, k):
    """(file, row group) pairs whose client_id statistics include client k."""
    import pyarrow.parquet as pq

    out = []
    for f in files:
        md = pq.ParquetFile(f).metadata
        col = md.schema.to_arrow_schema().get_field_index("client_id")
        for g in range(md.num_row_groups):
            st_ = md.row_group(g).column(col).statistics
            assert st_ is not None and st_.has_min_max
            if st_.min <= k <= st_.max:
                out.append((f, g))
    return out


def test_one_client_is_read_from_its_own_row_groups_only(many_clients):
    import pyarrow as pa
    import pyarrow.parquet as pq

    manifest = json.loads((many_clients / "hetbench.json").read_text())
    files = [many_clients / f for f in manifest["splits"]["train"]["files"]]
    assert len(files) > 1  # small shards: several files
    sizes, groups_total = {}, 0
    for f in files:
        pf = pq.ParquetFile(f)
        groups_total += pf.metadata.num_row_groups
        assert pf.metadata.row_group(0).sorting_columns[0].column_index == pf.schema_arrow.get_field_index("client_id")
        for g in range(pf.metadata.num_row_groups):
            assert pf.metadata.row_group(g).num_rows <= 500
    from hetbench.contract import read_sample_ids

    names = manifest["client_names"]
    ids = read_sample_ids(many_clients)["train"].by_name(names)
    counts = []
    for k, name in enumerate(names):
        if name not in ids:
            continue
        size = len(ids[name])
        touched = _client_groups(files, k)
        counts.append(len(touched))
        # whole clients per group: one group, or the equal pieces of a client cut at the maximum
        assert len(touched) == (1 if size <= 500 else math.ceil(size / 500)), (k, size, touched)
        got = pq.read_table(files, filters=[("client_id", "==", k)])
        assert got.column("id").to_pylist() == ids[name]
        # reading just the touched row groups gives the same rows: nothing else holds client k
        direct = pa.concat_tables([pq.ParquetFile(f).read_row_group(g) for f, g in touched])
        mask = np.asarray(direct.column("client_id")) == k
        assert np.asarray(direct.column("id"))[mask].tolist() == ids[name]
        sizes[k] = size
    assert np.median(counts) == 1  # a typical client is in one row group
    assert max(sizes.values()) > 500 and min(sizes.values()) < 64  # both cutting and merging ran
    assert groups_total < len(sizes)  # small clients were merged


def test_the_folder_still_loads_and_verifies(many_clients):
    import datasets

    from hetbench.tools.verify import verify_folder

    ds = datasets.load_dataset(str(many_clients), split="train")
    assert ds.num_rows == json.loads((many_clients / "hetbench.json").read_text())["splits"]["train"]["num_rows"]
    assert verify_folder(many_clients).exit_code == 0
