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

import functools

import cv2
import numpy as np

from .base import StageContext, StageVariant, stage_variants
from .tone import apply_lut16

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
    # the sharpened luma is a function of (Y, blur) only: one table lookup per pixel, index Y * 256 + blur
    index = cv2.bitwise_or(cv2.multiply(y, 256, dtype=cv2.CV_16U), blur.astype(np.uint16))
    ycrcb[..., 0] = apply_lut16(index, usm_table(amount))
    return cv2.cvtColor(ycrcb, cv2.COLOR_YCrCb2RGB)


@functools.lru_cache(maxsize=8)
def usm_table(amount: float) -> np.ndarray:
    """The unsharp-mask rule as a 65536-entry uint8 table: entry ``Y * 256 + B`` is
    ``clip(Y + ((Y - B) * a16 + 8) >> 4, 0, 255)``, a16 = round(16 * amount) (integer arithmetic).

    Examples
    --------
    >>> from hetbench.isp.stages.sharpen import usm_table
    >>> t = usm_table(0.5)
    >>> int(t[100 * 256 + 100]), int(t[100 * 256 + 90]), int(t[250 * 256 + 200]), int(t[3 * 256 + 40])
    (100, 105, 255, 0)
    """
    y, b = np.divmod(np.arange(65536, dtype=np.int32), 256)
    a16 = int(round(float(amount) * 16))
    table = np.clip(y + (((y - b) * a16 + 8) >> 4), 0, 255).astype(np.uint8)
    table.flags.writeable = False
    return table


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
