"""The embeddings an embedding split was partitioned on, stored in the folder and digested.

An embedder that trains a network (``task``) or runs a user's model gives other bits on another
CPU, so the source alone does not fix the partition on every machine. Every split a partitioner
embedded is therefore written to ``embeddings/<split>.npy`` (float32, C order, numpy's ``.npy``
format) and the manifest records, per source split, the file, its sha256, its shape and, for an
embedder read from a model file, that file's sha256 (never its path)::

    "embeddings": {"train": {"file": "embeddings/train.npy", "sha256": "...", "rows": 1437, "dim": 64}}

``hetbench verify`` checks the files by digest and re-derives the partition from them, exactly and
on any CPU (the standardisation, PCA and K-means after the embedding are integer-exact:
:mod:`hetbench.exact_kmeans`). Re-embedding the source is a separate check,
:func:`embedding_drift`, which reports the largest difference and the share of rows whose cluster
stays the same (``docs/output-contract.md``, "What verify promises").

Examples
--------
>>> import numpy as np
>>> entry = write_embeddings({"train": np.ones((3, 2), np.float32)}, ".")
>>> entry["train"]["rows"], entry["train"]["file"]
(3, 'embeddings/train.npy')
>>> from hetbench.contract import read_embeddings
>>> read_embeddings(".", {"embeddings": entry})["train"].shape
(3, 2)
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.contract.embeddings import EMBEDDINGS_FOLDER
from hetbench.errors import HetbenchError



def _npy_bytes(values: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(values, dtype=np.float32), allow_pickle=False)
    return buf.getvalue()


def write_embeddings(embeddings: dict[str, np.ndarray], out_dir: str | Path,
                     model_sha256: str | None = None) -> dict[str, dict[str, Any]]:
    """Write every split's embedding under ``out_dir/embeddings/``; returns the manifest's entry.

    Parameters
    ----------
    embeddings : dict
        Source split -> ``(n, d)`` embedding (stored as float32).
    out_dir : path
        The build folder being written.
    model_sha256 : str, optional
        sha256 of the model file the embedder read (recorded so that a changed model is noticed).
    """
    folder = Path(out_dir) / EMBEDDINGS_FOLDER
    folder.mkdir(exist_ok=True)
    entry: dict[str, dict[str, Any]] = {}
    for split in sorted(embeddings):
        data = _npy_bytes(embeddings[split])
        (folder / f"{split}.npy").write_bytes(data)
        values = embeddings[split]
        entry[split] = {"file": f"{EMBEDDINGS_FOLDER}/{split}.npy", "sha256": hashlib.sha256(data).hexdigest(),
                        "rows": int(values.shape[0]), "dim": int(values.shape[1])}
        if model_sha256:
            entry[split]["model_sha256"] = model_sha256
    return entry


def embedding_drift(stored: np.ndarray, again: np.ndarray, stored_clusters: np.ndarray | None,
                    again_clusters: np.ndarray | None) -> dict[str, float]:
    """How far an embedding computed again is from the stored one.

    Parameters
    ----------
    stored, again : numpy.ndarray
        The stored and the recomputed ``(n, d)`` embedding.
    stored_clusters, again_clusters : numpy.ndarray, optional
        Cluster of every row under the split's fit, from each embedding.

    Returns
    -------
    dict
        ``identical`` (0/1), ``max_abs_diff``, ``relative`` (the largest difference over the
        largest stored magnitude) and, with clusters, ``cluster_agreement`` (share of rows).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    >>> embedding_drift(a, a + 1e-7, np.array([0, 1]), np.array([0, 0]))["cluster_agreement"]
    0.5
    """
    if stored.shape != again.shape:
        raise HetbenchError(f"the embedder gives shape {again.shape} here, the folder stores {stored.shape}")
    diff = float(np.max(np.abs(stored.astype(np.float64) - again.astype(np.float64)))) if stored.size else 0.0
    top = float(np.max(np.abs(stored))) if stored.size else 0.0
    out = {"identical": float(np.array_equal(stored, again)), "max_abs_diff": diff,
           "relative": diff / top if top > 0 else diff}
    if stored_clusters is not None and again_clusters is not None and stored_clusters.size:
        out["cluster_agreement"] = float(np.mean(stored_clusters == again_clusters))
    return out


__all__ = ["write_embeddings", "embedding_drift"]
