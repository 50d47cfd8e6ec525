"""``hetbench.json``: the manifest that makes a split reproducible and checkable.

It records the hetbench version, the source (how to load it again) and its fingerprint, the full
recipe (partitioner, parameters, seed, test policy), the partition and split fingerprints, the
client and class names and, per split, the exact shard list with a sha256 per shard file and a
content digest per column (:mod:`hetbench.publish.digest`). Every client's sample ids live beside
it in ``sample_ids.parquet`` (one row per output row: ``split``, ``client_id``, ``sample_id``, in
row order), which the manifest digests twice: the file's sha256 and the content digest of its
columns (``assignment_sha256``). Format 2 manifests held the ids as JSON lists
(``sample_ids.<split>.clients``); :func:`read_sample_ids` reads both. The manifest holds no
timestamps, so the same inputs and seed give a byte-identical file. Every path it names is read
through :func:`safe_path`, which refuses anything outside the build folder.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.hashing import canonical_json
from hetbench.splits import FederatedSplit

MANIFEST_NAME = "hetbench.json"
SAMPLE_IDS_NAME = "sample_ids.parquet"
#: 4: embedding splits store their embeddings (``embeddings``, :mod:`hetbench.publish.embeddings`), the
#: report and plots are digested (``files``), a builder is recorded as the recipe's ``build`` beside its
#: partitioner (3 and 2 recorded it in ``recipe.partition``: :func:`recorded_build` reads both);
#: 3: sample ids in ``sample_ids.parquet``; 2: sample ids as JSON lists in the manifest
FORMAT_VERSION = 4
READABLE_FORMATS = (2, 3, 4)


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


@dataclass
class SampleIds:
    """The sample ids of one output split, one per row in row order, with each row's ``client_id``.

    Examples
    --------
    >>> import numpy as np
    >>> ids = SampleIds(np.array([-1, 0, 0, 2]), np.array([9, 4, 5, 7]))
    >>> ids.of_client(0).tolist(), ids.shared.tolist(), ids.by_name(["a", "b", "c"])
    ([4, 5], [9], {'a': [4, 5], 'c': [7]})
    """

    client_id: np.ndarray
    sample_id: np.ndarray

    def _range(self, k: int) -> slice:
        lo, hi = np.searchsorted(self.client_id, [k, k + 1])
        return slice(int(lo), int(hi))

    def of_client(self, k: int) -> np.ndarray:
        """Sample ids of client ``k`` (``client_id`` ``k``), in row order."""
        return self.sample_id[self._range(k)]

    @property
    def shared(self) -> np.ndarray:
        """Sample ids of the shared rows (``client_id`` -1)."""
        return self.sample_id[self._range(-1)]

    def by_name(self, client_names: list[str]) -> dict[str, list]:
        """Client name -> list of sample ids, for the clients with rows."""
        present = np.unique(self.client_id[self.client_id >= 0])
        return {client_names[int(k)]: self.of_client(int(k)).tolist() for k in present}


def _from_json(manifest: dict[str, Any], split: str) -> SampleIds:
    listed = manifest["sample_ids"].get(split)
    if not isinstance(listed, dict) or not isinstance(listed.get("clients"), dict):
        raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'sample_ids.{split}.clients' is missing")
    index = {n: k for k, n in enumerate(manifest.get("client_names") or [])}
    unknown = [n for n in listed["clients"] if n not in index]
    if unknown:
        raise HetbenchError(f"{MANIFEST_NAME} lists sample ids of an unknown client {unknown[0]!r}")
    order = sorted(listed["clients"], key=index.__getitem__)
    parts = [listed.get("shared") or []] + [listed["clients"][n] for n in order]
    cids = np.repeat(np.array([-1] + [index[n] for n in order], np.int64), [len(p) for p in parts])
    flat = [v for p in parts for v in p]
    values = np.array(flat, dtype=np.int64) if all(isinstance(v, int) and not isinstance(v, bool) for v in flat) \
        else np.array([str(v) for v in flat], dtype=object)
    return SampleIds(cids, values)


def read_sample_ids(folder: str | Path, manifest: dict[str, Any] | None = None) -> dict[str, SampleIds]:
    """The sample ids of every output split of a built folder (format 3: ``sample_ids.parquet``;
    format 2: the manifest's JSON lists).

    Parameters
    ----------
    folder : path
        The build folder.
    manifest : dict, optional
        Its manifest (:func:`read_manifest`), if already read.

    Returns
    -------
    dict
        Output split -> :class:`SampleIds` (strings as an object array).

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-ids", quiet=True)
    >>> ids = read_sample_ids("digits-ids")
    >>> sorted(ids), ids["train"].of_client(0)[:2].tolist()
    (['test', 'train'], ['digits-00002', 'digits-00012'])
    """
    manifest = read_manifest(folder) if manifest is None else manifest
    if manifest.get("format", 2) < 3:
        return {split: _from_json(manifest, split) for split in manifest["splits"]}
    return sample_ids_of(read_sample_id_table(folder, manifest), list(manifest["splits"]))


def sample_ids_of(table, splits: list[str]) -> dict[str, SampleIds]:
    """Split -> :class:`SampleIds` of a sample-id table (:func:`sample_id_table`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    split = table.column("split")
    if pa.types.is_dictionary(split.type):  # as written: compare small codes, not a million strings
        chunks = split.unify_dictionaries().chunks  # one dictionary for all chunks
        names = chunks[0].dictionary.to_pylist() if chunks else []
        codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks]) if chunks else np.zeros(0, np.int32)
        rows_of = {name: np.flatnonzero(codes == names.index(name)) if name in names else np.zeros(0, np.int64)
                   for name in splits}
    else:
        split = split.cast(pa.string())
        rows_of = {name: np.flatnonzero(pc.equal(split, name).to_numpy(zero_copy_only=False)) if len(split)
                   else np.zeros(0, np.int64) for name in splits}
    cids = table.column("client_id").to_numpy().astype(np.int64)
    values = table.column("sample_id").to_numpy()
    return {name: SampleIds(cids[rows], values[rows]) for name, rows in rows_of.items()}


