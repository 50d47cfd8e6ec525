"""Gamut-mapping stage (HeteroSwitch Table 3, row "Gamut mapping").

Input: float32 (H, W, 3) white-balanced linear camera RGB. Output: float32 linear RGB in the
output colour space. Every variant is one 3x3 matrix, applied with :func:`cv2.transform` in
float32 (about 0.03 s at 12 MP, against about 0.3 s for a numpy matmul). Nothing is clipped:
out-of-gamut colours keep their negative or > 1 components, and the tone stage clips.

Variants:

* ``srgb`` (baseline): camera RGB -> linear sRGB (IEC 61966-2-1, D65) with
  ``ctx.camera_to_srgb`` (see ``RawCapture.camera_to_srgb``: the inverse of the row-normalised
  ColorMatrix1 @ M_sRGB->XYZ, as in dcraw and the DNG spec).
* ``none`` (option 1, '-' in Table 3): camera RGB is passed on unchanged. The tone stage then
  encodes the sensor's own primaries as if they were sRGB.
* ``prophoto`` (option 2): camera RGB -> linear sRGB -> linear ProPhoto RGB (ROMM RGB, ISO
  22028-2, D50 white), with a Bradford chromatic adaptation from D65 to D50 (Lam 1985; Süsstrunk
  et al. 1999). The sRGB -> ProPhoto matrix comes from colour-science
  (``colour.matrix_RGB_to_RGB``), computed once on first use.

The tone stage after this one applies the sRGB transfer function whatever the gamut (HeteroSwitch
uses "srgb gamma correction" in every configuration). So ProPhoto primaries are encoded with the
sRGB curve, not ROMM's own gamma of 1.8, and then read as sRGB. That desaturated look is the
heterogeneity Table 3 measures: the tone stage stays independent of the gamut stage on purpose.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from .base import StageContext, register


def _as_rgb_float32(image: np.ndarray, stage: str) -> np.ndarray:
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"{stage}: expected an (H, W, 3) image, got shape {img.shape}")
    return img.astype(np.float32, copy=False)


@lru_cache(maxsize=1)
def _srgb_to_prophoto() -> np.ndarray:
    import colour  # slow to import (about 2 s), so only on first use

    spaces = colour.RGB_COLOURSPACES
    m = colour.matrix_RGB_to_RGB(spaces["sRGB"], spaces["ProPhoto RGB"], chromatic_adaptation_transform="Bradford")
    m = np.asarray(m, dtype=np.float64).reshape(3, 3)
    m.setflags(write=False)
    return m


def srgb_to_prophoto_matrix() -> np.ndarray:
    """(3, 3) linear sRGB (D65) -> linear ProPhoto RGB (D50), Bradford adaptation (a copy)."""
    return _srgb_to_prophoto().copy()


def camera_to_prophoto_matrix(camera_to_srgb: np.ndarray) -> np.ndarray:
    """(3, 3) white-balanced camera RGB -> linear ProPhoto RGB: M_sRGB->ProPhoto @ camera_to_srgb."""
    return _srgb_to_prophoto() @ _matrix(camera_to_srgb)


def _matrix(m) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.shape != (3, 3) or not np.all(np.isfinite(m)):
        raise ValueError(f"gamut: expected a finite 3x3 colour matrix, got {m!r}")
    return m


def apply_matrix(image: np.ndarray, matrix) -> np.ndarray:
    """out[..., i] = sum_j matrix[i, j] * image[..., j], in float32, via cv2.transform."""
    img = np.ascontiguousarray(_as_rgb_float32(image, "gamut"))
    m = _matrix(matrix)
    if img.size == 0:
        return img.copy()
    return cv2.transform(img, m.astype(np.float32))


@register("gamut", "srgb", "camera RGB -> linear sRGB (IEC 61966-2-1, D65) with the capture's matrix", "baseline")
def _apply_srgb(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    return apply_matrix(image, ctx.camera_to_srgb)


@register("gamut", "none", "no gamut mapping: camera RGB passed on", "option1")
def _apply_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    return _as_rgb_float32(image, "gamut")


@register(
    "gamut",
    "prophoto",
    "camera RGB -> linear sRGB -> linear ProPhoto RGB (ROMM, D50; Bradford adaptation)",
    "option2",
)
def _apply_prophoto(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    return apply_matrix(image, camera_to_prophoto_matrix(ctx.camera_to_srgb))
