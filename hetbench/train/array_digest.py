"""The checksum of a decoded-image cache file (:mod:`hetbench.train.cache`), taken block by block so that
many processes or threads hash one file at once.

A cached array is written in blocks of rows, each by one decode process (:func:`hetbench.train.decode.decode_task`),
which also returns the sha256 of the block it wrote; :func:`array_sha256` combines the header and those
digests into the file's ``sha256``. A check of a cached file (:func:`file_sha256`) hashes its blocks on
every core. A sha256 over the whole file, taken after decoding, was one serial pass (about 2 CPU seconds
for the 2.3 GB of ``benchmarks/trainer_memory.py``) that held two decode processes to 1.76x one; hashed by
block, they do 2.0x (issue 27).
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

#: bytes read at a time when a block is hashed
READ_CHUNK = 1 << 22


def array_sha256(header: bytes, block_digests: list[bytes]) -> str:
    """The ``sha256`` of a cached array file: sha256 of its ``.npy`` header followed by the sha256 of each
    block of rows (:func:`hetbench.train.cache.block_rows` rows; the last may be shorter), in order. It commits to every byte of
    the file as a sha256 of the whole would, and its blocks are hashed in parallel: by the decode processes
    as they write them, and by :func:`file_sha256` when a cached file is checked.

    Parameters
    ----------
    header : bytes
        The file's ``.npy`` header.
    block_digests : list of bytes
        The 32-byte sha256 of each block's bytes.

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> import hashlib
    >>> len(array_sha256(b"header", [hashlib.sha256(b"rows").digest()]))
    64
    """
    h = hashlib.sha256(header)
    for d in block_digests:
        h.update(d)
    return h.hexdigest()


def file_sha256(path: Path, header_len: int, block_bytes: int, threads: int | None = None) -> str:
    """:func:`array_sha256` of an array file, its blocks of ``block_bytes`` bytes after the header read and
    hashed on ``threads`` threads (default: the cores this process may use; sha256 and reads release the GIL).

    Parameters
    ----------
    path : Path
        The ``.npy`` file.
    header_len : int
        Bytes of its header.
    block_bytes : int
        Bytes of one block of rows (the last block may be shorter).
    threads : int, optional
        Threads hashing blocks.

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> import hashlib, pathlib
    >>> _ = pathlib.Path("a.npy").write_bytes(b"HEADabcdefg")
    >>> file_sha256(pathlib.Path("a.npy"), 4, 4) == array_sha256(b"HEAD", [hashlib.sha256(x).digest() for x in (b"abcd", b"efg")])
    True
    """
    from concurrent.futures import ThreadPoolExecutor

    from hetbench.cores import available_cores

    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        header = os.pread(fd, header_len, 0)
        starts = range(header_len, size, max(1, block_bytes))

        def block(start: int) -> bytes:
            h = hashlib.sha256()
            done, end = start, min(size, start + block_bytes)
            while done < end:  # at most READ_CHUNK bytes in memory per thread
                piece = os.pread(fd, min(READ_CHUNK, end - done), done)
                if not piece:
                    raise OSError(errno.EIO, "the array file shrank while it was read")
                h.update(piece)
                done += len(piece)
            return h.digest()

        workers = max(1, min(threads or available_cores(), len(starts) or 1))
        if workers == 1:
            digests = [block(a) for a in starts]
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="cache-sha256") as pool:
                digests = list(pool.map(block, starts))
    finally:
        os.close(fd)
    return array_sha256(header, digests)
