"""The feature-shift entry's default embedding: every training image as an S x S RGB thumbnail, decoded on
all cores, an unreadable image skipped and counted instead of failing the build.

It is the registry's ``pixels:S`` embedding (:func:`hetbench.embed.pixels.pixel_features`: area-averaged,
RGB in [0, 1], flattened H x W x 3), computed faster: PNGs are decoded by OpenCV after their size is read
from the IHDR chunk (:func:`hetbench.image_limits.decode_cv2`; about 25 us for a 32 x 32 image, against 80 us
through PIL), other formats through PIL as the registry does, in chunks spread over threads (OpenCV's decode
and resize release the GIL).
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hetbench.errors import HetbenchError

#: images per chunk handed to a thread
CHUNK = 2048


def _thumbnail(data: bytes | None, path: str | None, side: int, row: int) -> np.ndarray | None:
    from hetbench.embed.images import decode, resize
    from hetbench.image_limits import decode_cv2

    if data:
        try:
            bgr = decode_cv2(data, what=f"row {row}")
            if bgr.ndim == 3 and bgr.shape[2] == 3:
                return resize(bgr, side)[..., ::-1].reshape(-1)
        except HetbenchError:
            pass  # a format OpenCV cannot decode: PIL below, as the registry's pixels embedder reads it
    try:
        return resize(decode({"bytes": data, "path": path}, row), side).reshape(-1)
    except HetbenchError:
        return None


def _chunk(task: tuple[list, list, int, int]) -> tuple[np.ndarray, list[int]]:
    data, paths, side, start = task
    out = np.zeros((len(data), 3 * side * side), np.float32)
    bad = []
    for i, (b, p) in enumerate(zip(data, paths)):
        thumb = _thumbnail(b, p, side, start + i)
        if thumb is None:
            bad.append(start + i)
        else:
            out[i] = thumb
    return out / np.float32(255.0), bad


def _encoded(ds, col: str, chunk: int):
    """(bytes, paths) lists of the stored images, a chunk at a time, straight from Arrow."""
    table = ds.with_format("arrow")
    for start in range(0, len(ds), chunk):
        column = table[start:start + chunk][col]
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        yield column.field("bytes").to_pylist(), column.field("path").to_pylist()


def _collect(result: tuple[np.ndarray, list[int]], parts: list, bad: list, bar) -> None:
    parts.append(result[0])
    bad += result[1]
    bar.update(len(result[0]))


def pixel_thumbnails(ds, side: int = 8, *, quiet: bool = True, threads: int | None = None) -> tuple[np.ndarray, list[int]]:
    """(n, 3 side^2) float32 thumbnails of every row of ``ds`` and the rows whose image could not be read
    (their thumbnails are zeros; the caller leaves them out).

    Parameters
    ----------
    ds : datasets.Dataset
        A split with an ``Image`` column.
    side : int
        The thumbnail's side.
    quiet : bool
        No progress bar.
    threads : int, optional
        Decoding threads (default: the cores this process may use).

    Raises
    ------
    HetbenchError
        ``ds`` has no image column.

    Examples
    --------
    >>> from hetbench.embed import embed_table
    >>> from hetbench.report.thumbnails import pixel_thumbnails
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> thumbs, bad = pixel_thumbnails(t.splits["train"].select(range(50)))
    >>> t.splits["train"] = t.splits["train"].select(range(50))
    >>> thumbs.shape, bad, bool(abs(thumbs - embed_table(t, "train", "pixels:8")).max() <= 1 / 255)
    ((50, 192), [], True)
    """
    from hetbench.cores import available_cores
    from hetbench.embed.images import image_column
    from hetbench.progress import progress_bar

    col = image_column(ds)  # no image column: one line naming the columns
    n = len(ds)
    workers = max(1, threads or available_cores())
    parts, bad = [], []
    with progress_bar(f"feature shift: {n:,} thumbnails", n, quiet) as bar, ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()  # at most two chunks a thread in flight: the encoded images are streamed
        for start, (data, paths) in zip(range(0, n, CHUNK), _encoded(ds, col, CHUNK)):
            pending.append(pool.submit(_chunk, (data, paths, side, start)))
            while len(pending) >= 2 * workers or (pending and pending[0].done()):
                _collect(pending.popleft().result(), parts, bad, bar)
        while pending:
            _collect(pending.popleft().result(), parts, bad, bar)
    return (np.concatenate(parts) if parts else np.zeros((0, 3 * side * side), np.float32)), bad


def colour_stats(embedding: np.ndarray, unit_of_row: np.ndarray, num_units: int) -> dict[str, np.ndarray]:
    """Mean R, G, B and luma (Rec. 709 weights on the stored, gamma-encoded values), in [0, 1], per unit,
    from a ``pixels:S`` embedding (RGB thumbnails, flattened H x W x 3).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.thumbnails import colour_stats
    >>> thumbs = np.array([[1.0, 0.0, 0.0] * 4, [0.0, 0.0, 1.0] * 4])
    >>> {k: v.round(3).tolist() for k, v in colour_stats(thumbs, np.array([0, 1]), 2).items()}
    {'mean_r': [1.0, 0.0], 'mean_g': [0.0, 0.0], 'mean_b': [0.0, 1.0], 'luma': [0.213, 0.072]}
    """
    rgb = np.asarray(embedding, np.float64).reshape(len(embedding), -1, 3).mean(axis=1)
    unit = np.asarray(unit_of_row, np.int64)
    counts = np.bincount(unit, minlength=num_units).astype(np.float64)
    out = {}
    for k, name in enumerate(("mean_r", "mean_g", "mean_b")):
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.bincount(unit, weights=rgb[:, k], minlength=num_units) / counts
    out["luma"] = 0.2126 * out["mean_r"] + 0.7152 * out["mean_g"] + 0.0722 * out["mean_b"]
    return out


__all__ = ["colour_stats", "pixel_thumbnails", "CHUNK"]
