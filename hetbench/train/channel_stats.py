"""Per-channel mean and standard deviation of uint8 images ``(N, C, H, W)`` in [0, 1] units, added up block
by block so the float copy never holds a whole split: the normalisation every model input gets.

Three callers add the same sums: the decode workers, over each block of rows they write into the cache
(:mod:`hetbench.train.decode`, finished by :mod:`hetbench.train.cache`); :func:`hetbench.train.data.
channel_stats`, over a decoded array; and :func:`hetbench.train.groups.row_stats`, over a group's rows. The
same blocks in the same order give the same bits.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


def channel_sums(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The per-channel sums of ``x`` and ``x**2`` of uint8 images ``(N, C, H, W)`` scaled to [0, 1], and the
    values each channel counted (``N * H * W``).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.train.channel_stats import channel_sums
    >>> sums, squares, count = channel_sums(np.array([[[[0, 255]]], [[[255, 255]]]], dtype=np.uint8))
    >>> sums.tolist(), squares.tolist(), count
    ([3.0], [3.0], 4)
    """
    part = np.asarray(block).reshape(block.shape[0], block.shape[1], -1).astype(np.float64) / 255.0
    return part.sum(axis=(0, 2)), (part**2).sum(axis=(0, 2)), part.shape[0] * part.shape[2]


def channel_moments(total: np.ndarray, total_sq: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean and the (population) standard deviation from :func:`channel_sums` added up (the variance
    floored at 1e-12, so a constant channel divides by 1e-6, not 0).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.train.channel_stats import channel_moments
    >>> mean, std = channel_moments(np.array([3.0]), np.array([3.0]), 4)
    >>> float(mean[0]), round(float(std[0]), 4)
    (0.75, 0.433)
    """
    mean = total / max(count, 1)
    return mean, np.sqrt(np.maximum(total_sq / max(count, 1) - mean**2, 1e-12))


def blocks_stats(blocks: Iterable[np.ndarray], channels: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`channel_moments` of the sums of every block of ``blocks`` (uint8 ``(n, channels, H, W)``).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.train.channel_stats import blocks_stats
    >>> x = np.array([[[[0, 255]]], [[[255, 255]]]], dtype=np.uint8)
    >>> [round(float(v[0]), 4) for v in blocks_stats([x[:1], x[1:]], 1)]
    [0.75, 0.433]
    """
    total, total_sq, count = np.zeros(channels), np.zeros(channels), 0
    for block in blocks:
        sums, squares, n = channel_sums(block)
        total += sums
        total_sq += squares
        count += n
    return channel_moments(total, total_sq, count)
