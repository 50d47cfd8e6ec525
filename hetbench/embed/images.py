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

from hetbench.errors import HetbenchError

BATCH = 256


def image_column(ds) -> str:
    """The first ``Image`` column of ``ds``; an error that names the columns when it has none."""
    col = next((c for c, f in ds.features.items() if type(f).__name__ == "Image"), None)
    if col is None:
        raise HetbenchError(
            f"no image column to embed (columns: {', '.join(ds.column_names)}); use --embedder column:NAME for "
            "precomputed embeddings"
        )
    return col


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
    from PIL import Image

    col = image_column(ds)
    table = ds.with_format("arrow")
    for start in range(0, len(ds), batch):
        out = []
        for item in table[start : start + batch][col].to_pylist():
            img = Image.open(io.BytesIO(item["bytes"])) if item.get("bytes") else Image.open(item["path"])
            out.append(np.asarray(img.convert("RGB")))
        yield out


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


def embed_images(ds, fn: Callable[[list[np.ndarray]], np.ndarray], kind: str, quiet: bool = True) -> np.ndarray:
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
        for batch in iter_images(ds):
            parts.append(np.asarray(fn(batch), dtype=np.float32))
            bar.update(len(batch))
    return np.concatenate(parts) if parts else np.zeros((0, 1), np.float32)
