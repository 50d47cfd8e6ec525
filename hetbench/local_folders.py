"""Loading a local split folder with ``datasets.load_dataset`` without ever getting another folder's rows.

``datasets`` caches the Arrow copy of a local folder under a key made of the folder's *name* and its data
files' *relative* names, not their content or place: two builds with the same name and recipe (hence the
same shard names, ``train-<split fingerprint>-00000-of-00001.parquet``) in two different folders, or one
folder rebuilt after an ISP change, load the rows of whichever was loaded first on this machine (seen:
``hetbench reproduce`` trained a rebuilt ``iso-isp-...-s0`` split on the images of an earlier build, and
two folders of different content returned the same cache file). :func:`load_local` gives every load a
cache folder keyed by the folder's absolute path and each file's size and modification time (stat calls
only, no reading), so a rebuilt or different folder is converted again and an unchanged one is reused.

References
----------
.. [1] Hugging Face ``datasets``, ``load_dataset`` (``cache_dir``) and its cache layout
   (``<cache>/<name>/<config>/<version>/<hash>``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any


def folder_state(folder: str | os.PathLike) -> str:
    """A digest of what ``load_dataset`` would read in ``folder``: every file's path (absolute, links
    resolved), size and modification time, in sorted order.

    Examples
    --------
    >>> import os, tempfile
    >>> from hetbench.local_folders import folder_state
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "a.parquet"), "wb").write(b"1")
    >>> before = folder_state(d)
    >>> _ = open(os.path.join(d, "a.parquet"), "wb").write(b"22")  # rebuilt: another size
    >>> before != folder_state(d)
    True
    """
    root = Path(folder).resolve()
    h = hashlib.sha256(str(root).encode())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            st = path.stat()
            h.update(f"\0{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()


def load_local(folder: str | os.PathLike, **kwargs: Any):
    """``datasets.load_dataset(folder, **kwargs)`` with a cache folder of its own for this folder's
    current files (:func:`folder_state`), under ``datasets``' cache in ``hetbench-local/``.

    Examples
    --------
    >>> from hetbench.local_folders import load_local
    >>> from hetbench.partitioners import DirichletPartitioner
    >>> from hetbench.pipeline import make_split
    >>> _ = make_split("builtin:digits", DirichletPartitioner(3, alpha=0.5), "local-example", quiet=True)
    >>> load_local("local-example", split="train").num_rows > 0
    True
    """
    import datasets

    cache = Path(datasets.config.HF_DATASETS_CACHE) / "hetbench-local" / folder_state(folder)[:24]
    return datasets.load_dataset(str(folder), cache_dir=str(cache), **kwargs)
