"""``hog``: histograms of oriented gradients of the grey image at 32 x 32 (324 numbers per image).

References
----------
.. [1] N. Dalal and B. Triggs, "Histograms of Oriented Gradients for Human Detection", CVPR 2005.
"""

from __future__ import annotations

import numpy as np

from hetbench.embed.images import embed_images, resize

SIDE = 32


def hog_features(batch: list[np.ndarray]) -> np.ndarray:
    """scikit-image HOG (9 orientations, 8 x 8 cells, 2 x 2 blocks) of every image's grey version
    at 32 x 32: ``(len(batch), 324)`` float32.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.embed.hog import hog_features
    >>> hog_features([np.zeros((8, 8, 3), np.uint8)]).shape
    (1, 324)
    """
    import cv2
    from skimage.feature import hog

    feats = []
    for im in batch:
        grey = cv2.cvtColor(resize(im, SIDE), cv2.COLOR_RGB2GRAY)
        feats.append(hog(grey, orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2), feature_vector=True))
    return np.stack(feats).astype(np.float32)


def embed_hog(table, split: str, quiet: bool = True, engine=None) -> np.ndarray:
    """``hog``: the (n, 324) HOG embedding of ``split`` (Dalal & Triggs 2005).

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

    References
    ----------
    .. [1] N. Dalal and B. Triggs, "Histograms of Oriented Gradients for Human Detection", CVPR 2005.

    Examples
    --------
    >>> from hetbench.embed import embed_table
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> t.splits["train"] = t.splits["train"].select(range(6))
    >>> embed_table(t, "train", "hog").shape
    (6, 324)
    """
    return embed_images(table.splits[split], hog_features, "hog", quiet, engine)
