"""One entry of the decoded-image cache (:mod:`hetbench.train.cache`): its two files, its key and its checks.

An entry is ``<name>-<part>-<key>.npy`` (a NumPy array file, opened with ``mmap_mode="r"``, never unpickled)
and ``<name>-<part>-<key>.json`` (its meta). ``key`` hashes the identity the images were decoded from
(:func:`cache_stem`); the meta's ``digest`` is an HMAC-SHA256, keyed by that identity, of the rest of the
meta (:func:`sign_meta`); :func:`load_cached` trusts an entry only when its meta names the same identity,
the array file holds exactly the declared uint8 array and its sha256 and the digest match, and says why
not otherwise.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import re
from pathlib import Path

import numpy as np

from hetbench.train.array_digest import file_sha256
from hetbench.train.decode import ImageSource

#: bytes read at a time when a file is hashed
READ_CHUNK = 1 << 22


def npy_header(shape: tuple[int, ...]) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "|u1", "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def identity_key(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def cache_stem(folder: Path, name: str, part: str, identity: dict) -> Path:
    """``folder/<name>-<part>-<key>``: the key hashes ``identity`` (sorted JSON).

    Examples
    --------
    >>> cache_stem(Path("c"), "my split", "train", {"a": 1}).name[:20]
    'my_split-train-f9d86'
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:60] or "split"
    return folder / f"{safe}-{part}-{identity_key(identity)[:20]}"


def entry_file(stem: Path, suffix: str) -> Path:
    """``stem`` + ``suffix`` (a split's name may hold dots, so not ``Path.with_suffix``)."""
    return stem.with_name(stem.name + suffix)


def sign_meta(meta: dict) -> str:
    """The meta's ``digest``: HMAC-SHA256 of the rest of the meta, keyed by its identity."""
    rest = {k: v for k, v in meta.items() if k != "digest"}
    return hmac.new(identity_key(meta["identity"]).encode(), json.dumps(rest, sort_keys=True).encode(), "sha256").hexdigest()


def sha256_of(f, skip: int = 0) -> str:
    f.seek(skip)
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(READ_CHUNK), b""):
        h.update(chunk)
    return h.hexdigest()


def source_digest(source: ImageSource) -> str:
    """sha256 of what the images of ``source`` are decoded from: the bytes of its Arrow files, or the
    buffers of its in-memory image column.

    Parameters
    ----------
    source : ImageSource
        A part's image column (:func:`image_source`).

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> import datasets
    >>> from hetbench.train.decode import image_source
    >>> ds = datasets.Dataset.from_dict({"image": [None]}, features=datasets.Features({"image": datasets.Image()}))
    >>> len(source_digest(image_source(ds, "image")))
    64
    """
    h = hashlib.sha256()
    if source.table is not None:
        for chunk in source.table.column(source.column).chunks:
            h.update(f"{chunk.type}:{chunk.offset}:{len(chunk)}".encode())
            for buf in chunk.buffers():
                h.update(b"|" if buf is None else f"|{buf.size}|".encode())
                if buf is not None:
                    h.update(buf)
        return h.hexdigest()
    for path in source.files:
        with open(path, "rb") as f:
            h.update(bytes.fromhex(sha256_of(f)))
    return h.hexdigest()


def load_cached(stem: Path, identity: dict) -> tuple[tuple[np.ndarray, dict] | None, str | None]:
    """The cached array (read-only ``np.memmap``) and meta of ``stem``, checked, or why not.

    Parameters
    ----------
    stem : Path
        The entry (:func:`cache_stem`).
    identity : dict
        The identity it must have been decoded from.

    Returns
    -------
    ((np.memmap, dict) or None, str or None)
        The entry, or None and the reason it cannot be trusted (None for an entry without a meta: never
        written, or never completed).

    Examples
    --------
    >>> load_cached(Path("nowhere/x-train-0"), {})
    (None, None)
    """
    try:
        text = entry_file(stem, ".json").read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"its meta cannot be read ({type(exc).__name__})"
    try:
        meta = json.loads(text)
        if not isinstance(meta, dict) or meta.get("identity") != identity:
            return None, "its meta is not the one of this split and image settings"
        shape = tuple(int(v) for v in meta["shape"])
        per_block = int(meta["block_rows"])
        if meta.get("dtype") != "uint8" or len(shape) != 4 or min(shape) < 0 or per_block < 1 or not hmac.compare_digest(
                str(meta.get("digest")), sign_meta(meta)):
            return None, "its meta does not match its digest"
    except (ValueError, KeyError, TypeError):
        return None, "its meta is not valid"
    header = npy_header(shape)
    try:
        with open(entry_file(stem, ".npy"), "rb") as f:
            if os.fstat(f.fileno()).st_size != len(header) + int(np.prod(shape)) or f.read(len(header)) != header:
                return None, f"its array is not the declared uint8 array of shape {list(shape)} (truncated or replaced)"
            found = file_sha256(entry_file(stem, ".npy"), len(header), per_block * int(np.prod(shape[1:])))
            if not hmac.compare_digest(found, str(meta.get("sha256"))):
                return None, "its array does not match its sha256 (edited or damaged)"
            array = np.memmap(f, dtype=np.uint8, mode="r", offset=len(header), shape=shape)
    except FileNotFoundError:
        return None, "its array file is missing"
    except (OSError, ValueError) as exc:
        return None, f"its array cannot be read ({type(exc).__name__})"
    return (array, meta), None
