"""Reading columns back from a built folder's shards (``hetbench report``, the card, the reproduce runners),
through the manifest's checked shard paths."""

from __future__ import annotations

import os

import numpy as np

from hetbench.errors import HetbenchError


def read_built_columns(folder: str | os.PathLike, columns: tuple[str, ...] = ("client_id", "label"),
                       splits: tuple[str, ...] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Selected columns of the splits of a built folder, read straight from its parquet files.

    Parameters
    ----------
    folder : path
        The build folder.
    columns : tuple of str
        The columns to read.
    splits : tuple of str, optional
        The output splits to read (default: every one the manifest lists; one it does not list:
        :class:`HetbenchError`).

    Returns
    -------
    dict
        Split -> column -> numpy array, in row order.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-columns", quiet=True)
    >>> cols = read_built_columns("digits-columns", ("client_id",), splits=("test",))
    >>> list(cols), int(cols["test"]["client_id"].size)
    (['test'], 360)
    """
    import pyarrow.parquet as pq

    from hetbench.contract.manifest import MANIFEST_NAME, read_manifest, shard_paths

    manifest = read_manifest(folder)
    unknown = [s for s in splits or () if s not in manifest["splits"]]
    if unknown:
        raise HetbenchError(f"{folder} has no split '{unknown[0]}' ({MANIFEST_NAME} lists {', '.join(manifest['splits'])})")
    out: dict[str, dict[str, np.ndarray]] = {}
    for split in splits or tuple(manifest["splits"]):
        parts = []
        for path in shard_paths(folder, manifest, split):
            if not path.is_file():
                raise HetbenchError(f"{path} is missing")
            parts.append(pq.ParquetFile(path).read(columns=list(columns)))
        out[split] = {
            c: np.concatenate([p.column(c).to_numpy() for p in parts]) if parts else np.zeros(0, np.int64)
            for c in columns
        }
    return out
