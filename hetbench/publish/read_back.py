"""Reading columns back from a built folder's shards (``hetbench report``, the leaderboard, the Flower
partitioner), through the manifest's checked shard paths."""

from __future__ import annotations

import os

import numpy as np

from hetbench.errors import HetbenchError


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
            parts.append(pq.ParquetFile(path).read(columns=list(columns)))
        out[split] = {
            c: np.concatenate([p.column(c).to_numpy() for p in parts]) if parts else np.zeros(0, np.int64)
            for c in columns
        }
    return out
