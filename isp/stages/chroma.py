"""Chroma noise reduction stage (not in HeteroSwitch Table 3; every phone ISP has one).

Input and output: uint8 (H, W, 3) display-referred RGB (after the tone stage). Brightened sensor noise
is blotchy colour more than grain: phones smooth the chroma channels, which the eye resolves far less
sharply than luma, and leave luma to the sharpening stage. Here: RGB -> YCrCb (ITU-R BT.601, full
range), a Gaussian blur of Cr and Cb, and back; Y is untouched.

Variants:

* ``blur-mild`` (baseline): Gaussian of sigma 1 pixel on Cr and Cb.
* ``none`` (extra): unchanged.
* ``blur-strong`` (extra): sigma 3 pixels, the heavy chroma smoothing of small, noisy sensors.

The sigmas are modelling assumptions (no phone publishes its ISP's): mild and strong settings a
reader can compare, chosen per device in the device profiles. OpenCV's 8-bit colour conversion and
Gaussian blur are fixed-point, so the result has the same bits on every CPU.

References
----------
.. [1] ITU-R BT.601 (the YCbCr transform OpenCV's ``COLOR_RGB2YCrCb`` implements).
.. [2] R. C. Gonzalez and R. E. Woods, *Digital Image Processing*, 4th ed., 2018, section 6.6 (smoothing
   in a luminance/chrominance space).
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import StageContext, StageVariant, stage_variants

SIGMA_MILD = 1.0
SIGMA_STRONG = 3.0


def smooth_chroma(image: np.ndarray, sigma: float) -> np.ndarray:
    """``image`` (uint8 RGB) with its Cr and Cb channels blurred by a Gaussian of ``sigma`` pixels.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.chroma import smooth_chroma
    >>> rng = np.random.default_rng(0)
    >>> img = np.full((32, 32, 3), 128, np.uint8)
    >>> img[..., 0] = rng.integers(100, 156, (32, 32))  # red noise: mostly chroma
    >>> out = smooth_chroma(img, 3.0)
    >>> int(out[..., 0].std()) < int(img[..., 0].std())
    True
    """
    img = np.ascontiguousarray(np.asarray(image, np.uint8))
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"chroma: expected an (H, W, 3) uint8 image, got shape {img.shape}")
    ycrcb = cv2.cvtColor(img, cv2.COLOR_RGB2YCrCb)
    for c in (1, 2):
        ycrcb[..., c] = cv2.GaussianBlur(np.ascontiguousarray(ycrcb[..., c]), (0, 0), sigma,
                                         borderType=cv2.BORDER_REFLECT)
    return cv2.cvtColor(ycrcb, cv2.COLOR_YCrCb2RGB)


def chroma_mild(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Chroma ``blur-mild`` (baseline): :func:`smooth_chroma` with sigma 1."""
    return smooth_chroma(image, SIGMA_MILD)


def chroma_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Chroma ``none``: the image unchanged."""
    return np.asarray(image, np.uint8)


def chroma_strong(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Chroma ``blur-strong``: :func:`smooth_chroma` with sigma 3."""
    return smooth_chroma(image, SIGMA_STRONG)


VARIANTS = stage_variants(
    "chroma",
    StageVariant("chroma", "blur-mild", chroma_mild, "chroma (Cr, Cb) Gaussian, sigma 1 px", "baseline"),
    StageVariant("chroma", "none", chroma_none, "no chroma noise reduction", "extra"),
    StageVariant("chroma", "blur-strong", chroma_strong, "chroma (Cr, Cb) Gaussian, sigma 3 px", "extra"),
)
