"""Decoding a split's images for the trainer's cache: where the encoded images are read from
(:class:`ImageSource`), how one image is opened and decoded, and the process pool (:class:`Decoder`) that
decodes blocks of rows in parallel.

Decoding, per image, is the trainer's since before the cache (so results do not change): a split whose
images are all grayscale (PIL mode ``L``) keeps one channel, any other becomes RGB (grayscale images
repeated); images are resized with area interpolation when shrinking and bilinear when growing. A block of
rows is decoded by one process and written at its offset of the cache file, so the file's bytes do not
depend on the number of processes. :mod:`hetbench.train.cache` writes and reads the cache files.
"""

from __future__ import annotations

import hashlib
import io
import mmap
import os
import sys
import types
import zlib
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from hetbench.cores import available_cores
from hetbench.errors import HetbenchError
from hetbench.process_pool import worker_context
from hetbench.train.channel_stats import channel_sums


#: splits up to this many rows are decoded in the calling process (a pool costs more than it saves)
IN_PROCESS_ROWS = 4096


# -- reading images: in a worker process or in this one ---------------------------------------------


@dataclass(frozen=True)
class ImageSource:
    """The image column of one split part: the Arrow files a worker opens itself (rows ``offsets[i]`` to
    ``offsets[i + 1]`` are in ``files[i]``), or, for a data set held in memory, its Arrow ``table``."""

    column: str
    num_rows: int
    files: tuple[str, ...] = ()
    offsets: tuple[int, ...] = ()
    table: Any = None
    cwd: str = "."


def image_source(ds, column: str) -> ImageSource:
    """The :class:`ImageSource` of a ``datasets.Dataset``: its Arrow cache files when they hold exactly its
    rows, else its table (decoded in this process)."""
    import pyarrow as pa

    files = [f["filename"] for f in (ds.cache_files or [])]
    if files and getattr(ds, "_indices", None) is None:
        offsets = [0]
        try:
            for f in files:
                with pa.memory_map(f, "r") as src:
                    reader = pa.ipc.open_stream(src)
                    if column not in reader.schema.names:
                        raise ValueError(column)
                    offsets.append(offsets[-1] + sum(b.num_rows for b in reader))
        except (OSError, ValueError, pa.ArrowException):
            offsets = []
        if offsets and offsets[-1] == len(ds):
            return ImageSource(column, len(ds), tuple(files), tuple(offsets), None, os.getcwd())
    return ImageSource(column, len(ds), table=ds.with_format("arrow")[0 : len(ds)].select([column]), cwd=os.getcwd())


def _take(col, rows: np.ndarray) -> list:
    import pyarrow as pa

    if rows.size and int(rows[-1]) - int(rows[0]) + 1 == rows.size:
        return col.slice(int(rows[0]), int(rows.size)).to_pylist()
    return col.take(pa.array(rows)).to_pylist()


#: a worker process's mapped Arrow files and their tables, kept across its tasks (not in the calling process)
_OPEN: dict[str, tuple[mmap.mmap, Any]] = {}
_KEEP_OPEN = False


@contextmanager
def _arrow_table(path: str) -> Iterator[Any]:
    """The Arrow table of one of a data set's cache files, zero-copy from a memory map. A worker maps each
    file once (opening a stream of thousands of record batches costs tens of milliseconds) and drops the
    pages it read after each block, so its resident memory stays small; the calling process maps the file
    for this block only."""
    import pyarrow as pa

    if not _KEEP_OPEN:
        with pa.memory_map(path, "r") as src:
            yield pa.ipc.open_stream(src).read_all()
        return
    if path not in _OPEN:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        _OPEN[path] = (mm, pa.ipc.open_stream(pa.BufferReader(pa.py_buffer(mm))).read_all())
    mm, table = _OPEN[path]
    try:
        yield table
    finally:
        release_pages(mm)


def read_items(source: ImageSource, rows: np.ndarray) -> list:
    """The image cells (``{"bytes", "path"}`` or None) of the sorted ``rows``."""
    if source.table is not None:
        return _take(source.table.column(source.column), rows)
    out: list = []
    for f, lo, hi in zip(source.files, source.offsets, source.offsets[1:]):
        sel = rows[(rows >= lo) & (rows < hi)] - lo
        if sel.size:
            with _arrow_table(f) as table:
                out.extend(_take(table.column(source.column), sel))
    return out


#: formats tried first when an image is opened (the rest are tried after them: the same decoders, found sooner)
COMMON_FORMATS = ("PNG", "JPEG")


def open_image(item: dict | None, row: int, desc: str, cwd: str = "."):
    """The PIL image of one cell (lazy: only the header is read), or a :class:`HetbenchError` naming the row;
    an image over hetbench's pixel bound is refused before it is decoded (:mod:`hetbench.image_limits`)."""
    from PIL import UnidentifiedImageError

    from hetbench.image_limits import open_image as open_bounded

    if item is None or not (item.get("bytes") or item.get("path")):
        raise HetbenchError(f"{desc}: row {row} has no image")

    def fp():
        return io.BytesIO(item["bytes"]) if item.get("bytes") else os.path.join(cwd, item["path"])

    what = f"{desc}: row {row}"
    try:
        try:
            return open_bounded(fp(), what, formats=COMMON_FORMATS)
        except UnidentifiedImageError:
            return open_bounded(fp(), what)
    except HetbenchError:
        raise
    except (OSError, ValueError, SyntaxError) as exc:
        raise HetbenchError(f"{desc}: row {row}: cannot read the image ({type(exc).__name__}: {exc})") from None


