"""Reading ``hetbench.json``: the names and format versions of the published-folder format, the manifest
checked for the keys every reader relies on, the paths it names kept inside the folder, and the recipe
that rendered it.

Every reader of a built folder (the trainer, the Flower partitioner, ``verify``, ``report``, the sources
that read a build back, the reproduce runners) goes through here; the write side is
:mod:`hetbench.publish.manifest`. Every path a manifest names is read through :func:`safe_path`, which
refuses anything outside the build folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hetbench.errors import HetbenchError

MANIFEST_NAME = "hetbench.json"
SAMPLE_IDS_NAME = "sample_ids.parquet"
#: 4: embedding splits store their embeddings (``embeddings``, :mod:`hetbench.publish.embeddings`), the
#: report and plots are digested (``files``), a builder is recorded as the recipe's ``build`` beside its
#: partitioner (3 and 2 recorded it in ``recipe.partition``: :func:`recorded_build` reads both);
#: 3: sample ids in ``sample_ids.parquet``; 2: sample ids as JSON lists in the manifest
FORMAT_VERSION = 4
READABLE_FORMATS = (2, 3, 4)


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


def manifest_or_none(folder: str | Path) -> dict[str, Any] | None:
    """The manifest of ``folder`` if it is a hetbench build whose manifest reads (:func:`read_manifest`),
    else None: for readers that take a build and other folders alike (a source, a split to train on).

    Examples
    --------
    >>> manifest_or_none("no-such-folder") is None
    True
    """
    if not (Path(folder).expanduser() / MANIFEST_NAME).is_file():
        return None
    try:
        return read_manifest(Path(folder).expanduser())
    except HetbenchError:
        return None
