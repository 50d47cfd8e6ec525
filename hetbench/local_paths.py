"""Local paths never reach a published file: sources are recorded by name, paths kept in a sidecar.

A recipe names its inputs (``--dataset``, ``--raw-dir``, ``--labels``, ``--data-dir``,
``--metadata``, ``--image-root``, a model file of ``--embedder``). Written as given, they would put
the builder's home folder into ``hetbench.json`` and the card, which ``hetbench publish`` uploads,
and would make the recipe (and so the split fingerprint) depend on where the files lie. Instead a
path that exists on this machine is recorded as ``local:<its base name>``; the content is what the
manifest digests (the input fingerprint, every column). The paths themselves go to
``.hetbench-local.json`` beside the manifest, a dot-file that ``hetbench publish`` never uploads and
``hetbench verify`` reads to find the inputs again on the machine that built the folder
(:func:`restore`). Elsewhere, ``--dataset`` names the source.

Examples
--------
>>> import pathlib
>>> _ = pathlib.Path("rows.csv").write_text("label\\n1\\n")
>>> public, where = publicise({"dataset": "rows.csv", "seed": 0, "embedder": "hog"})
>>> public["dataset"], public["embedder"], sorted(where)
('local:rows.csv', 'hog', ['dataset'])
>>> publicise({"dataset": "builtin:digits"})[0]["dataset"]
'builtin:digits'
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: recipe and source keys whose values may be local paths
PATH_KEYS = frozenset({"dataset", "raw_dir", "labels", "data_dir", "metadata", "image_root", "profiles"})
#: embedder kinds whose argument is a model file
MODEL_FILE_EMBEDDERS = ("torchscript", "onnx")
#: the sidecar beside the manifest (never published)
SIDECAR = ".hetbench-local.json"
PREFIX = "local:"


def _local(value: str) -> str | None:
    """``local:<name>`` for a path that exists here, else None (builtin sources, hub ids, names)."""
    if not value or value.startswith(("builtin:", PREFIX)) or not os.path.exists(value):
        return None
    return PREFIX + (Path(os.path.abspath(value)).name or value)


def public_value(key: str, value: Any) -> tuple[Any, str | None]:
    """(the value to record, the local path it stands for or None).

    Examples
    --------
    >>> public_value("embedder", "pixels:8")
    ('pixels:8', None)
    >>> public_value("raw_dir", None)
    (None, None)
    """
    if not isinstance(value, str):
        return value, None
    if key == "embedder":
        kind, _, arg = value.partition(":")
        name = _local(arg) if kind in MODEL_FILE_EMBEDDERS else None
        return (f"{kind}:{name}", os.path.abspath(arg)) if name else (value, None)
    if key not in PATH_KEYS:
        return value, None
    name = _local(value)
    if name is None and ":" in value and not value.startswith("builtin:"):  # recipe:path (real-devices)
        head, _, tail = value.partition(":")
        inner = _local(tail)
        return (f"{head}:{inner}", os.path.abspath(tail)) if inner else (value, None)
    return (name, os.path.abspath(value)) if name else (value, None)


def publicise(obj: Any, where: str = "") -> tuple[Any, dict[str, str]]:
    """``obj`` (nested dicts and lists) with every local path replaced (module notes), and the map
    from each replaced value's dotted key to its absolute path."""
    found: dict[str, str] = {}
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            dotted = f"{where}.{key}" if where else str(key)
            if isinstance(value, (dict, list)):
                out[key], inner = publicise(value, dotted)
                found.update(inner)
            else:
                out[key], path = public_value(str(key), value)
                if path is not None:
                    found[dotted] = path
        return out, found
    if isinstance(obj, list):
        items = []
        for i, value in enumerate(obj):
            item, inner = publicise(value, f"{where}[{i}]")
            items.append(item)
            found.update(inner)
        return items, found
    return obj, found


def write_sidecar(folder: str | Path, paths: dict[str, str]) -> None:
    """Write the local paths of a build (dotted manifest key -> absolute path), if any."""
    if paths:
        (Path(folder) / SIDECAR).write_text(json.dumps(paths, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def restore(manifest: dict[str, Any], folder: str | Path) -> dict[str, Any]:
    """A copy of ``manifest`` with the sidecar's local paths put back where they still exist, for
    re-running the recipe on the machine that built the folder; the manifest itself if none.

    Examples
    --------
    >>> restore({"source": {"dataset": "local:rows.csv"}}, "no-such-folder")["source"]["dataset"]
    'local:rows.csv'
    """
    path = Path(folder) / SIDECAR
    try:
        paths = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return manifest
    if not isinstance(paths, dict):
        return manifest
    out = json.loads(json.dumps(manifest))
    for dotted, local in paths.items():
        if not isinstance(dotted, str) or not isinstance(local, str) or not os.path.exists(local):
            continue
        holder, keys = out, dotted.replace("[", ".[").split(".")
        for k in keys[:-1]:
            holder = holder[int(k[1:-1])] if k.startswith("[") and isinstance(holder, list) else (
                holder.get(k) if isinstance(holder, dict) else None)
            if holder is None:
                break
        last = keys[-1]
        if isinstance(holder, dict) and isinstance(holder.get(last), str):
            value = holder[last]
            kind, _, arg = value.partition(":")
            if last == "embedder":
                holder[last] = f"{kind}:{local}"
            elif value.startswith(PREFIX):
                holder[last] = local
            elif arg.startswith(PREFIX):  # recipe:local:name
                holder[last] = f"{kind}:{local}"
    return out


def is_local_name(value: Any) -> bool:
    """Whether a recorded value stands for a local file of the machine that built the folder."""
    return isinstance(value, str) and (value.startswith(PREFIX) or f":{PREFIX}" in value)


__all__ = ["PATH_KEYS", "SIDECAR", "publicise", "public_value", "write_sidecar", "restore", "is_local_name"]
