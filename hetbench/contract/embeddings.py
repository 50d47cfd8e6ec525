"""The embeddings an embedding split was partitioned on, read back from its folder and checked against the
digests ``hetbench.json`` records (written by :mod:`hetbench.publish.embeddings`, which says why they are
stored)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.contract.manifest import MANIFEST_NAME, safe_path
from hetbench.errors import HetbenchError, Mismatch

#: the folder of a build that holds ``<split>.npy``
EMBEDDINGS_FOLDER = "embeddings"


def read_embeddings(folder: str | Path, manifest: dict[str, Any]) -> dict[str, np.ndarray]:
    """The stored embeddings of a folder, each checked against its recorded sha256 and shape.

    Raises
    ------
    hetbench.errors.Mismatch
        A file differs from its digest or shape (the folder does not hold what its manifest says).
    HetbenchError
        A malformed entry or a path outside the folder.
    """
    entry = manifest.get("embeddings") or {}
    if not isinstance(entry, dict):
        raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'embeddings' is not an object")
    out = {}
    for split, info in entry.items():
        if not isinstance(info, dict) or not all(isinstance(info.get(k), t) for k, t in
                                                 (("file", str), ("sha256", str), ("rows", int), ("dim", int))):
            raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'embeddings.{split}' lacks file, sha256, rows or dim")
        path = safe_path(folder, info["file"])
        if not path.is_file():
            raise Mismatch(f"embeddings of split '{split}': {info['file']} is missing")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != info["sha256"]:
            raise Mismatch(f"embeddings of split '{split}': {info['file']} differs from its sha256 in {MANIFEST_NAME}")
        try:
            values = np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as exc:
            raise Mismatch(f"embeddings of split '{split}': {info['file']} is not a float array ({exc})") from exc
        if values.dtype != np.float32 or values.shape != (info["rows"], info["dim"]):
            raise Mismatch(f"embeddings of split '{split}': {info['file']} holds {values.dtype} {values.shape}, "
                           f"not float32 ({info['rows']}, {info['dim']})")
        out[split] = values
    return out


def listed_files(manifest: dict[str, Any]) -> set[str]:
    """The embedding files the manifest lists (relative paths)."""
    entry = manifest.get("embeddings") or {}
    return {info["file"] for info in entry.values() if isinstance(info, dict) and isinstance(info.get("file"), str)}
