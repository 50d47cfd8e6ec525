"""The embedding cache of a build: ``<out>/embeddings/<key>.npy``, reused when the build is remade.

An embedding split (``hetbench partition embedding``) saves the embedding of every split it embedded
under a key naming the input fingerprint, split, embedder, layer and hetbench version
(:func:`cache_key`); rebuilding over that folder (``--out`` of an existing build with
``--overwrite``) reads them instead of embedding again. The cache is not part of the recipe and the
manifest does not mention it (``docs/output-contract.md``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: the cache folder inside a build
FOLDER = "embeddings"


def cache_key(table, split: str, spec: str, layer: str | None) -> str:
    """Names a cached embedding: input fingerprint, split, embedder, layer and hetbench version.

    Examples
    --------
    >>> from hetbench.embed.cache import cache_key
    >>> from hetbench.sources import load_table
    >>> len(cache_key(load_table("builtin:digits"), "train", "hog", None))
    20
    """
    import hashlib

    from hetbench.version import __version__

    return hashlib.sha256(f"{table.fingerprint}|{split}|{spec}|{layer}|{__version__}".encode()).hexdigest()[:20]


def existing_cache(out) -> Path | None:
    """The cache folder of the build at ``out``, or None when ``out`` is not given or holds none.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.embed.cache import existing_cache
    >>> existing_cache(None), existing_cache("no-build-here")
    (None, None)
    >>> Path("build/embeddings").mkdir(parents=True)
    >>> existing_cache("build")
    PosixPath('build/embeddings')
    """
    if out and (Path(out) / FOLDER).is_dir():
        return Path(out) / FOLDER
    return None


def load_cached(cache_dir, table, split: str, spec: str, layer: str | None) -> np.ndarray | None:
    """The embedding saved in ``cache_dir`` under :func:`cache_key`, or None."""
    if cache_dir is None:
        return None
    path = Path(cache_dir) / f"{cache_key(table, split, spec, layer)}.npy"
    return np.load(path) if path.is_file() else None


def save_cached(out_dir, table, embeddings: dict, spec: str, layer: str | None) -> None:
    """Save ``{split: embedding}`` under ``out_dir/embeddings/`` for a later rebuild to reuse.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.embed.cache import load_cached, save_cached
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> save_cached(".", t, {"train": np.ones((2, 3), np.float32)}, "hog", None)
    >>> load_cached("embeddings", t, "train", "hog", None).shape
    (2, 3)
    """
    folder = Path(out_dir) / FOLDER
    folder.mkdir(exist_ok=True)
    for split, emb in embeddings.items():
        np.save(folder / f"{cache_key(table, split, spec, layer)}.npy", emb)
