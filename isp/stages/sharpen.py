"""Sharpening stage (not in HeteroSwitch Table 3; every phone ISP has one).

Input and output: uint8 (H, W, 3) display-referred RGB (after chroma noise reduction). Unsharp masking
of luma: Y' = Y + a (Y - G_sigma * Y), in integer arithmetic (a in sixteenths, rounded, clipped to
[0, 255]); Cr and Cb are untouched, so edges gain no colour fringes. Phones sharpen in their YUV
domain after tone mapping, each vendor with its own strength.

Variants:

* ``usm-mild`` (baseline): a = 0.5, sigma 1 pixel.
* ``none`` (extra): unchanged (the soft look of a raw converter).
* ``usm-strong`` (extra): a = 1.25, sigma 1.5 pixels (the crisp look of aggressive phone sharpening).

The strengths are modelling assumptions (no phone publishes its ISP's), chosen per device in the device
profiles. OpenCV's 8-bit colour conversion and Gaussian blur are fixed-point and the rest is integer
numpy, so the result has the same bits on every CPU.

References
----------
.. [1] R. C. Gonzalez and R. E. Woods, *Digital Image Processing*, 4th ed., 2018, section 3.6 (unsharp
   masking and highboost filtering).
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import StageContext, StageVariant, stage_variants

MILD = (0.5, 1.0)  # amount, sigma (pixels)
STRONG = (1.25, 1.5)


def unsharp_luma(image: np.ndarray, amount: float, sigma: float) -> np.ndarray:
    """``image`` (uint8 RGB) with its luma unsharp-masked: Y + amount (Y - blur(Y)).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.sharpen import unsharp_luma
    >>> edge = np.zeros((8, 8, 3), np.uint8)
    >>> edge[:, 4:] = 200
    >>> out = unsharp_luma(edge, 1.0, 1.0)
    >>> int(out[0, 3, 1]) < 20, int(out[0, 4, 1]) > 200  # an overshoot on both sides of the edge
    (True, True)
    """
    img = np.ascontiguousarray(np.asarray(image, np.uint8))
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"sharpen: expected an (H, W, 3) uint8 image, got shape {img.shape}")
    ycrcb = cv2.cvtColor(img, cv2.COLOR_RGB2YCrCb)
    y = np.ascontiguousarray(ycrcb[..., 0])
    blur = cv2.GaussianBlur(y, (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    detail = y.astype(np.int32) - blur.astype(np.int32)
    a16 = int(round(float(amount) * 16))
    ycrcb[..., 0] = np.clip(y.astype(np.int32) + ((detail * a16 + 8) >> 4), 0, 255).astype(np.uint8)
    return cv2.cvtColor(ycrcb, cv2.COLOR_YCrCb2RGB)


def sharpen_mild(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Sharpen ``usm-mild`` (baseline): :func:`unsharp_luma`, amount 0.5, sigma 1."""
    return unsharp_luma(image, *MILD)


def sharpen_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Sharpen ``none``: the image unchanged."""
    return np.asarray(image, np.uint8)


def sharpen_strong(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Sharpen ``usm-strong``: :func:`unsharp_luma`, amount 1.25, sigma 1.5."""
    return unsharp_luma(image, *STRONG)


VARIANTS = stage_variants(
    "sharpen",
    StageVariant("sharpen", "usm-mild", sharpen_mild, "unsharp mask of luma, amount 0.5, sigma 1 px", "baseline"),
    StageVariant("sharpen", "none", sharpen_none, "no sharpening", "extra"),
    StageVariant("sharpen", "usm-strong", sharpen_strong, "unsharp mask of luma, amount 1.25, sigma 1.5 px", "extra"),
)
