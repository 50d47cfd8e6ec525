"""The decoded-image cache: every image of a split decoded once, by a pool of processes, into a
memory-mapped uint8 ``(N, C, S, S)`` array on disk that later runs and every seed of a sweep reuse.

Where: ``cache_dir`` (``--cache-dir``) if given, else ``$HETBENCH_CACHE``, else the user's cache folder,
``$XDG_CACHE_HOME/hetbench/train`` (``~/.cache/hetbench/train``), for a split folder and a hub id alike:
never inside the split folder (a ``--cache-dir`` there is refused), so ``train`` leaves the split folder as
it found it and a downloaded folder cannot bring a cache of its own (the ``.hetbench-cache/`` folder older
versions wrote there is never read).

Each decoded split part is two files, ``<name>-<part>-<key>.npy`` (a NumPy array file, opened with
``mmap_mode="r"``, never unpickled) and ``<name>-<part>-<key>.json`` (its meta: shape, rows, the identity
it was decoded from, per-channel mean and std, the array file's ``sha256``, taken block by block
(:mod:`hetbench.train.array_digest`), and a ``digest``). ``key`` hashes
the identity: the split's fingerprint and manifest digests, the sha256 of the very Arrow files the images
are decoded from (:func:`~hetbench.train.cache_entry.source_digest`), the part, the rows kept, the image size and channels asked for,
the Pillow and OpenCV versions and :data:`CACHE_VERSION`. ``digest`` is an HMAC-SHA256, keyed by the
identity, of the rest of the meta, so a cached array is bound to the split content it was decoded from.
An entry is used only when its meta names the same identity, the array file holds exactly the declared
uint8 array and its sha256 and the digest match; one that is edited, zeroed, truncated, pickled or made
from another identity is decoded again with one warning (:class:`CacheWarning`), never trusted. An entry
without its meta (never completed) is decoded again silently. An entry's files, key and checks are
:mod:`hetbench.train.cache_entry`'s.

Writing is atomic: both files are written in a pid-marked temporary folder (:func:`hetbench.tempdirs.temp_dir`)
and renamed into place, the array first; two runs decoding the same split at once write the same bytes,
and the last rename wins.

Decoding is :mod:`hetbench.train.decode`'s: a block of rows is decoded by one process and written at its
offset, so the file's bytes do not depend on the number of processes, and no process holds the split.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.train.array_digest import array_sha256
from hetbench.train.cache_entry import cache_stem, entry_file, load_cached, npy_header, sign_meta, source_digest
from hetbench.train.channel_stats import channel_moments
from hetbench.train.decode import BlockJob, Decoder, ImageSource, decode_task, image_source, release_pages, scan_task

CACHE_VERSION = 3  # 3: the array's sha256 is taken over its blocks' sha256 (hetbench.train.array_digest)
#: the folder inside a split folder where versions before 2 kept the cache; never read or written now
CACHE_FOLDER = ".hetbench-cache"
#: float64 elements of one block of the channel statistics: 2048 rows up to 3 x 32 x 32 images
STATS_ELEMENTS = 2048 * 3 * 32 * 32


class CacheWarning(UserWarning):
    """A cache entry that could not be trusted and is decoded again (the CLI prints it as one line)."""


def block_rows(channels: int, size: int) -> int:
    """Rows per decode block and per block of the channel statistics (2048 for images of up to 3x32x32),
    for images of ``channels`` x ``size`` x ``size``.

    Examples
    --------
    >>> block_rows(1, 28), block_rows(3, 64), block_rows(3, 224)
    (2048, 512, 41)
    """
    return max(1, min(2048, STATS_ELEMENTS // (channels * size * size)))


def default_cache_root() -> Path:
    """The user's decoded-image cache: ``$XDG_CACHE_HOME/hetbench/train`` when that variable holds an
    absolute path, else ``~/.cache/hetbench/train``.

    Examples
    --------
    >>> default_cache_root().parts[-2:]
    ('hetbench', 'train')
    """
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path("~/.cache").expanduser()
    return base / "hetbench" / "train"


def cache_folder(split: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where the decoded images of ``split`` are cached: ``cache_dir``, else ``$HETBENCH_CACHE``, else
    :func:`default_cache_root`; never inside the split folder.

    Parameters
    ----------
    split : str
        The split folder or hub id.
    cache_dir : path, optional
        The folder asked for (``--cache-dir``).

    Returns
    -------
    Path
        The cache folder (not created here).

    Raises
    ------
    HetbenchError
        When the folder is, or lies inside, the split folder.

    Examples
    --------
    >>> cache_folder("my-split", cache_dir="/tmp/decoded").as_posix()
    '/tmp/decoded'
    """
    if cache_dir:
        folder, given = Path(cache_dir).expanduser(), "`cache_dir`"
    elif os.environ.get("HETBENCH_CACHE"):
        folder, given = Path(os.environ["HETBENCH_CACHE"]).expanduser(), "$HETBENCH_CACHE"
    else:
        folder, given = default_cache_root(), "the cache folder"
    path = Path(split).expanduser()
    if path.is_dir():
        inside, top = folder.resolve(), path.resolve()
        if inside == top or top in inside.parents:
            raise HetbenchError(
                f"{given} '{folder}' lies inside the split folder '{split}'; the decoded-image cache is kept "
                "outside the split (pass another `cache_dir`, or leave it out for the user's cache folder)"
            )
    return folder


