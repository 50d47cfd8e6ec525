"""``color-hist``: a 16-bin histogram of each RGB channel, normalised (48 numbers per image)."""

from __future__ import annotations

import numpy as np

from hetbench.embed.images import embed_images

BINS = 16


def color_histograms(batch: list[np.ndarray]) -> np.ndarray:
    """Per image, the 16-bin histograms of R, G and B concatenated, each summing to 1:
    ``(len(batch), 48)`` float32.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.embed.color_hist import color_histograms
    >>> h = color_histograms([np.zeros((4, 4, 3), np.uint8)])
    >>> h.shape, h[0, [0, 16, 32]].tolist()
    ((1, 48), [1.0, 1.0, 1.0])
    """
    feats = []
    for im in batch:
        h = [np.bincount((im[..., c].ravel() >> 4).astype(np.int64), minlength=BINS) for c in range(3)]
        v = np.concatenate(h).astype(np.float32)
        feats.append(v / max(v.sum() / 3.0, 1.0))
    return np.stack(feats)


def embed_color_hist(table, split: str, quiet: bool = True, engine=None) -> np.ndarray:
    """``color-hist``: the (n, 48) colour-histogram embedding of ``split``.

    Parameters
    ----------
    table : SampleTable
        The source table; ``split`` must have an image column.
    split : str
        The split to embed.
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
    >>> embed_table(t, "train", "color-hist").shape
    (6, 48)
    """
    return embed_images(table.splits[split], color_histograms, "color-hist", quiet, engine)
