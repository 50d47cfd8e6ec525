"""Writing ``hetbench.json``: the manifest that makes a split reproducible and checkable (its read side,
the names and format versions included, is :mod:`hetbench.contract`).

It records the hetbench version, the source (how to load it again) and its fingerprint, the full
recipe (partitioner, parameters, seed, test policy), the partition and split fingerprints, the
client and class names and, per split, the exact shard list with a sha256 per shard file and a
content digest per column (:mod:`hetbench.publish.digest`). Every client's sample ids live beside
it in ``sample_ids.parquet`` (one row per output row: ``split``, ``client_id``, ``sample_id``, in
row order), which the manifest digests twice: the file's sha256 and the content digest of its
columns (``assignment_sha256``). Format 2 manifests held the ids as JSON lists
(``sample_ids.<split>.clients``); :func:`hetbench.contract.read_sample_ids` reads both. The manifest holds no
timestamps, so the same inputs and seed give a byte-identical file. Every path it names is read
through :func:`hetbench.contract.safe_path`, which refuses anything outside the build folder.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.contract.manifest import FORMAT_VERSION, MANIFEST_NAME, SAMPLE_IDS_NAME
from hetbench.hashing import canonical_json
from hetbench.splits import FederatedSplit


def _ids_json(ids: np.ndarray) -> list:
    return [str(v) if not isinstance(v, (int, np.integer)) else int(v) for v in ids.tolist()]


def client_sample_ids(fs: FederatedSplit) -> dict[str, dict[str, Any]]:
    """Per output split: {"clients": {client name: [sample ids]}, "shared": [sample ids]} (the
    format 2 manifest's ``sample_ids``; what ``verify`` recomputes for a folder of that format)."""
    out: dict[str, dict[str, Any]] = {}
    for name, rows in fs.outputs.items():
        ids = fs.table.ids(rows.source_split)[rows.rows]
        bounds = np.searchsorted(rows.client_ids, np.arange(-1, fs.num_clients + 1))
        clients = {
            fs.client_names[c]: _ids_json(ids[bounds[c + 1] : bounds[c + 2]])
            for c in range(fs.num_clients)
            if bounds[c + 2] > bounds[c + 1]
        }
        out[name] = {"clients": clients, "shared": _ids_json(ids[bounds[0] : bounds[1]])}
    return out


def assignment_digest(sample_ids: dict[str, dict[str, Any]]) -> str:
    """sha256 of a format 2 manifest's per-client sample ids as written (detects edits to them)."""
    return hashlib.sha256(canonical_json(sample_ids).encode()).hexdigest()


def _id_array(ids: np.ndarray, as_text: bool):
    """Sample ids as an Arrow array: integers stay integers, anything else becomes its ``str``."""
    import pyarrow as pa

    if not as_text:
        return pa.array(ids)
    if ids.dtype.kind == "U":
        return pa.array(ids, type=pa.string())
    return pa.array([v if isinstance(v, str) else str(v) for v in ids.tolist()], type=pa.string())


def sample_id_table(fs: FederatedSplit):
    """Every output row's split, ``client_id`` and sample id, in the order of the shards.

    Parameters
    ----------
    fs : FederatedSplit
        The split.

    Returns
    -------
    pyarrow.Table
        Columns ``split`` (dictionary-encoded string), ``client_id`` (int32; -1 for shared rows) and
        ``sample_id`` (the id column's values: integers stay integers, anything else becomes its
        ``str``; the source row index when there is no id column), output splits in the order of
        ``fs.outputs``.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.publish.manifest import sample_id_table
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> t = sample_id_table(build_split(load_table("builtin:digits"), IIDPartitioner(4)))
    >>> t.column_names, t.num_rows
    (['split', 'client_id', 'sample_id'], 1797)
    """
    import pyarrow as pa

    names = list(fs.outputs)
    ids = [fs.table.ids(r.source_split)[r.rows] for r in fs.outputs.values()]
    as_text = not all(i.dtype.kind in "iu" for i in ids)
    sizes = [len(r) for r in fs.outputs.values()]
    split = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(len(names), dtype=np.int32), sizes)), pa.array(names, type=pa.string()))
    cids = np.concatenate([r.client_ids for r in fs.outputs.values()]) if names else np.zeros(0, np.int32)
    sample = pa.chunked_array([_id_array(i, as_text) for i in ids]).combine_chunks() if names else pa.array([], pa.int64())
    return pa.table({"split": split, "client_id": pa.array(cids, type=pa.int32()), "sample_id": sample})


