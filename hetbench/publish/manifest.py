"""``hetbench.json``: the manifest that makes a split reproducible and checkable.

It records the hetbench version, the source (how to load it again) and its fingerprint, the full
recipe (partitioner, parameters, seed, test policy), the partition and split fingerprints, the
client and class names, and every client's sample ids per split. It holds no timestamps, so the
same inputs and seed give a byte-identical file.
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
FORMAT_VERSION = 1


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


def build_manifest(fs: FederatedSplit, files: dict[str, list[str]], name: str) -> dict[str, Any]:
    from hetbench.version import __version__

    sample_ids = client_sample_ids(fs)
    return {
        "format": FORMAT_VERSION,
        "hetbench_version": __version__,
        "name": name,
        "source": fs.table.source,
        "input_fingerprint": fs.table.fingerprint,
        "recipe": fs.recipe,
        "partition_fingerprint": fs.partition.fingerprint,
        "split_fingerprint": fs.fingerprint,
        "assignment_sha256": assignment_digest(sample_ids),
        "num_clients": fs.num_clients,
        "client_names": list(fs.client_names),
        "class_names": list(fs.table.class_names),
        "splits": {
            s: {"source_split": r.source_split, "num_rows": len(r), "files": files.get(s, [])}
            for s, r in fs.outputs.items()
        },
        "dropped": fs.dropped,
        "sample_ids": sample_ids,
    }


def write_manifest(manifest: dict[str, Any], out_dir: Path) -> None:
    text = json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False)
    (Path(out_dir) / MANIFEST_NAME).write_text(text + "\n", encoding="utf-8")


def read_manifest(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise HetbenchError(f"'{folder}' is not a hetbench build (no {MANIFEST_NAME})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HetbenchError(f"{path} is not valid JSON: {exc}") from exc
    for key in ("recipe", "source", "sample_ids", "split_fingerprint", "assignment_sha256"):
        if key not in manifest:
            raise HetbenchError(f"{path} lacks '{key}'; it was not written by hetbench")
    return manifest
