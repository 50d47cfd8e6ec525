"""``hetbench.json``: the manifest that makes a split reproducible and checkable.

It records the hetbench version, the source (how to load it again) and its fingerprint, the full
recipe (partitioner, parameters, seed, test policy), the partition and split fingerprints, the
client and class names, every client's sample ids per split and, per split, the exact shard list with
a sha256 per shard file and a content digest per column (:mod:`hetbench.publish.digest`). It holds
no timestamps, so the same inputs and seed give a byte-identical file. Every path it names is read
through :func:`safe_path`, which refuses anything outside the build folder.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.hashing import canonical_json
from hetbench.splits import FederatedSplit

MANIFEST_NAME = "hetbench.json"
FORMAT_VERSION = 2


def _ids_json(ids: np.ndarray) -> list:
    return [str(v) if not isinstance(v, (int, np.integer)) else int(v) for v in ids.tolist()]


def client_sample_ids(fs: FederatedSplit) -> dict[str, dict[str, Any]]:
    """Per output split: {"clients": {client name: [sample ids]}, "shared": [sample ids]}."""
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
    """sha256 of the per-client sample ids as written in the manifest (detects edits to them)."""
    return hashlib.sha256(canonical_json(sample_ids).encode()).hexdigest()


def build_manifest(fs: FederatedSplit, written: dict[str, Any], name: str) -> dict[str, Any]:
    """The manifest of a split whose output splits were written as ``written`` (split ->
    :class:`hetbench.publish.parquet.WrittenSplit`)."""
    from hetbench.publish.digest import DIGEST_VERSION, split_digest
    from hetbench.version import __version__

    sample_ids = client_sample_ids(fs)
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
        "assignment_sha256": assignment_digest(sample_ids),
        "content_digest": {"algorithm": "sha256", "version": DIGEST_VERSION},
        "num_clients": fs.num_clients,
        "client_names": list(fs.client_names),
        "class_names": list(fs.class_names),
        "splits": splits,
        "dropped": fs.dropped,
        "sample_ids": sample_ids,
    }
    if fs.class_map is not None:  # classes no output row has were left out of the ClassLabel
        manifest["source_class_names"] = list(fs.table.class_names)
    return manifest


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