def sample_ids_digest(table) -> str:
    """Content digest of a sample-id table (:mod:`hetbench.publish.digest`): independent of how the
    parquet file encodes it."""
    from hetbench.publish.digest import SplitDigest, split_digest

    digest = SplitDigest(table.schema)
    digest.update(table)
    return split_digest(digest.columns())


def write_sample_ids(fs: FederatedSplit, out_dir: Path) -> dict[str, Any]:
    """Write ``sample_ids.parquet`` under ``out_dir`` (one row group per output split); returns the
    manifest's ``sample_ids`` entry (file, sha256 of the file, rows) and, under ``"digest"``, its
    content digest (:func:`sample_ids_digest`)."""
    import pyarrow.parquet as pq

    from hetbench.publish.digest import HashingSink, SplitDigest, split_digest

    table = sample_id_table(fs)
    digest = SplitDigest(table.schema)
    with HashingSink(Path(out_dir) / SAMPLE_IDS_NAME) as sink:
        with pq.ParquetWriter(sink, table.schema) as writer:
            start = 0
            for rows in fs.outputs.values():
                part = table.slice(start, len(rows))
                digest.update(part)
                writer.write_table(part, row_group_size=max(1, part.num_rows))
                start += len(rows)
            if not fs.outputs:
                writer.write_table(table)
    return {"file": SAMPLE_IDS_NAME, "sha256": sink.hexdigest(), "num_rows": table.num_rows,
            "digest": split_digest(digest.columns())}


def build_manifest(fs: FederatedSplit, written: dict[str, Any], name: str, sample_ids: dict[str, Any],
                   embeddings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of a split whose output splits were written as ``written`` (split ->
    :class:`hetbench.publish.parquet.WrittenSplit`), its sample ids as ``sample_ids``
    (:func:`write_sample_ids`) and, for an embedding split, its embeddings as ``embeddings``
    (:func:`hetbench.publish.embeddings.write_embeddings`)."""
    from hetbench.publish.digest import DIGEST_VERSION, split_digest
    from hetbench.publish.libraries import library_versions
    from hetbench.version import __version__

    entry = {k: v for k, v in sample_ids.items() if k != "digest"}
    splits = {}
    for s, r in fs.outputs.items():
        w = written[s]
        splits[s] = {
            "source_split": r.source_split, "num_rows": len(r), "files": list(w.files),
            "file_sha256": dict(w.file_sha256), "column_sha256": dict(w.columns),
            "content_sha256": split_digest(w.columns),
        }
    manifest = {
        "format": FORMAT_VERSION,
        "hetbench_version": __version__,
        "name": name,
        "source": fs.table.source,
        "input_fingerprint": fs.table.fingerprint,
        "recipe": fs.recipe,
        "partition_fingerprint": fs.partition.fingerprint,
        "split_fingerprint": fs.fingerprint,
        "assignment_sha256": sample_ids["digest"],
        "content_digest": {"algorithm": "sha256", "version": DIGEST_VERSION},
        "num_clients": fs.num_clients,
        "client_names": list(fs.client_names),
        "class_names": list(fs.class_names),
        "splits": splits,
        "dropped": fs.dropped,
        "sample_ids": entry,
    }
    # a record, not identity: verify names the ones that differ here when a file does (hetbench.publish.libraries)
    manifest["built_with"] = {"libraries": library_versions()}
    if embeddings:
        manifest["embeddings"] = embeddings
    if fs.class_map is not None:  # classes no output row has were left out of the ClassLabel
        manifest["source_class_names"] = list(fs.table.class_names)
    return manifest


def write_manifest(manifest: dict[str, Any], out_dir: Path) -> None:
    text = json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False)
    (Path(out_dir) / MANIFEST_NAME).write_text(text + "\n", encoding="utf-8")
