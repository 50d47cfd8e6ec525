"""``pixels`` / ``pixels:S``: the image itself as its embedding (resized, RGB in [0, 1], flattened)."""

from __future__ import annotations

import functools

import numpy as np

from hetbench.embed.images import embed_images, resize
from hetbench.errors import HetbenchError

DEFAULT_SIDE = 16


def pixel_features(batch: list[np.ndarray], side: int = DEFAULT_SIDE) -> np.ndarray:
    """Every image resized to ``side`` x ``side`` (:func:`~hetbench.embed.images.resize`), RGB
    scaled to [0, 1], flattened: ``(len(batch), 3 * side * side)`` float32.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.embed.pixels import pixel_features
    >>> pixel_features([np.full((8, 8, 3), 255, np.uint8)], side=4).tolist()[0][:3]
    [1.0, 1.0, 1.0]
    """
    return np.stack([resize(im, side).reshape(-1) for im in batch]).astype(np.float32) / 255.0


def pixel_side(arg: str, *, given: bool = False) -> int:
    """The side S of ``pixels:S``: an integer from 2 to 256; ``arg`` empty means the default 16 unless
    ``given`` (the spec had a colon: ``pixels:`` names no side and is refused).

    Parameters
    ----------
    arg : str
        What follows ``pixels:``.
    given : bool
        Whether the spec had the colon.

    Returns
    -------
    int

    Examples
    --------
    >>> from hetbench.embed.pixels import pixel_side
    >>> pixel_side(""), pixel_side("8")
    (16, 8)
    >>> pixel_side("8.5")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: pixels:S needs a whole number S from 2 to 256 (got '8.5')
    """
    text = str(arg).strip()
    if not text and not given:
        return DEFAULT_SIDE
    if not text.isdigit() or not 2 <= int(text) <= 256:
        raise HetbenchError(f"pixels:S needs a whole number S from 2 to 256 (got {text!r})")
    return int(text)


def embed_pixels(table, split: str, arg: str = "", quiet: bool = True, engine=None) -> np.ndarray:
    """``pixels[:S]``: the (n, 3 S^2) raw-pixel embedding of ``split`` (S = 16 by default).

    Parameters
    ----------
    table : SampleTable
        The source table; ``split`` must have an image column.
    split : str
        The split to embed.
    arg : str
        ``S``, the side the images are resized to (2 to 256); empty for 16.
    quiet : bool
        No progress bar.
    engine : EngineSpec, optional
        What embeds the batches (:func:`~hetbench.embed.images.embed_images`).

    Examples
    --------
    >>> from hetbench.embed import embed_table
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> t.splits["train"] = t.splits["train"].select(range(6))
    >>> embed_table(t, "train", "pixels:4").shape
    (6, 48)
    """
    side = pixel_side(arg)
    return embed_images(table.splits[split], functools.partial(pixel_features, side=side), "pixels", quiet, engine)
