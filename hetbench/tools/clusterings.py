"""Clustering similarity zeta (Borazjani et al., Eq. 4) between two embedding clusterings.

Either two built embedding splits (aligned on their sample ids) or one data set clustered under two
embedders. ``hetbench compare-clusterings`` calls these.
"""

from __future__ import annotations

import os

import numpy as np

from hetbench.errors import HetbenchError


def clusters_by_sample(folder: str | os.PathLike) -> dict:
    """Sample id -> cluster of every row of a built embedding split (its ``cluster`` column)."""
    import pyarrow.parquet as pq

    from hetbench.contract import read_manifest, shard_paths

    manifest = read_manifest(folder)
    id_col = manifest["source"].get("id_col")
    if not id_col:
        raise HetbenchError(f"'{folder}' has no sample-id column to align on (build it with `id_col`)")
    out: dict = {}
    for split in manifest["splits"]:
        for f in shard_paths(folder, manifest, split):  # never a path outside the build folder
            schema = pq.read_schema(f)
            if "cluster" not in schema.names:
                raise HetbenchError(f"'{folder}' has no cluster column: build it with 'hetbench partition embedding'")
            t = pq.read_table(f, columns=[id_col, "cluster"])
            out.update(zip(t.column(id_col).to_pylist(), t.column("cluster").to_pylist()))
    return out


def compare_builds(folder_a: str | os.PathLike, folder_b: str | os.PathLike) -> tuple[float, int]:
    """Zeta of the clusterings of two built embedding splits over their shared sample ids;
    returns (zeta, number of shared samples)."""
    from hetbench.clustering import zeta

    a_of, b_of = clusters_by_sample(folder_a), clusters_by_sample(folder_b)
    common = sorted(set(a_of) & set(b_of))
    if not common:
        raise HetbenchError("the two builds share no sample ids")
    return zeta(np.array([a_of[s] for s in common]), np.array([b_of[s] for s in common])), len(common)


def compare_embedders(dataset: str, embedders: tuple[str, str], clusters: int = 10, seed: int = 0) -> tuple[float, int]:
    """Zeta of ``dataset``'s training rows clustered (K-means, ``clusters``) under two embedders;
    returns (zeta, number of samples).

    Examples
    --------
    >>> from hetbench.tools.clusterings import compare_embedders
    >>> z, n = compare_embedders("builtin:digits", ("pixels", "pixels"), clusters=5)
    >>> round(z, 6), n
    (1.0, 1797)
    """
    from hetbench.clustering import zeta
    from hetbench.partitioners import EmbeddingPartitioner
    from hetbench.sources import load_table

    table = load_table(dataset)
    a, b = (EmbeddingPartitioner(clusters=clusters, embedder=e.strip()).cluster_labels(table, "train", seed) for e in embedders)
    return zeta(a, b), len(a)
