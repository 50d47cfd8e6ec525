"""Image iteration shared by every image embedder: decode a split's images once, in batches.

:func:`iter_images` yields a split's images as uint8 RGB arrays straight from the stored bytes;
:func:`embed_images` runs a batch function over them behind one progress bar; :func:`resize` is the
one resize rule (area averaging when shrinking, bilinear when enlarging). The embedders
(:mod:`hetbench.embed.pixels`, :mod:`~hetbench.embed.hog`, :mod:`~hetbench.embed.task` ...) import
this module, never the package's dispatcher.
"""

from __future__ import annotations

import io
from typing import Callable, Iterator

import numpy as np

from hetbench.cores import available_cores
from hetbench.errors import HetbenchError

BATCH = 256


class UnreadableImage(HetbenchError):
    """A row whose image cannot be decoded (missing, truncated, not an image): one line naming the row."""


def image_column(ds) -> str:
    """The first ``Image`` column of ``ds``; an error that names the columns when it has none."""
    col = next((c for c, f in ds.features.items() if type(f).__name__ == "Image"), None)
    if col is None:
        raise HetbenchError(
            f"no image column to embed (columns: {', '.join(ds.column_names)}); use `embedder` column:NAME for "
            "precomputed embeddings"
        )
    return col


def iter_encoded(ds, batch: int = BATCH) -> Iterator[list[dict]]:
    """A split's stored images, undecoded (``{"bytes": ..., "path": ...}``), in batches.

    Examples
    --------
    >>> from hetbench.embed.images import iter_encoded
    >>> from hetbench.sources import load_table
    >>> ds = load_table("builtin:digits").splits["train"].select(range(3))
    >>> [len(b) for b in iter_encoded(ds, batch=2)], sorted(next(iter_encoded(ds))[0])
    ([2, 1], ['bytes', 'path'])
    """
    col = image_column(ds)
    table = ds.with_format("arrow")
    for start in range(0, len(ds), batch):
        yield table[start : start + batch][col].to_pylist()


def decode(item: dict, row: int | None = None, split: str | None = None) -> np.ndarray:
    """One stored image (its bytes, else its file) as a uint8 RGB array.

    The image is opened within hetbench's pixel bound (:func:`hetbench.image_limits.open_image`); an
    image over it, truncated, missing or not an image is a :class:`HetbenchError` that names its row
    (an embedding needs every row, so none is skipped).

    Parameters
    ----------
    item : dict
        ``{"bytes": ..., "path": ...}`` as an ``Image`` column stores it.
    row : int, optional
        Its row in the split, for the error message.
    split : str, optional
        The split's name, for the error message.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from hetbench.embed.images import decode
    >>> buf = io.BytesIO(); Image.new("L", (3, 2)).save(buf, "PNG")
    >>> decode({"bytes": buf.getvalue(), "path": None}).shape
    (2, 3, 3)
    >>> decode({"bytes": buf.getvalue()[:40], "path": None}, row=7, split="train")
    Traceback (most recent call last):
    ...
    hetbench.embed.images.UnreadableImage: row 7 of split 'train': cannot read the image (...)
    """
    from PIL import UnidentifiedImageError

    from hetbench.image_limits import open_image

    what = "an image" if row is None else f"row {row}" + (f" of split '{split}'" if split else "")
    if item is None or not (item.get("bytes") or item.get("path")):
        raise UnreadableImage(f"{what} has no image")
    try:
        with open_image(item["bytes"] if item.get("bytes") else item["path"], what) as img:
            return np.asarray(img.convert("RGB"))
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        if isinstance(exc, HetbenchError):
            raise
        reason = " ".join(str(exc).split())[:200]
        raise UnreadableImage(f"{what}: cannot read the image ({type(exc).__name__}: {reason})") from None


def embed_encoded(task: tuple) -> np.ndarray:
    """``fn(decoded batch)`` as float32 for a ``(fn, encoded batch)`` or ``(fn, encoded batch, first row,
    split)`` tuple: one engine job (an unreadable image is an error naming its row).

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from PIL import Image
    >>> from hetbench.embed.images import embed_encoded
    >>> buf = io.BytesIO(); Image.new("RGB", (2, 2), (255, 0, 0)).save(buf, "PNG")
    >>> embed_encoded((np.stack, [{"bytes": buf.getvalue(), "path": None}])).shape
    (1, 2, 2, 3)
    """
    fn, items, start, split = (*task, 0, None) if len(task) == 2 else task
    return np.asarray(fn([decode(item, start + i, split) for i, item in enumerate(items)]), dtype=np.float32)