# -- the cache files ----------------------------------------------------------------------------------


def _cannot_write(folder: Path, exc: OSError) -> HetbenchError:
    return HetbenchError(f"cannot write the decoded-image cache in '{folder}' ({exc.strerror or type(exc).__name__}); "
                         "pass `cache_dir` DIR (or set HETBENCH_CACHE) to keep it elsewhere")


def _writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}-{os.urandom(4).hex()}"  # two loads at once in one process: two probes
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise _cannot_write(folder, exc) from None


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
            raise HetbenchError(f"{desc} images have {len(sizes)} different sizes; pass `image_size` to resize them to one")
        h, w = next(iter(sizes))
        if h != w:
            raise HetbenchError(f"{desc} images are {w}x{h}, not square; pass `image_size` to resize them")
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
    An entry that exists but fails its checks (:func:`load_cached`) is decoded again after one
    :class:`CacheWarning`.

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
        cache folder that cannot be written (read-only, full).

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
    identity = {**identity, "format": "hetbench-decoded-images", "version": CACHE_VERSION, "part": part,
                "column": source.column, "source_rows": source.num_rows, "source_sha256": source_digest(source),
                "image_size": image_size, "channels": channels, "decoders": _decoder_versions(),
                "rows": hashlib.sha256(np.asarray(rows, np.int64).tobytes()).hexdigest()}
    if rows_per_block:  # the statistics are summed per block: another block size is another cache
        identity["block_rows"] = int(rows_per_block)
    stem = cache_stem(folder, name, part, identity)
    found, damage = load_cached(stem, identity)
    if found is not None:
        return found
    if damage:
        warnings.warn(f"the decoded-image cache of {name} ({part}) in '{folder}' cannot be trusted: {damage}; "
                      "decoding the images again", CacheWarning, stacklevel=2)
    _writable(folder)
    try:
        return _build(source, folder, stem, identity, rows, image_size, channels, decoder, quiet, stats,
                      rows_per_block, part)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG):
            raise
        raise _cannot_write(folder, exc) from None


def _decoder_versions() -> dict[str, str]:
    """The versions of what decodes and resizes the images (another version may give other pixels)."""
    import cv2
    import PIL

    return {"opencv": str(cv2.__version__), "pillow": str(PIL.__version__)}


def _build(source: ImageSource, folder: Path, stem: Path, identity: dict, rows: np.ndarray, image_size: int | None,
           channels: int | None, decoder: Decoder, quiet: bool, stats: bool, rows_per_block: int | None,
           part: str) -> tuple[np.ndarray, dict]:
    """Decode the entry ``stem`` of :func:`decoded_images` in a temporary folder and rename it into place."""
    from hetbench.progress import progress_bar
    from hetbench.tempdirs import temp_dir

    with temp_dir(folder, f".{stem.name}.build-") as tmp:
        gray, size = scan(source, image_size, decoder, part, quiet)
        c = channels or (1 if gray else 3)
        shape = (int(rows.size), c, size, size)
        header = npy_header(shape)
        per_block = int(rows_per_block or block_rows(c, size))
        path = tmp / "images.npy"
        with open(path, "wb") as f:
            f.write(header)
            f.truncate(len(header) + int(np.prod(shape)))
        jobs = [(BlockJob(source, rows[a : a + per_block], a, str(path), len(header), gray, size, c, stats, part),)
                for a in range(0, rows.size, per_block)]
        crcs: list[int] = []
        shas: list[bytes] = []
        total, total_sq, count = np.zeros(c), np.zeros(c), 0
        results = decoder.map(decode_task, jobs, source.num_rows, source.table is not None)
        with progress_bar(f"decoding {part} images", int(rows.size), quiet=quiet) as bar:
            for (job,), (crc, sums, squares, n, sha) in zip(jobs, results):
                crcs.append(crc)
                shas.append(sha)
                if sums is not None:
                    total += sums
                    total_sq += squares
                    count += n
                bar.update(advance=int(job.rows.size))
        with open(path, "rb+") as f:
            os.fsync(f.fileno())
        # the blocks were hashed by the decode processes: no serial pass over the array here (issue 27)
        meta: dict[str, Any] = {"identity": identity, "shape": list(shape), "dtype": "uint8", "rows": shape[0],
                                "channels": c, "image_size": size, "block_rows": per_block, "block_crc32": crcs,
                                "sha256": array_sha256(header, shas)}
        if stats:
            mean, std = channel_moments(total, total_sq, count)
            meta.update(mean=[float(v) for v in mean], std=[float(v) for v in std])
        meta["digest"] = sign_meta(meta)
        (tmp / "meta.json").write_text(json.dumps(meta) + "\n")
        os.replace(path, entry_file(stem, ".npy"))  # the array first: a meta always names a complete array
        os.replace(tmp / "meta.json", entry_file(stem, ".json"))
    return np.load(entry_file(stem, ".npy"), mmap_mode="r", allow_pickle=False), meta


__all__ = ["CACHE_FOLDER", "CACHE_VERSION", "CacheWarning", "Decoder", "block_rows", "cache_folder", "decoded_images",
           "default_cache_root", "image_source", "load_cached", "release_pages", "source_digest"]