def read_sample_id_table(folder: str | Path, manifest: dict[str, Any]):
    """``sample_ids.parquet`` of a format 3 folder as an Arrow table (:class:`HetbenchError` if it
    is missing, unreadable or lacks a column)."""
    import pyarrow.parquet as pq

    entry = manifest.get("sample_ids")
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
        raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'sample_ids.file' is missing")
    path = safe_path(folder, entry["file"])
    if not path.is_file():
        raise HetbenchError(f"{path} is missing (the sample ids {MANIFEST_NAME} names)")
    try:
        table = pq.ParquetFile(path).read()  # (read_table would import pyarrow.dataset: 0.3 s)
    except Exception as exc:  # truncated or not parquet
        raise HetbenchError(f"{path} is not readable parquet ({str(exc).splitlines()[0][:120]})") from exc
    missing = [c for c in ("split", "client_id", "sample_id") if c not in table.column_names]
    if missing:
        raise HetbenchError(f"{path} lacks the column '{missing[0]}'")
    return table


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


def recorded_build(manifest: dict[str, Any]) -> dict[str, Any]:
    """What rendered the split's table: ``{"method", "params", "seed"}`` of the recipe's ``build``
    (format 4), or of its ``partition`` (formats 2 and 3 recorded a builder there, in place of the
    partitioner); for a split read from a source, its partitioner's.

    Examples
    --------
    >>> recorded_build({"recipe": {"build": {"method": "iso-isp", "params": {"size": 32}},
    ...                            "partition": {"method": "devices", "params": {}, "seed": 1}}})
    {'method': 'iso-isp', 'params': {'size': 32}, 'seed': 1}
    >>> recorded_build({"recipe": {"partition": {"method": "iso-isp", "params": {}, "seed": 0}}})["method"]
    'iso-isp'
    """
    recipe = manifest["recipe"]
    part = recipe["partition"]
    build = recipe.get("build") if isinstance(recipe.get("build"), dict) else part
    return {"method": build.get("method"), "params": build.get("params"), "seed": part.get("seed")}


