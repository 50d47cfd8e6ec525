"""White-balance gain estimators (HeteroSwitch Table 3, row "Color transformation"): the statistics
each :mod:`hetbench.isp.stages.white_balance` variant computes its gains from.

Statistics use *non-clipped* pixels only (any channel >= 0.98 of the white level excluded; all pixels if
every one is clipped), on a strided subsample of about 0.75 MP (:func:`sample_step`). Gains are green = 1
(the DNG convention) and clamped to [1/64, 64], so a dead channel cannot give infinite gains.

References
----------
.. [1] M. Ebner, *Color Constancy*, Wiley 2007, sections 6.1 (white patch) and 6.2 (gray world).
.. [2] Adobe, *Digital Negative (DNG) Specification* 1.4, tag AsShotNeutral.
"""

from __future__ import annotations

import cv2
import numpy as np

from hetbench.order_stats import percentile as order_percentile

from .base import as_rgb_float32

#: a pixel with any channel at or above this fraction of the white level counts as clipped.
CLIP_THRESHOLD = 0.98
#: the statistics subsample keeps about this many pixels.
SAMPLE_PIXELS = 750_000
#: white-patch percentile.
WHITE_PATCH_PERCENTILE = 99.0
#: gains are clamped to [1 / GAIN_LIMIT, GAIN_LIMIT].
GAIN_LIMIT = 64.0


def sample_step(shape: tuple[int, ...], target: int = SAMPLE_PIXELS) -> int:
    """Stride of the statistics subsample: the largest step that keeps >= ``target`` pixels.

    Parameters
    ----------
    shape : tuple of int
        The image shape (H, W, ...).
    target : int, optional
        How many pixels the subsample keeps at least.

    Returns
    -------
    int
        The stride (1 or more) in each direction.

    Examples
    --------
    >>> from hetbench.isp.stages.wb_estimators import sample_step
    >>> sample_step((3024, 4032, 3)), sample_step((64, 64, 3))
    (4, 1)
    """
    n = int(shape[0]) * int(shape[1])
    return max(1, int(np.sqrt(n / target)))


def _valid_planes(image: np.ndarray, clip: float, step: int | None) -> tuple[list[np.ndarray], np.ndarray]:
    """The three channel planes of the strided subsample, and the mask of its non-clipped pixels."""
    img = as_rgb_float32(image, "wb")
    if img.size == 0:
        raise ValueError("wb: cannot estimate gains on an empty image")
    if step is None:
        step = sample_step(img.shape)
    sub = np.ascontiguousarray(img[:: max(1, int(step)), :: max(1, int(step))])
    planes = list(cv2.split(sub))
    brightest = cv2.max(cv2.max(planes[0], planes[1]), planes[2])
    valid = brightest < clip
    if not valid.any():
        valid = np.ones_like(valid)
    return planes, valid


def _gains_from_reference(ref: np.ndarray) -> np.ndarray:
    """Gains that map per-channel reference values ``ref`` to gray: ref_G / ref_c, clamped.

    A non-positive or non-finite reference gives gain 1 for that channel, or for all three if it
    is the green one.
    """
    ref = np.asarray(ref, dtype=np.float64).reshape(3)
    ok = np.isfinite(ref) & (ref > 0)
    if not ok[1]:
        return np.ones(3)
    gains = np.where(ok, ref[1] / np.where(ok, ref, 1.0), 1.0)
    return np.clip(gains, 1.0 / GAIN_LIMIT, GAIN_LIMIT)


def gray_world_gains(image: np.ndarray, *, clip: float = CLIP_THRESHOLD, step: int | None = None) -> np.ndarray:
    """Gray-world gains (R, G, B), G = 1: they make the channel means of non-clipped pixels equal.

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear camera RGB, white level 1.
    clip : float, optional
        Pixels with any channel at or above it are left out of the statistics.
    step : int, optional
        Subsample stride (``None``: :func:`sample_step`; 1 gives exact statistics over the whole
        image).

    Returns
    -------
    numpy.ndarray
        float64 (3,) gains, green = 1, clamped to [1/64, 64].

    References
    ----------
    Ebner 2007, *Color Constancy*, section 6.2 (Buchsbaum 1980).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.wb_estimators import gray_world_gains
    >>> gray_world_gains(np.full((4, 4, 3), (0.2, 0.4, 0.1), np.float32)).round(3).tolist()
    [2.0, 1.0, 4.0]
    """
    planes, valid = _valid_planes(image, clip, step)
    # float64 numpy sums: cv2.mean's vector partial sums are ordered by the CPU's vector width
    means = np.array([p[valid].mean(dtype=np.float64) if valid.any() else 0.0 for p in planes])
    return _gains_from_reference(means)


def white_patch_gains(
    image: np.ndarray,
    *,
    percentile: float = WHITE_PATCH_PERCENTILE,
    clip: float = CLIP_THRESHOLD,
    step: int | None = None,
) -> np.ndarray:
    """White-patch gains (R, G, B), G = 1: the per-channel ``percentile`` of non-clipped pixels
    maps to neutral, gains = p_G / p_c.

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear camera RGB, white level 1.
    percentile : float, optional
        The "brightest" level per channel (a high percentile instead of the maximum, for
        robustness to noise and specular outliers).
    clip : float, optional
        Pixels with any channel at or above it are left out of the statistics.
    step : int, optional
        Subsample stride (``None``: :func:`sample_step`).

    Returns
    -------
    numpy.ndarray
        float64 (3,) gains, green = 1, clamped to [1/64, 64].

    References
    ----------
    Ebner 2007, *Color Constancy*, section 6.1 (white patch retinex, Land & McCann 1971).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.wb_estimators import white_patch_gains
    >>> white_patch_gains(np.full((4, 4, 3), (0.25, 0.5, 0.125), np.float32)).round(3).tolist()
    [2.0, 1.0, 4.0]
    """
    planes, valid = _valid_planes(image, clip, step)
    # exact order statistics: numpy.percentile's float32 interpolation changed bits between numpy releases
    ref = np.array([order_percentile(p[valid], percentile) for p in planes])
    return _gains_from_reference(ref)


def camera_gains(as_shot_neutral) -> np.ndarray:
    """Camera gains (R, G, B) = 1 / AsShotNeutral, normalised to G = 1.

    A patch whose camera RGB is proportional to ``as_shot_neutral`` becomes neutral.

    Parameters
    ----------
    as_shot_neutral : array_like
        Three positive finite values: the camera RGB of a neutral under the scene light.

    Returns
    -------
    numpy.ndarray
        float64 (3,) gains, green = 1.

    References
    ----------
    Adobe DNG Specification 1.4, tag AsShotNeutral.

    Examples
    --------
    >>> from hetbench.isp.stages.wb_estimators import camera_gains
    >>> camera_gains((0.5, 1.0, 0.25)).tolist()
    [2.0, 1.0, 4.0]
    """
    n = np.asarray(as_shot_neutral, dtype=np.float64).reshape(-1)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or np.any(n <= 0):
        raise ValueError(f"as_shot_neutral must be 3 positive finite values, got {as_shot_neutral!r}")
    return n[1] / n
