"""Rows of a device split kept on disk as they are made, so a build's memory does not grow with its images.

The device builders (``build devices``, ``build iso-isp``, ``build real-devices``) make one encoded image
per row. A :class:`RowSpill` appends each image's bytes to a file in a temporary folder the moment its
capture is rendered (or its photograph read), and keeps only its size in memory. Which rows are train and
which test is known once every capture is in (a capture that cannot be rendered changes the hold-out), so
:meth:`RowSpill.dataset` then copies each split's images, in that split's row order, into a file of its own
and maps it: the split's Arrow table holds the mapped bytes, and the shards are written from it in batches
(:mod:`hetbench.publish.parquet`), as from any memory-mapped data set.

The table is the one ``datasets.Dataset.from_dict`` makes from the same rows in memory (same schema, same
buffers and sizes), so what is published is byte-identical to a build that held every image in memory.
The pages of the mapped files are dropped from this process's resident memory every
:data:`RELEASE_SECONDS` while they are mapped (:class:`PageRelease`; they stay in the operating system's
page cache), so reading every image once to write the shards does not add the whole split to the peak
resident memory. The temporary folder goes beside the output folder while a build publishes
(:func:`spill_beside`; where the output's own temporary folder goes, on the disk that will hold the
shards), else in the system's temporary folder; it records its process (:mod:`hetbench.tempdirs`): one
left by a killed build is removed by the next.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from array import array
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from hetbench.tempdirs import mark, remove_stale

#: name prefix of the temporary folders (beside the output folder, else in the system's temporary folder)
SPILL_PREFIX = ".hetbench-rows-"
#: most bytes of one Arrow chunk of images (a binary array's offsets are 32-bit)
MAX_CHUNK_BYTES = 2**31 - 1
#: bytes copied at a time when a split's images are arranged in its row order
COPY_BYTES = 16 << 20
#: how often the mapped images' pages are dropped from resident memory (seconds)
RELEASE_SECONDS = 0.05


class PageRelease:
    """Drops the resident pages of memory-mapped files every ``interval`` seconds while they are mapped.

    One daemon thread serves every map registered with :meth:`add`; it holds them by weak reference and
    ends once none is left. Dropping the pages of a read-only file mapping is always safe: a page read
    again is mapped again from the page cache.

    Parameters
    ----------
    interval : float
        Seconds between two passes.

    Examples
    --------
    >>> import mmap, tempfile
    >>> from hetbench.builders.row_spill import PageRelease
    >>> f = tempfile.TemporaryFile(); _ = f.write(b"x" * 8192); f.flush()
    >>> m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    >>> release = PageRelease(0.01); release.add(m); m[:1]
    b'x'
    """

    def __init__(self, interval: float = RELEASE_SECONDS) -> None:
        self.interval = interval
        self._maps: list[weakref.ref] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, mm: mmap.mmap) -> None:
        """Release the pages of ``mm`` from now on, as long as it is mapped."""
        with self._lock:
            self._maps.append(weakref.ref(mm))
            if self._thread is None or not self._thread.is_alive():
                # not named hetbench-*: the CLI does not wait for it at exit (it holds nothing to finish)
                self._thread = threading.Thread(target=self._run, name="row-spill-pages", daemon=True)
                self._thread.start()

    def _live(self) -> list[mmap.mmap]:
        with self._lock:
            live = [m for m in (r() for r in self._maps) if m is not None and not m.closed]
            self._maps = [weakref.ref(m) for m in live]
            if not live:
                self._thread = None
            return live

    def _run(self) -> None:
        wait = threading.Event()
        while True:
            live = self._live()
            if not live:
                return
            for mm in live:
                drop_pages(mm)
            del live, mm  # no strong reference while waiting: a split that is dropped is unmapped
            wait.wait(self.interval)


def drop_pages(mm: mmap.mmap) -> None:
    """Drop the pages of ``mm`` from this process's resident memory (kept in the page cache); a no-op where
    the platform has no ``MADV_DONTNEED``."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is not None and not mm.closed and len(mm):
        try:
            mm.madvise(advice)
        except (OSError, ValueError):  # pragma: no cover - closed under us
            pass


_RELEASE = PageRelease()
_BESIDE: ContextVar[Path | None] = ContextVar("hetbench_spill_beside", default=None)


