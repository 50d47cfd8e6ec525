"""The per-client sample ids of a built folder: which source rows every client holds, in row order
(format 3 and 4: ``sample_ids.parquet``; format 2: JSON lists in ``hetbench.json``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.contract.manifest import MANIFEST_NAME, read_manifest, safe_path
from hetbench.errors import HetbenchError


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