def write_manifest(manifest: dict[str, Any], out_dir: Path) -> None:
    text = json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False)
    (Path(out_dir) / MANIFEST_NAME).write_text(text + "\n", encoding="utf-8")


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a built folder, checked for the keys every reader relies on (bad input:
    :class:`HetbenchError`)."""
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise HetbenchError(f"'{folder}' is not a hetbench build (no {MANIFEST_NAME})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise HetbenchError(f"{path} is not valid JSON: {exc}") from exc
    except OSError as exc:
        raise HetbenchError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not isinstance(manifest, dict):
        raise HetbenchError(f"{path} is not a hetbench manifest (not a JSON object)")
    for key in ("recipe", "source", "sample_ids", "split_fingerprint", "assignment_sha256"):
        if key not in manifest:
            raise HetbenchError(f"{path} lacks '{key}'; it was not written by hetbench")
    if manifest.get("format", 2) not in READABLE_FORMATS:
        raise HetbenchError(f"{path} has manifest format {manifest.get('format')!r}; this hetbench reads formats "
                            f"{', '.join(map(str, READABLE_FORMATS))} (a newer hetbench wrote it?)")
    splits = manifest.get("splits")
    if not isinstance(splits, dict) or not splits:
        raise HetbenchError(f"{path} lacks 'splits'; it was not written by hetbench")
    for split, info in splits.items():
        if not isinstance(info, dict) or not isinstance(info.get("files"), list) or not all(
            isinstance(f, str) for f in info["files"]
        ):
            raise HetbenchError(f"{path}: 'splits.{split}.files' is not a list of file names")
    return manifest


def safe_path(folder: str | Path, rel: Any) -> Path:
    """``folder / rel`` for a path a manifest names, refused (:class:`HetbenchError`) unless it is a
    relative path that stays inside ``folder`` once symbolic links are resolved.

    Parameters
    ----------
    folder : path
        The build folder.
    rel : str
        A path read from its manifest.

    Returns
    -------
    Path
        ``folder / rel``.

    Examples
    --------
    >>> safe_path("build", "data/train-0.parquet").as_posix()
    'build/data/train-0.parquet'
    >>> safe_path("build", "../../etc/passwd")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: hetbench.json names a file outside the build folder: '../../etc/passwd'; refusing to open it
    """
    from pathlib import PurePosixPath, PureWindowsPath

    bad = f"{MANIFEST_NAME} names a file outside the build folder: {rel!r}; refusing to open it"
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise HetbenchError(bad)
    parts = PurePosixPath(rel).parts
    if PurePosixPath(rel).is_absolute() or PureWindowsPath(rel).is_absolute() or PureWindowsPath(rel).drive or ".." in parts:
        raise HetbenchError(bad)
    root = Path(folder).resolve()
    path = Path(folder) / rel
    if not path.resolve().is_relative_to(root):
        raise HetbenchError(bad)
    return path


def shard_paths(folder: str | Path, manifest: dict[str, Any], split: str) -> list[Path]:
    """The parquet shards of one output split, every one checked by :func:`safe_path`.

    Parameters
    ----------
    folder : path
        The build folder.
    manifest : dict
        Its manifest (:func:`read_manifest`).
    split : str
        An output split.

    Returns
    -------
    list of Path
        The shard files, in row order.

    Examples
    --------
    >>> m = {"splits": {"train": {"files": ["data/train-a-00000-of-00001.parquet"]}}}
    >>> [p.name for p in shard_paths("build", m, "train")]
    ['train-a-00000-of-00001.parquet']
    """
    return [safe_path(folder, f) for f in manifest["splits"][split].get("files", [])]