@contextmanager
def spill_beside(folder: str | os.PathLike) -> Iterator[None]:
    """Within the block, a :class:`RowSpill` made without a ``parent`` goes into ``folder`` (the parent of the
    output folder being built: a disk with room for the shards, unlike a temporary folder in memory).

    Parameters
    ----------
    folder : path
        Where the spills go; the system's temporary folder when it does not exist.

    Examples
    --------
    >>> import os
    >>> from hetbench.builders.row_spill import RowSpill, spill_beside
    >>> with spill_beside("."):
    ...     spill = RowSpill()
    >>> spill.folder.parent == Path("."), spill.folder.name.startswith(".hetbench-rows-")
    (True, True)
    >>> spill.close()
    """
    token = _BESIDE.set(Path(folder))
    try:
        yield
    finally:
        _BESIDE.reset(token)


class RowSpill:
    """Encoded images appended to a file as they are made; each split's rows then read back as a mapped
    ``datasets.Dataset`` (:meth:`dataset`).

    Parameters
    ----------
    parent : path, optional
        Where the temporary folder goes (default: the folder of :func:`spill_beside`, else the system's
        temporary folder).

    Examples
    --------
    >>> import datasets
    >>> from hetbench.builders.row_spill import RowSpill
    >>> spill = RowSpill()
    >>> [spill.add(b) for b in (b"first", b"second", b"third")]
    [0, 1, 2]
    >>> feats = datasets.Features({"image": datasets.Image(), "sample_id": datasets.Value("string")})
    >>> ds = spill.dataset("train", [2, 0], {"sample_id": ["c", "a"]}, feats)
    >>> spill.close()
    >>> ds.with_format("arrow")["image"].to_pylist()
    [{'bytes': b'third', 'path': None}, {'bytes': b'first', 'path': None}]
    """

    def __init__(self, parent: str | os.PathLike | None = None) -> None:
        root = Path(parent) if parent is not None else _BESIDE.get()
        if root is None or not root.is_dir():
            root = Path(tempfile.gettempdir())
        remove_stale(root, SPILL_PREFIX)
        self.folder = root / f"{SPILL_PREFIX}{uuid.uuid4().hex[:10]}"
        self.folder.mkdir()
        self._remove = weakref.finalize(self, shutil.rmtree, str(self.folder), True)
        mark(self.folder)
        self._file = open(self.folder / "images.bin", "wb")
        self._sizes = array("q")
        self._map: mmap.mmap | None = None

    def __len__(self) -> int:
        return len(self._sizes)

    def add(self, image: bytes) -> int:
        """Append one encoded image; returns its row number in the spill. A full disk is an ``OSError`` naming
        the spill file (the CLI's one line)."""
        with _naming(self.folder / "images.bin"):
            self._file.write(image)
        self._sizes.append(len(image))
        return len(self._sizes) - 1

    def _source(self) -> mmap.mmap | None:
        """The spilled images, mapped (no more rows are added once they are read)."""
        if not self._file.closed:
            with _naming(self.folder / "images.bin"):
                self._file.close()
        if self._map is None and os.path.getsize(self.folder / "images.bin"):
            with open(self.folder / "images.bin", "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return self._map

    def dataset(self, split: str, rows: Sequence[int] | np.ndarray, columns: Mapping[str, Sequence[Any]],
                features) -> Any:
        """Spilled rows ``rows``, in that order, as a ``datasets.Dataset`` with ``features``: the image column
        (the only ``datasets.Image`` feature) holds their bytes, the other columns are ``columns``.

        Parameters
        ----------
        split : str
            The split's name (its file's name; the data set's ``split``).
        rows : sequence of int
            Spill row numbers (:meth:`add`), in the split's order.
        columns : mapping
            Every other feature's values, one per row of ``rows``.
        features : datasets.Features
            The data set's features: one ``Image`` column and ``columns``.

        Returns
        -------
        datasets.Dataset
            Its image bytes mapped from a file of this spill's folder, the same table ``from_dict`` makes.
        """
        import datasets

        rows = np.asarray(rows, dtype=np.int64)
        image = next(k for k, f in features.items() if isinstance(f, datasets.Image))
        n = int(rows.size)
        placeholder = {k: ([{"bytes": b"", "path": None}] * n if k == image else list(columns[k])) for k in features}
        frame = datasets.Dataset.from_dict(placeholder, features=features, split=split)
        data, digest = self._arrange(split, rows)
        sizes = np.frombuffer(self._sizes, dtype=np.int64)[rows] if n else np.zeros(0, np.int64)
        column = _image_column(frame.data.table.column(image).chunk(0), sizes, data)
        table = frame.data.table.set_column(frame.data.table.schema.get_field_index(image), image, column)
        digest.update(frame._fingerprint.encode())
        return datasets.Dataset(datasets.table.InMemoryTable(table), info=frame.info, split=frame.split,
                                fingerprint=digest.hexdigest()[:16])

    def _arrange(self, split: str, rows: np.ndarray):
        """Copy ``rows``' images in order into ``<split>.bin`` and map it; (the map or None, the sha256 of the
        bytes and sizes)."""
        source = self._source()
        sizes = np.frombuffer(self._sizes, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        digest = hashlib.sha256(sizes[rows].tobytes())
        path = self.folder / f"{split}.bin"
        with _naming(path), open(path, "wb") as out:
            if source is not None and rows.size:
                # runs of consecutive rows are one contiguous range of the spill
                cut = np.flatnonzero(np.diff(rows) != 1) + 1
                copied = 0
                with memoryview(source) as view:
                    for run in np.split(rows, cut):
                        lo, hi = int(starts[run[0]]), int(starts[run[-1] + 1])
                        for a in range(lo, hi, COPY_BYTES):
                            with view[a : min(hi, a + COPY_BYTES)] as piece:  # released even on a full disk
                                digest.update(piece)
                                out.write(piece)
                                copied += len(piece)
                            if copied >= COPY_BYTES * 4:
                                drop_pages(source)
                                copied = 0
                drop_pages(source)
        if not os.path.getsize(path):
            return None, digest
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        _RELEASE.add(mm)
        return mm, digest

    def close(self) -> None:
        """Remove the temporary folder. Data sets already made keep their images: their files stay mapped
        (on Linux a mapped file's bytes live until it is unmapped)."""
        try:
            if not self._file.closed:
                self._file.close()
        except OSError:  # a full disk: what was written is removed below
            pass
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a view of it is still alive (an error's traceback): unmapped with it
                pass
            self._map = None
        self._remove()


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An ``OSError`` without a file name (a full disk on ``write``) raised again naming ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _image_column(frame, sizes: np.ndarray, data: mmap.mmap | None):
    """The image column of ``frame`` (an image struct column of empty bytes, as ``from_dict`` makes it) with
    ``data`` as its bytes: one chunk, the same buffers as ``from_dict`` makes from the bytes themselves, cut
    into chunks of at most :data:`MAX_CHUNK_BYTES` only when the split's images are larger than that."""
    import pyarrow as pa

    n = len(frame)
    buffer = pa.py_buffer(data) if data is not None else pa.py_buffer(b"")
    ends = np.cumsum(sizes, dtype=np.int64)
    bounds, lo = [0], 0
    while lo < n:  # rows lo:hi hold at most MAX_CHUNK_BYTES
        base = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, base + MAX_CHUNK_BYTES, "right")))
        bounds.append(hi)
        lo = hi
    if n == 0:
        bounds.append(0)
    bytes_field, path_field = frame.type.field(0), frame.type.field(1)
    chunks = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        base = int(ends[a - 1]) if a else 0
        offsets = np.concatenate([[0], ends[a:b] - base]).astype(np.int32)
        length = int(offsets[-1])
        values = pa.Array.from_buffers(bytes_field.type, b - a, [None, pa.py_buffer(offsets), buffer.slice(base, length)])
        if a == 0 and b == n:  # the whole column: keep from_dict's validity buffer and path child as they are
            chunks.append(pa.StructArray.from_buffers(frame.type, n, [frame.buffers()[0]],
                                                      children=[values, frame.field(path_field.name)]))
        else:
            chunks.append(pa.StructArray.from_arrays([values, frame.field(path_field.name).slice(a, b - a)],
                                                     fields=[bytes_field, path_field]))
    return pa.chunked_array(chunks, type=frame.type)
