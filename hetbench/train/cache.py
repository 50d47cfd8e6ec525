"""The decoded-image cache: every image of a split decoded once, by a pool of processes, into a
memory-mapped uint8 ``(N, C, S, S)`` array on disk that later runs and every seed of a sweep reuse.

Where: ``cache_dir`` (``--cache-dir``) if given, else ``$HETBENCH_CACHE``, else ``<split>/.hetbench-cache/``
for a split folder, else ``$XDG_CACHE_HOME/hetbench/train`` (``~/.cache/hetbench/train``) for a hub id.
Each decoded split part is two files, ``<name>-<part>-<key>.npy`` (a NumPy array file, opened with
``mmap_mode="r"``) and ``<name>-<part>-<key>.json`` (its meta: shape, rows, the identity it was decoded
from, CRC-32 of every block, per-channel mean and std). ``key`` hashes the identity: the split's fingerprint
and shard digests, the part, the rows kept, the image size and channels asked for and
:data:`CACHE_VERSION`. A file that is missing, truncated, corrupt (a block's CRC differs) or made from
another identity is rebuilt, never trusted.

Writing is atomic: both files are written in a pid-marked temporary folder (:func:`hetbench.tempdirs.temp_dir`)
and renamed into place, the array first; two runs decoding the same split at once write the same bytes,
and the last rename wins.

Decoding, per image, is the trainer's since before the cache (so results do not change): a split whose
images are all grayscale (PIL mode ``L``) keeps one channel, any other becomes RGB (grayscale images
repeated); images are resized to ``image_size`` with area interpolation when shrinking and bilinear when
growing. A block of rows is decoded by one process and written at its offset, so the file's bytes do
not depend on the number of processes. Decode workers map the split's Arrow files themselves and drop
the pages they read after every block, so no process holds the encoded or the decoded split.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.train.decode import BlockJob, Decoder, ImageSource, decode_task, image_source, release_pages, scan_task

CACHE_VERSION = 1
CACHE_FOLDER = ".hetbench-cache"
#: float64 elements of one block of the channel statistics: 2048 rows up to 3 x 32 x 32 images
STATS_ELEMENTS = 2048 * 3 * 32 * 32


def block_rows(channels: int, size: int) -> int:
    """Rows per decode block and per block of the channel statistics (2048 for images of up to 3x32x32).

    Examples
    --------
    >>> block_rows(1, 28), block_rows(3, 64), block_rows(3, 224)
    (2048, 512, 41)
    """
    return max(1, min(2048, STATS_ELEMENTS // (channels * size * size)))


def cache_folder(split: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where the decoded images of ``split`` are cached (see the module docstring).

    Examples
    --------
    >>> cache_folder("my-split", cache_dir="/tmp/decoded").as_posix()
    '/tmp/decoded'
    """
    if cache_dir:
        return Path(cache_dir).expanduser()
    if os.environ.get("HETBENCH_CACHE"):
        return Path(os.environ["HETBENCH_CACHE"]).expanduser()
    path = Path(split).expanduser()
    if path.exists():
        return (path if path.is_dir() else path.parent) / CACHE_FOLDER
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "hetbench" / "train"


# -- the cache files ----------------------------------------------------------------------------------


