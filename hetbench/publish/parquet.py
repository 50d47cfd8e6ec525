"""Parquet shards of a split: output features and streaming rows into shards (the row-group layout:
:mod:`hetbench.publish.layout`; reading columns back: :mod:`hetbench.contract.columns`).

One Arrow pass: :class:`OutputRows` gathers runs of row groups from the source split's Arrow table
in client order (:class:`SourceRows`: one ``take`` per chunk touched) and :func:`write_split` writes
each group with ``ParquetWriter.write_table``; no row passes through Python and no ``datasets``
formatter runs. Images that hold their bytes pass through as they are, images given as file paths
are embedded (``embed_table_storage``); none is ever decoded. The column digests are computed on a
second thread, the shard's sha256 as its bytes are written. Shard names carry the first 12 hex
digits of the split fingerprint (see :mod:`hetbench.publish`).

Output rows are sorted by ``client_id`` (:func:`hetbench.splits.build_split`), and every parquet row
group holds whole clients (:func:`row_group_bounds`): consecutive small clients share a group until
it reaches a minimum size, a client larger than the maximum gets groups of its own, and no group
crosses a shard. Each group's ``client_id`` min/max statistics then bound the clients it holds, so
``pyarrow.parquet.read_table(..., filters=[("client_id", "==", k)])`` (and a reader of a hub
dataset's shards over HTTP) reads only the one or few row groups of client ``k``. The files declare
``client_id`` as their sorting column.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from hetbench.publish.digest import HashingSink, SplitDigest
from hetbench.publish.layout import (  # noqa: F401 - re-exported: the layout is part of this module's contract
    MAX_GROUP_BYTES, MAX_GROUP_ROWS, MIN_GROUP_BYTES, MIN_GROUP_ROWS, group_row_limits, row_group_bounds, shard_bounds,
)
from hetbench.splits import FederatedSplit

TARGET_SHARD_BYTES = 256 * 1024 * 1024
BATCH_ROWS = 10_000
#: rows are gathered from the source about this many bytes at a time (:meth:`OutputRows.batches`)
TAKE_BYTES = 32 * 1024 * 1024


def output_features(fs: FederatedSplit):
    """Source features with ``label`` as a ClassLabel and ``client_id`` as int32.

    The source's label column becomes ``label``; a different source column already called ``label``
    or ``client_id`` is kept under ``source_label`` / ``source_client_id``.
    """
    import datasets

    src = fs.table.splits[fs.outputs["train"].source_split].features
    label_col = fs.table.label_column
    feats: dict[str, Any] = {}
    for name, feat in src.items():
        if name == label_col:
            feats["label"] = datasets.ClassLabel(names=list(fs.class_names))
        elif name == "label":
            feats["source_label"] = feat
        elif name == "client_id":
            feats["source_client_id"] = feat
        else:
            feats[name] = feat
    feats["client_id"] = datasets.Value("int32")
    return datasets.Features(feats)


def _renamed(name: str, label_col: str) -> str:
    if name == label_col:
        return "label"
    return {"label": "source_label", "client_id": "source_client_id"}.get(name, name)


@dataclass
class WrittenSplit:
    """What :func:`write_split` wrote: the shard paths (relative to the folder), the sha256 of each
    shard file and the content digest of every column (:mod:`hetbench.publish.digest`)."""

    files: list[str]
    file_sha256: dict[str, str]
    columns: dict[str, str]


def _row_bytes(fs: FederatedSplit, split: str) -> float:
    """Estimated bytes of an output row (the source split's Arrow bytes per row)."""
    ds = fs.table.splits[fs.outputs[split].source_split]
    return max(ds.data.nbytes / max(len(ds), 1), 1.0)


def _shard_rows(fs: FederatedSplit, split: str, shard_bytes: int) -> int:
    n = len(fs.outputs[split])
    rows_per_shard = max(1, int(shard_bytes // _row_bytes(fs, split)))
    num_shards = max(1, math.ceil(n / rows_per_shard))
    return max(1, math.ceil(n / num_shards))


class OutputRows:
    """The rows of one output split as the shards hold them, cut out of the source with Arrow.

    Rows ``lo:hi`` are gathered from the source split's Arrow table (through its indices mapping,
    if it has one) in client order by :meth:`SourceRows.take`; ``label`` and ``client_id`` are added as
    arrays and the columns renamed and cast to the output schema. No row passes through Python and
    no ``datasets`` formatter runs. Images that already hold their bytes are passed through as they
    are (only their ``path`` becomes its base name, as ``datasets`` embedding does); images given as
    file paths, and other media, are embedded by ``datasets.table.embed_table_storage``.

    Parameters
    ----------
    fs : FederatedSplit
        The split.
    split : str
        An output split.
    features : datasets.Features
        The output features (:func:`output_features`).

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.publish.parquet import OutputRows, output_features
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> fs = build_split(load_table("builtin:digits"), IIDPartitioner(4))
    >>> rows = OutputRows(fs, "train", output_features(fs))
    >>> rows.table(0, 3).column("client_id").to_pylist()
    [0, 0, 0]
    """

    def __init__(self, fs: FederatedSplit, split: str, features) -> None:
        out = fs.outputs[split]
        ds = fs.table.splits[out.source_split]
        self.num_rows = len(out)
        self.row_bytes = _row_bytes(fs, split)
        self._rows = out.rows
        self._client_ids = out.client_ids
        self._source = SourceRows(ds.data.table)  # the Arrow table under the Dataset (memory-mapped or in memory)
        indices = getattr(ds, "_indices", None)  # a select/shuffle leaves an indices mapping
        self._mapping = None if indices is None else indices.column(0).to_numpy()
        self._labels = fs.source_labels(out.source_split)
        self._schema = features.arrow_schema
        self._features = features
        label_col = fs.table.label_column
        self._names = {c: _renamed(c, label_col) for c in self._source.column_names}
        self._media = [k for k, f in features.items() if type(f).__name__ in ("Image", "Audio", "Video", "Pdf")]

    def table(self, lo: int, hi: int):
        """Output rows ``lo:hi`` as one pyarrow Table with the output schema."""
        import pyarrow as pa

        idx = self._rows[lo:hi]
        batch = self._source.take(idx if self._mapping is None else self._mapping[idx])
        cols = {self._names[c]: batch.column(c) for c in batch.column_names}
        cols["label"] = pa.array(self._labels[idx], type=pa.int64())
        cols["client_id"] = pa.array(self._client_ids[lo:hi], type=pa.int32())
        n = hi - lo
        # a split may lack a column the others have (a published test file without users)
        arrays = [cols[k] if k in cols else pa.nulls(n, type=self._schema.field(k).type) for k in self._features]
        if all(a.type == f.type for a, f in zip(arrays, self._schema)):
            out = pa.Table.from_arrays(arrays, schema=self._schema)
        else:
            out = pa.table(dict(zip(self._features, arrays))).cast(self._schema)
        return self._embedded(out) if self._media else out

    def _embedded(self, table):
        """Media as bytes: images that hold their bytes pass through, anything else is embedded."""
        import pyarrow as pa
        import pyarrow.compute as pc
        from datasets.table import embed_table_storage

        for name in self._media:
            col = table.column(name).combine_chunks()
            if type(self._features[name]).__name__ != "Image" or _missing_bytes(col):
                return embed_table_storage(table)
            path = col.field("path")
            base = pc.replace_substring_regex(path, pattern="^.*/", replacement="")  # os.path.basename
            fixed = pa.StructArray.from_arrays([col.field("bytes"), base], ["bytes", "path"], mask=col.is_null())
            table = table.set_column(table.schema.get_field_index(name), name, fixed.cast(col.type))
        return table

    def batches(self, cuts, take_bytes: int = TAKE_BYTES) -> Iterator[Any]:
        """One table per ``cuts[g]:cuts[g + 1]`` (row offsets ``[lo, ..., hi]``). Consecutive pieces
        are gathered together, up to about ``take_bytes`` at a time, and sliced without a copy."""
        cuts = np.asarray(cuts, dtype=np.int64)
        per_take = max(1, int(take_bytes // self.row_bytes))
        g = 0
        while g < len(cuts) - 1:
            # the pieces g..e-1 gathered at once: at least one, and no more than per_take rows if more
            e = g + 1
            while e < len(cuts) - 1 and cuts[e + 1] - cuts[g] <= per_take:
                e += 1
            lo = int(cuts[g])
            gathered = self.table(lo, int(cuts[e]))
            for a, b in zip(cuts[g:e], cuts[g + 1 : e + 1]):
                yield gathered.slice(int(a) - lo, int(b - a))
            g = e


class SourceRows:
    """Random access to the rows of an Arrow table, one gather per chunk touched.

    ``pyarrow.Table.take`` on a table of several chunks concatenates every chunk first, so its cost
    grows with the table, not with the rows taken: on a memory-mapped ``datasets`` cache it would
    copy the whole source for every batch. :meth:`take` instead gathers from each chunk the rows it
    holds (``RecordBatch.take``) and restores the requested order with one take on the result.

    Parameters
    ----------
    table : pyarrow.Table
        The source rows.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> t = pa.Table.from_batches(pa.table({"x": list(range(10))}).to_batches(max_chunksize=3))
    >>> SourceRows(t).take(np.array([9, 0, 4, 3])).column("x").to_pylist()
    [9, 0, 4, 3]
    """

    def __init__(self, table) -> None:
        self._schema = table.schema
        self._batches = table.to_batches()
        self._starts = np.cumsum([0] + [b.num_rows for b in self._batches], dtype=np.int64)
        self.column_names = table.column_names

    def take(self, idx: np.ndarray):
        """Rows ``idx`` (source row numbers), in that order, as a table of one chunk."""
        import pyarrow as pa

        idx = np.asarray(idx, dtype=np.int64)
        if len(self._batches) <= 1 or idx.size == 0:
            batch = self._batches[0] if self._batches else pa.RecordBatch.from_pylist([], schema=self._schema)
            return pa.Table.from_batches([batch.take(pa.array(idx))], schema=self._schema)
        chunk = np.searchsorted(self._starts, idx, side="right") - 1
        ordered = bool(np.all(chunk[1:] >= chunk[:-1]))
        order = None if ordered else np.argsort(chunk, kind="stable")
        sorted_idx, sorted_chunk = (idx, chunk) if ordered else (idx[order], chunk[order])
        runs = np.flatnonzero(np.r_[True, sorted_chunk[1:] != sorted_chunk[:-1], True])
        pieces = [
            self._batches[int(sorted_chunk[a])].take(pa.array(sorted_idx[a:b] - self._starts[sorted_chunk[a]]))
            for a, b in zip(runs[:-1], runs[1:])
        ]
        gathered = pa.Table.from_batches(pieces, schema=self._schema).combine_chunks()
        if order is None:
            return gathered
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        return gathered.take(pa.array(back))


def _missing_bytes(col) -> bool:
    """Whether a valid image of an Arrow image column lacks its bytes (a file path to read)."""
    import pyarrow.compute as pc

    data = col.field("bytes")
    return bool(pc.any(pc.and_(col.is_valid(), data.is_null())).as_py() or False)


def output_batches(fs: FederatedSplit, split: str, features, lo: int = 0, hi: int | None = None) -> Iterator[Any]:
    """The rows ``lo:hi`` of output split ``split`` exactly as the shards hold them: pyarrow Tables
    of at most ``BATCH_ROWS`` rows with the output schema, media embedded as bytes
    (:class:`OutputRows`). A split with no rows yields one empty table."""
    rows = OutputRows(fs, split, features)
    hi = rows.num_rows if hi is None else hi
    cuts = np.unique(np.r_[np.arange(lo, hi, BATCH_ROWS), hi]) if hi > lo else np.array([lo, lo])
    yield from rows.batches(cuts)


def split_content(fs: FederatedSplit, split: str, features, keep_blocks: bool = False) -> SplitDigest:
    """Content digest of an output split computed from its rows as :func:`write_split` would write
    them, without writing anything (what ``hetbench verify`` compares with the manifest)."""
    digest = SplitDigest(features.arrow_schema, keep_blocks)
    for out in output_batches(fs, split, features):
        digest.update(out)
    return digest


def write_split(fs: FederatedSplit, split: str, features, data_dir: Path, bar, shard_bytes: int) -> WrittenSplit:
    """Write an output split into parquet shards under ``data_dir`` in one Arrow pass, hashing each
    shard file and every column while writing (no second read). Row groups hold whole clients
    (:func:`row_group_bounds`), are taken from the source one at a time (:class:`OutputRows`) and
    never cross a shard (:func:`shard_bounds`)."""
    import pyarrow.parquet as pq

    rows = OutputRows(fs, split, features)
    rows_per_shard = _shard_rows(fs, split, shard_bytes)
    lo_rows, hi_rows = group_row_limits(rows.row_bytes)
    hi_rows = min(hi_rows, rows_per_shard)  # a row group never outgrows a shard
    groups = row_group_bounds(fs.outputs[split].client_ids, min(lo_rows, hi_rows), hi_rows)
    shards = shard_bounds(groups, rows_per_shard)
    num_shards = len(shards) - 1
    schema = features.arrow_schema
    sorting = [pq.SortingColumn(schema.get_field_index("client_id"))]
    dictionary = dictionary_columns(schema)
    digest = SplitDigest(schema)
    files, shas = [], {}
    # the content digest runs on a second thread, one group behind the writer: sha256 releases the
    # GIL, as do the Arrow gather and the parquet encoder, so hashing and writing overlap
    with ThreadPoolExecutor(1, thread_name_prefix="hetbench-digest") as hasher:
        hashed = None
        for shard in range(num_shards):
            name = f"{split}-{fs.fingerprint[:12]}-{shard:05d}-of-{num_shards:05d}.parquet"
            lo, hi = int(shards[shard]), int(shards[shard + 1])
            cuts = groups[(groups >= lo) & (groups <= hi)] if hi > lo else np.array([lo, lo])
            with HashingSink(data_dir / name) as sink:
                with pq.ParquetWriter(sink, schema, sorting_columns=sorting, use_dictionary=dictionary) as writer:
                    for group in rows.batches(cuts):
                        if hashed is not None:
                            hashed.result()  # in order, and at most one group waiting
                        hashed = hasher.submit(digest.update, group)
                        writer.write_table(group, row_group_size=max(1, group.num_rows))
                        bar.update(advance=group.num_rows)
            files.append(f"data/{name}")
            shas[f"data/{name}"] = sink.hexdigest()
        if hashed is not None:
            hashed.result()
    return WrittenSplit(files, shas, digest.columns())


def dictionary_columns(schema) -> list[str]:
    """Parquet column paths worth dictionary-encoding: all but raw binary (image or audio bytes).

    A dictionary of unique multi-kilobyte values is abandoned after its first megabyte, in every
    row group: with client-sized row groups that attempt would be most of the work of writing them.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from hetbench.publish.parquet import dictionary_columns
    >>> image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    >>> dictionary_columns(pa.schema([("image", image), ("label", pa.int64()), ("client_id", pa.int32())]))
    ['image.path', 'label', 'client_id']
    """
    import io

    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf)
    leaves = pq.ParquetFile(io.BytesIO(buf.getvalue())).schema
    return [c.path for c in (leaves.column(i) for i in range(len(leaves)))
            if not (c.physical_type == "BYTE_ARRAY" and str(c.logical_type) == "None")]
