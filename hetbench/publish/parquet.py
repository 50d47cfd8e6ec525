"""Parquet shards of a split: output features, streaming rows into shards, reading columns back.

Rows are streamed from the source in Arrow batches and written shard by shard; images are embedded
as bytes (``embed_table_storage``), never left as file paths. Shard names carry the first 12 hex
digits of the split fingerprint (see :mod:`hetbench.publish`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.publish.digest import HashingSink, SplitDigest
from hetbench.splits import FederatedSplit

TARGET_SHARD_BYTES = 256 * 1024 * 1024
BATCH_ROWS = 10_000


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


def _shard_rows(fs: FederatedSplit, split: str, shard_bytes: int) -> int:
    rows = fs.outputs[split]
    ds = fs.table.splits[rows.source_split]
    n = len(rows)
    per_row = max(ds.data.nbytes / max(len(ds), 1), 1.0)
    rows_per_shard = max(1, int(shard_bytes // per_row))
    num_shards = max(1, math.ceil(n / rows_per_shard))
    return max(1, math.ceil(n / num_shards))


def output_batches(fs: FederatedSplit, split: str, features, lo: int = 0, hi: int | None = None) -> Iterator[Any]:
    """The rows ``lo:hi`` of output split ``split`` exactly as the shards hold them: pyarrow Tables
    of at most ``BATCH_ROWS`` rows with the output schema, media embedded as bytes. A split with no
    rows yields one empty table."""
    import pyarrow as pa
    from datasets.table import embed_table_storage

    rows = fs.outputs[split]
    table = fs.table.splits[rows.source_split].with_format("arrow")
    labels = fs.source_labels(rows.source_split)
    hi = len(rows) if hi is None else hi
    schema = features.arrow_schema
    has_media = any(type(f).__name__ in ("Image", "Audio", "Video", "Pdf") for f in features.values())
    for start in range(lo, hi, BATCH_ROWS) if hi > lo else [lo]:
        stop = min(hi, start + BATCH_ROWS)
        idx = rows.rows[start:stop]
        batch = table[idx]
        cols = {_renamed(c, fs.table.label_column): batch.column(c) for c in batch.column_names}
        cols["label"] = pa.array(labels[idx], type=pa.int64())
        cols["client_id"] = pa.array(rows.client_ids[start:stop], type=pa.int32())
        # a split may lack a column the others have (a published test file without users)
        missing = {k: pa.nulls(len(idx), type=schema.field(k).type) for k in features if k not in cols}
        out = pa.table({k: cols[k] if k in cols else missing[k] for k in features}).cast(schema)
        yield embed_table_storage(out) if has_media else out


def split_content(fs: FederatedSplit, split: str, features, keep_blocks: bool = False) -> SplitDigest:
    """Content digest of an output split computed from its rows as :func:`write_split` would write
    them, without writing anything (what ``hetbench verify`` compares with the manifest)."""
    digest = SplitDigest(features.arrow_schema, keep_blocks)
    for out in output_batches(fs, split, features):
        digest.update(out)
    return digest


def write_split(fs: FederatedSplit, split: str, features, data_dir: Path, bar, shard_bytes: int) -> WrittenSplit:
    """Stream an output split into parquet shards under ``data_dir``, hashing each shard file and
    every column while writing (no second read)."""
    import pyarrow.parquet as pq

    n = len(fs.outputs[split])
    rows_per_shard = _shard_rows(fs, split, shard_bytes)
    num_shards = max(1, math.ceil(n / rows_per_shard))
    schema = features.arrow_schema
    digest = SplitDigest(schema)
    files, shas = [], {}
    for shard in range(num_shards):
        name = f"{split}-{fs.fingerprint[:12]}-{shard:05d}-of-{num_shards:05d}.parquet"
        lo, hi = shard * rows_per_shard, min(n, (shard + 1) * rows_per_shard)
        with HashingSink(data_dir / name) as sink:
            with pq.ParquetWriter(sink, schema) as writer:
                for out in output_batches(fs, split, features, lo, hi):
                    digest.update(out)
                    writer.write_table(out)
                    bar.update(advance=out.num_rows)
        files.append(f"data/{name}")
        shas[f"data/{name}"] = sink.hexdigest()
    return WrittenSplit(files, shas, digest.columns())


def read_built_columns(folder: str | os.PathLike, columns: tuple[str, ...] = ("client_id", "label")) -> dict[str, dict[str, np.ndarray]]:
    """Selected columns of every split of a built folder, read straight from its parquet files."""
    import pyarrow.parquet as pq

    from hetbench.publish.manifest import read_manifest, shard_paths

    manifest = read_manifest(folder)
    out: dict[str, dict[str, np.ndarray]] = {}
    for split in manifest["splits"]:
        parts = []
        for path in shard_paths(folder, manifest, split):
            if not path.is_file():
                raise HetbenchError(f"{path} is missing")
            parts.append(pq.read_table(path, columns=list(columns)))
        out[split] = {
            c: np.concatenate([p.column(c).to_numpy() for p in parts]) if parts else np.zeros(0, np.int64)
            for c in columns
        }
    return out