def _npy_header(shape: tuple[int, ...]) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "|u1", "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def cache_stem(folder: Path, name: str, part: str, identity: dict) -> Path:
    """``folder/<name>-<part>-<key>``: the key hashes ``identity`` (sorted JSON)."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:60] or "split"
    return folder / f"{safe}-{part}-{key}"


def _with(stem: Path, suffix: str) -> Path:
    """``stem`` + ``suffix`` (a split's name may hold dots, so not ``Path.with_suffix``)."""
    return stem.with_name(stem.name + suffix)


def load_cached(stem: Path, identity: dict) -> tuple[np.ndarray, dict] | None:
    """The cached array (read-only ``np.memmap``) and meta of ``stem``, or None when they are missing, were
    made from another identity, or the array file is truncated or corrupt (every block's CRC-32 is checked)."""
    try:
        meta = json.loads(_with(stem, ".json").read_text())
        if not isinstance(meta, dict) or meta.get("identity") != identity or meta.get("dtype") != "uint8":
            return None
        shape = tuple(int(v) for v in meta["shape"])
        per_block, crcs = int(meta["block_rows"]), [int(c) for c in meta["block_crc32"]]
        row_bytes = int(np.prod(shape[1:]))
        header = _npy_header(shape)
        with open(_with(stem, ".npy"), "rb") as f:
            if os.fstat(f.fileno()).st_size != len(header) + shape[0] * row_bytes or f.read(len(header)) != header:
                return None
            if per_block < 1 or len(crcs) != -(-shape[0] // per_block):
                return None
            buf = memoryview(bytearray(per_block * row_bytes))
            for b, crc in enumerate(crcs):
                view = buf[: min(per_block, shape[0] - b * per_block) * row_bytes]
                if f.readinto(view) != len(view) or zlib.crc32(view) != crc:
                    return None
        array = np.load(_with(stem, ".npy"), mmap_mode="r")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (array, meta) if array.shape == shape and array.dtype == np.uint8 else None


def _writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise HetbenchError(
            f"cannot write the decoded-image cache in '{folder}' ({exc.strerror or type(exc).__name__}); pass "
            "--cache-dir DIR (or set HETBENCH_CACHE) to keep it elsewhere"
        ) from None


def scan(source: ImageSource, image_size: int | None, decoder: Decoder, desc: str, quiet: bool,
         chunk: int = 2048) -> tuple[bool, int]:
    """(every image is grayscale, the side to decode to): ``image_size``, else the one size all images share
    (refusing mixed sizes and non-square images)."""
    from hetbench.progress import progress_bar

    n = source.num_rows
    tasks = [(source, a, min(a + chunk, n), desc) for a in range(0, n, chunk)]
    gray, sizes = True, set()
    with progress_bar(f"reading {desc} images", n, quiet=quiet) as bar:
        for (_, a, b, _), (g, s) in zip(tasks, decoder.map(scan_task, tasks, n, source.table is not None)):
            gray, sizes = gray and g, sizes | s
            bar.update(advance=b - a)
    if image_size is None and sizes:
        if len(sizes) > 1:
            raise HetbenchError(f"{desc} images have {len(sizes)} different sizes; pass --image-size to resize them to one")
        h, w = next(iter(sizes))
        if h != w:
            raise HetbenchError(f"{desc} images are {w}x{h}, not square; pass --image-size to resize them")
        image_size = h
    return gray, int(image_size or 1)


def decoded_images(
    source: ImageSource,
    folder: Path,
    name: str,
    part: str,
    identity: dict,
    rows: np.ndarray,
    image_size: int | None,
    channels: int | None,
    decoder: Decoder,
    quiet: bool = True,
    stats: bool = False,
    rows_per_block: int | None = None,
) -> tuple[np.ndarray, dict]:
    """Rows ``rows`` (sorted) of ``source`` decoded to uint8 ``(len(rows), C, S, S)``: from the cache when a
    valid one exists, else decoded now (every source row is checked, the ``rows`` are decoded) and cached.

    Parameters
    ----------
    source : ImageSource
        The part's image column (:func:`image_source`).
    folder : Path
        The cache folder (:func:`cache_folder`); created when a cache must be written.
    name, part : str
        The split's name and the part (``train`` / ``test``), for the file names and messages.
    identity : dict
        What the data come from (fingerprints, JSON values); the cache key hashes it with the rest.
    rows : ndarray
        The source rows to keep, ascending.
    image_size, channels : int or None
        Side and channels to decode to; None: the images' own size (all must share one) and channels.
    decoder : Decoder
        Runs the decode tasks.
    quiet : bool
        No progress bars.
    stats : bool
        Also compute the per-channel mean and std of the kept rows (in [0, 1] units, population std), the
        normalisation statistics, stored in the meta as ``mean`` / ``std``.
    rows_per_block : int, optional
        Rows per decode task and statistics block (default :func:`block_rows`).

    Returns
    -------
    (np.memmap, dict)
        The read-only array and its meta.

    Raises
    ------
    HetbenchError
        For a missing or unreadable image, mixed sizes or non-square images without ``image_size``, or a
        cache folder that cannot be written.

    Examples
    --------
    >>> import datasets, numpy as np, pathlib
    >>> from PIL import Image
    >>> ds = datasets.Dataset.from_dict({"image": [Image.new("L", (9, 9), v) for v in (0, 255)]},
    ...                                 features=datasets.Features({"image": datasets.Image()}))
    >>> x, meta = decoded_images(image_source(ds, "image"), pathlib.Path("cache"), "demo", "train", {"demo": 1},
    ...                          np.arange(2), 8, None, Decoder(1), stats=True)
    >>> x.shape, int(x[1].max()), meta["mean"]
    ((2, 1, 8, 8), 255, [0.5])
    """
    from hetbench.progress import progress_bar
    from hetbench.tempdirs import temp_dir

    identity = {**identity, "format": "hetbench-decoded-images", "version": CACHE_VERSION, "part": part,
                "column": source.column, "source_rows": source.num_rows, "image_size": image_size,
                "channels": channels, "rows": hashlib.sha256(np.asarray(rows, np.int64).tobytes()).hexdigest()}
    if rows_per_block:  # the statistics are summed per block: another block size is another cache
        identity["block_rows"] = int(rows_per_block)
    stem = cache_stem(folder, name, part, identity)
    found = load_cached(stem, identity)
    if found is not None:
        return found
    _writable(folder)
    with temp_dir(folder, f".{stem.name}.build-") as tmp:
        gray, size = scan(source, image_size, decoder, part, quiet)
        c = channels or (1 if gray else 3)
        shape = (int(rows.size), c, size, size)
        header = _npy_header(shape)
        per_block = int(rows_per_block or block_rows(c, size))
        path = tmp / "images.npy"
        with open(path, "wb") as f:
            f.write(header)
            f.truncate(len(header) + int(np.prod(shape)))
        jobs = [(BlockJob(source, rows[a : a + per_block], a, str(path), len(header), gray, size, c, stats, part),)
                for a in range(0, rows.size, per_block)]
        crcs: list[int] = []
        total, total_sq, count = np.zeros(c), np.zeros(c), 0
        results = decoder.map(decode_task, jobs, source.num_rows, source.table is not None)
        with progress_bar(f"decoding {part} images", int(rows.size), quiet=quiet) as bar:
            for (job,), (crc, sums, squares, n) in zip(jobs, results):
                crcs.append(crc)
                if sums is not None:
                    total += sums
                    total_sq += squares
                    count += n
                bar.update(advance=int(job.rows.size))
        with open(path, "rb+") as f:
            os.fsync(f.fileno())
        meta: dict[str, Any] = {"identity": identity, "shape": list(shape), "dtype": "uint8", "rows": shape[0],
                                "channels": c, "image_size": size, "block_rows": per_block, "block_crc32": crcs}
        if stats:
            mean = total / max(count, 1)
            std = np.sqrt(np.maximum(total_sq / max(count, 1) - mean**2, 1e-12))
            meta.update(mean=[float(v) for v in mean], std=[float(v) for v in std])
        (tmp / "meta.json").write_text(json.dumps(meta) + "\n")
        os.replace(path, _with(stem, ".npy"))  # the array first: a meta always names a complete array
        os.replace(tmp / "meta.json", _with(stem, ".json"))
    return np.load(_with(stem, ".npy"), mmap_mode="r"), meta


__all__ = ["CACHE_FOLDER", "CACHE_VERSION", "Decoder", "block_rows", "cache_folder", "decoded_images", "image_source",
           "load_cached", "release_pages"]