def iter_images(ds, batch: int = BATCH) -> Iterator[list[np.ndarray]]:
    """Decoded uint8 RGB images of a split, in batches (straight from the stored bytes).

    Parameters
    ----------
    ds : datasets.Dataset
        A split with an ``Image`` column.
    batch : int
        Images per yielded list.

    Examples
    --------
    >>> from hetbench.embed.images import iter_images
    >>> from hetbench.sources import load_table
    >>> ds = load_table("builtin:digits").splits["train"].select(range(5))
    >>> [(len(b), b[0].shape) for b in iter_images(ds, batch=2)]
    [(2, (8, 8, 3)), (2, (8, 8, 3)), (1, (8, 8, 3))]
    """
    split = _split_name(ds)
    start = 0
    for items in iter_encoded(ds, batch):
        yield [decode(item, start + i, split) for i, item in enumerate(items)]
        start += len(items)


def _split_name(ds) -> str | None:
    """The name of ``ds``'s split, when the data set knows it (for error messages)."""
    name = getattr(ds, "split", None)
    return str(name) if name else None


def resize(img: np.ndarray, side: int) -> np.ndarray:
    """``img`` resized to ``side`` x ``side``: area averaging when it shrinks, bilinear otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.embed.images import resize
    >>> resize(np.zeros((8, 8, 3), np.uint8), 32).shape
    (32, 32, 3)
    """
    import cv2

    interp = cv2.INTER_AREA if min(img.shape[:2]) > side else cv2.INTER_LINEAR
    return cv2.resize(img, (side, side), interpolation=interp)


def embed_images(
    ds, fn: Callable[[list[np.ndarray]], np.ndarray], kind: str, quiet: bool = True, engine=None
) -> np.ndarray:
    """``fn`` over every batch of ``ds``'s images, concatenated to one (n, d) float32 array.

    Parameters
    ----------
    ds : datasets.Dataset
        A split with an ``Image`` column.
    fn : callable
        ``fn(list of uint8 (H, W, 3) arrays) -> (len(batch), d)`` array.
    kind : str
        The embedder's name, shown in the progress bar.
    quiet : bool
        No progress bar.
    engine : EngineSpec, optional
        ``ray``: every batch (its stored, undecoded images) is one Ray task that decodes and embeds it
        (``fn`` must then be picklable); results come back in batch order, so the embedding is the
        same array. None or ``local``: the batches are embedded here, one after the other.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.embed.images import embed_images
    >>> from hetbench.sources import load_table
    >>> ds = load_table("builtin:digits").splits["train"].select(range(3))
    >>> embed_images(ds, lambda b: np.stack([im.mean(axis=(0, 1)) for im in b]), "mean colour").shape
    (3, 3)
    """
    from hetbench.progress import progress_bar

    n = len(ds)
    parts = []
    with progress_bar(f"embedding {n:,} images ({kind})", n, quiet) as bar:
        if engine is not None and engine.name != "local":
            parts = _embed_on(engine, ds, fn, bar)
        else:
            for batch in iter_images(ds):
                parts.append(np.asarray(fn(batch), dtype=np.float32))
                bar.update(len(batch))
    return np.concatenate(parts) if parts else np.zeros((0, 1), np.float32)


def _embed_on(engine, ds, fn, bar) -> list[np.ndarray]:
    """Every batch of ``ds`` embedded as one job of ``engine`` (a local Ray instance gets every core)."""
    import os

    from hetbench.engines import open_engine

    split = _split_name(ds)
    tasks = [(fn, items, i * BATCH, split) for i, items in enumerate(iter_encoded(ds))]
    parts = []
    with open_engine(engine, available_cores(), len(tasks)) as eng:
        for part in eng.map(embed_encoded, tasks):
            parts.append(part)
            bar.update(len(part))
    return parts