def decode_image(img, gray: bool, size: int) -> np.ndarray:
    """One PIL image as uint8 ``(C, size, size)``: mode ``L`` stays one channel in a ``gray`` split,
    anything else is RGB; resized with area interpolation when shrinking, bilinear when growing."""
    import cv2

    if img.mode not in ("L", "RGB"):  # converting RGB to RGB would only copy it
        img = img.convert("RGB")
    im = np.asarray(img)
    if im.ndim == 2 and not gray:
        im = np.repeat(im[..., None], 3, axis=2)
    if im.shape[0] != size or im.shape[1] != size:
        shrink = min(im.shape[:2]) > size
        im = cv2.resize(im, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    return im.reshape(size, size, -1).transpose(2, 0, 1)


def scan_task(source: ImageSource, start: int, stop: int, desc: str) -> tuple[bool, set]:
    """(every image of rows [start, stop) is grayscale, the set of their (height, width))."""
    gray, sizes = True, set()
    for i, item in enumerate(read_items(source, np.arange(start, stop)), start):
        img = open_image(item, i, desc, source.cwd)
        gray = gray and img.mode == "L"
        sizes.add((img.size[1], img.size[0]))
    return gray, sizes


@dataclass(frozen=True)
class BlockJob:
    """Decode source ``rows`` into output rows ``[position, position + len(rows))`` of ``path``."""

    source: ImageSource
    rows: np.ndarray
    position: int
    path: str
    header: int
    gray: bool
    size: int
    channels: int
    stats: bool
    desc: str


def decode_task(job: BlockJob) -> tuple[int, np.ndarray | None, np.ndarray | None, int, bytes]:
    """Decode and write one block; returns (its CRC-32, channel sums, sums of squares, values per channel, the
    sha256 of its bytes). The block's sha256 is taken here, in the worker, so that hashing the decoded array
    runs on every decode process at once (:func:`hetbench.train.array_digest.array_sha256` combines them)."""
    s = job.size
    block = np.empty((job.rows.size, 1 if job.gray else 3, s, s), dtype=np.uint8)
    for j, (row, item) in enumerate(zip(job.rows.tolist(), read_items(job.source, job.rows))):
        img = open_image(item, row, job.desc, job.source.cwd)
        try:
            block[j] = decode_image(img, job.gray, s)
        except (OSError, ValueError, SyntaxError) as exc:
            raise HetbenchError(f"{job.desc}: row {row}: cannot decode the image ({type(exc).__name__}: {exc})") \
                from None
    if block.shape[1] != job.channels:  # the test split follows the train split's channels
        block = np.repeat(block, 3, axis=1) if block.shape[1] == 1 else block.mean(axis=1, keepdims=True).astype(np.uint8)
    block = np.ascontiguousarray(block)
    data = memoryview(block).cast("B")
    fd = os.open(job.path, os.O_WRONLY)
    try:
        done, offset = 0, job.header + job.position * job.channels * s * s
        while done < len(data):
            done += os.pwrite(fd, data[done:], offset + done)
    finally:
        os.close(fd)
    sums, squares, count = channel_sums(block) if job.stats and block.size else (None, None, 0)
    return zlib.crc32(data), sums, squares, count, hashlib.sha256(data).digest()


def _init_worker() -> None:
    import cv2

    global _KEEP_OPEN
    _KEEP_OPEN = True
    cv2.setNumThreads(1)


@contextmanager
def _bare_main() -> Iterator[None]:
    """While worker processes start, hide the caller's ``__main__`` from multiprocessing, so workers do not
    import it: they need nothing from it, start faster, and a script without an ``if __name__ ==
    "__main__"`` guard can still load a split."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


class Decoder:
    """Runs scan and decode tasks in order: in this process for small splits, else in a pool of
    ``processes`` worker processes (forkserver on Linux, spawn elsewhere; started on first use)."""

    def __init__(self, processes: int | None = None, in_process_rows: int = IN_PROCESS_ROWS) -> None:
        if processes is not None and (int(processes) != processes or processes < 1):
            raise HetbenchError(f"decode processes must be a positive integer (got {processes})")
        self.processes = int(processes or default_processes())
        self.in_process_rows = in_process_rows
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable, tasks: list, rows: int, local: bool = False) -> Iterator:
        """``fn(*task)`` for every task, yielded in task order; in this process when ``rows`` is small or
        ``local`` says the tasks carry data that should not be copied to workers (an in-memory table)."""
        if local or rows <= self.in_process_rows:
            for task in tasks:
                yield fn(*task)
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.processes, worker_context(None), initializer=_init_worker)
        with _bare_main():  # processes start on submit
            futures = [self._pool.submit(fn, *task) for task in tasks]
        try:
            for f in futures:
                yield f.result()
        finally:
            for f in futures:
                f.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "Decoder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def default_processes() -> int:
    """Decode processes by default: one per core this process may run on (affinity and cgroup quota)."""
    return available_cores()


def release_pages(x: Any) -> None:
    """Drop the pages of a memory-mapped array (or of an ``mmap``) from this process's resident memory
    (they stay in the operating system's page cache and are read back on the next access); anything
    else is left alone."""
    mm = x if isinstance(x, mmap.mmap) else getattr(x, "_mmap", None)
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if isinstance(mm, mmap.mmap) and advice is not None and not mm.closed:
        mm.madvise(advice)
