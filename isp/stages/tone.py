"""Tone stage (HeteroSwitch Table 3, row "Tone transformation").

Input: float32 (H, W, 3) linear RGB (output of the gamut stage). Output: uint8 (H, W, 3)
display-referred RGB. Values are clipped to [0, 1] first (+inf -> 255, -inf -> 0; NaN is not
meaningful input and gives 0).

Variants:

* ``srgb-gamma`` (baseline): the sRGB transfer function of IEC 61966-2-1:1999 (Stokes et al.
  1996): V = 12.92 L for L <= 0.0031308, else 1.055 L^(1/2.4) - 0.055, rounded to 8 bits.
* ``none`` (option 1, '-' in Table 3): linear, round(255 L).
* ``srgb-gamma+equalize`` (option 2): ``srgb-gamma``, then contrast-limited adaptive histogram
  equalisation (CLAHE; Zuiderveld 1994, Graphics Gems IV) on the lightness channel L* of CIELAB,
  with chroma untouched. See :func:`equalize`.

The tone stage ignores the gamut stage: HeteroSwitch applies "srgb gamma correction" in every
configuration, so ProPhoto or camera-RGB data are encoded with the sRGB curve as well.

Speed: the transfer function is never evaluated per pixel. The clipped image is quantised to a
16-bit index by :func:`hetbench.isp.quantise.quantise` (the exact product, rounded half to even and
saturated: the same bits on every CPU and OpenCV release), then mapped through a 65536-entry uint8
LUT: ``cv2.LUT`` where OpenCV supports 16-bit sources (5.x), else ``numpy.take``. The 16-bit
index changes the result by at most 12.92 * 255 / 65535 / 2 ~= 0.025 LSB, so it agrees with the
exact curve except within 0.025 LSB of a rounding tie.

``VARIANTS`` lists the variants.

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 3 (row "Tone transformation").
.. [2] IEC 61966-2-1:1999 (sRGB); Stokes et al. 1996 (see :mod:`hetbench.isp.transfer`).
.. [3] K. Zuiderveld, "Contrast Limited Adaptive Histogram Equalization", Graphics Gems IV, 1994.
"""

from __future__ import annotations

import cv2
import numpy as np

from hetbench.isp.quantise import quantise
from hetbench.isp.srgb_tables import encode_lut

from .base import StageContext, StageVariant, as_rgb_float32, stage_variants

#: CLAHE parameters: see :func:`equalize`.
CLAHE_CLIP_LIMIT = 2.0
CLAHE_TILE_GRID = (8, 8)

_LUT_SIZE = 65536


#: round(255 * srgb_encode(i / 65535)), stored (hetbench.isp.srgb_tables): workers need not import colour
_SRGB_LUT = encode_lut()


def _cv2_has_lut16() -> bool:
    try:
        out = cv2.LUT(np.array([[0, 65535]], dtype=np.uint16), np.arange(_LUT_SIZE, dtype=np.uint32).astype(np.uint8))
    except cv2.error:
        return False
    return out.dtype == np.uint8 and out.tolist() == [[0, 255]]


_HAS_LUT16 = _cv2_has_lut16()


def apply_lut16(index: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """``lut[index]`` for a uint16 index array and a 65536-entry uint8 LUT.

    Parameters
    ----------
    index : numpy.ndarray
        uint16 indices.
    lut : numpy.ndarray
        uint8 (65536,) table.

    Returns
    -------
    numpy.ndarray
        uint8, the shape of ``index``.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.tone import apply_lut16
    >>> lut = (np.arange(65536) >> 8).astype(np.uint8)
    >>> apply_lut16(np.array([[0, 256, 65535]], np.uint16), lut).tolist()
    [[0, 1, 255]]
    """
    if _HAS_LUT16:
        return cv2.LUT(index, lut)
    return np.take(lut, index)


def _tone_input(image: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(as_rgb_float32(image, "tone"))


def srgb_gamma(image: np.ndarray) -> np.ndarray:
    """Linear RGB (float) -> sRGB-encoded uint8 (IEC 61966-2-1), after clipping to [0, 1].

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear RGB.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3): ``round(255 * srgb_encode(clip(x, 0, 1)))`` through a 16-bit LUT.

    References
    ----------
    IEC 61966-2-1:1999; Stokes et al. 1996.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.tone import srgb_gamma
    >>> srgb_gamma(np.full((4, 4, 3), (0.0, 0.18, 1.0), np.float32))[0, 0].tolist()
    [0, 118, 255]
    """
    img = _tone_input(image)
    if img.size == 0:
        return np.zeros(img.shape, dtype=np.uint8)
    return apply_lut16(quantise(img, _LUT_SIZE - 1, np.uint16), _SRGB_LUT)


def linear(image: np.ndarray) -> np.ndarray:
    """Linear RGB (float) -> round(255 * clip(x, 0, 1)) as uint8, with no transfer function.

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear RGB.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.tone import linear
    >>> linear(np.full((4, 4, 3), (-1.0, 0.18, 2.0), np.float32))[0, 0].tolist()
    [0, 46, 255]
    """
    img = _tone_input(image)
    if img.size == 0:
        return np.zeros(img.shape, dtype=np.uint8)
    return quantise(img, 255, np.uint8)


def equalize(
    image: np.ndarray, *, clip_limit: float = CLAHE_CLIP_LIMIT, tile_grid: tuple[int, int] = CLAHE_TILE_GRID
) -> np.ndarray:
    """sRGB gamma, then CLAHE (Zuiderveld 1994) on L* of CIELAB, back to sRGB uint8.

    ``cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8))``:

    * ``tileGridSize=(8, 8)`` is OpenCV's default. The image is cut into 8 x 8 contextual
      regions whatever its size (375 x 500 pixels each at 12 MP), so the result does not depend
      on resolution.
    * ``clipLimit=2.0`` caps every tile's histogram at 2x the uniform bin height, and the excess
      is spread over all bins. This bounds the slope of the mapping to about 2, so noise in flat
      regions is not amplified. OpenCV's default of 40 is close to plain adaptive HE. 2.0 is
      the usual moderate setting in OpenCV's CLAHE tutorial and elsewhere.

    Only lightness changes: the 8-bit Lab conversion (OpenCV ``COLOR_RGB2Lab``, which treats its
    input as sRGB-encoded, D65) keeps a* and b*. The conversion quantises L* to 100/255 and a*,
    b* to 1 unit, which is well below the effect of the equalisation.

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear RGB.
    clip_limit : float, optional
        CLAHE clip limit.
    tile_grid : tuple of int, optional
        CLAHE tiles (rows, columns).

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3) sRGB.

    References
    ----------
    Zuiderveld 1994, Graphics Gems IV; HeteroSwitch (MLSys 2024) Table 3, "Tone transformation",
    Option 2.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.tone import equalize
    >>> ramp = np.repeat(np.linspace(0.1, 0.2, 16, dtype=np.float32)[None, :, None], 16, axis=0)
    >>> out = equalize(np.repeat(ramp, 3, axis=2))
    >>> out.shape, out.dtype, int(out.max()) - int(out.min()) > 20  # the narrow ramp is stretched
    ((16, 16, 3), dtype('uint8'), True)
    """
    rgb8 = srgb_gamma(image)
    if rgb8.size == 0:
        return rgb8
    lab = cv2.cvtColor(rgb8, cv2.COLOR_RGB2Lab)
    lightness, a, b = cv2.split(lab)
    clahe = cv2.createCLAHE(clipLimit=float(clip_limit), tileGridSize=tuple(int(t) for t in tile_grid))
    lab = cv2.merge((clahe.apply(lightness), a, b))
    return cv2.cvtColor(lab, cv2.COLOR_Lab2RGB)


def tone_srgb_gamma(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Tone ``srgb-gamma`` (Table 3 baseline): :func:`srgb_gamma`.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear RGB.
    ctx : StageContext
        Unused.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3) sRGB-encoded.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Tone transformation", Baseline (Stokes 1996; IEC 61966-2-1).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.tone import tone_srgb_gamma
    >>> tone_srgb_gamma(np.full((4, 4, 3), 0.5, np.float32), StageContext())[0, 0].tolist()
    [188, 188, 188]
    """
    return srgb_gamma(image)


def tone_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Tone ``none`` (Table 3 option 1, '-'): :func:`linear`, round(255 x).

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear RGB.
    ctx : StageContext
        Unused.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Tone transformation", Option 1 (stage omitted).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.tone import tone_none
    >>> tone_none(np.full((4, 4, 3), 0.5, np.float32), StageContext())[0, 0].tolist()
    [128, 128, 128]
    """
    return linear(image)


def tone_srgb_gamma_equalize(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Tone ``srgb-gamma+equalize`` (Table 3 option 2): :func:`equalize` (sRGB gamma, then CLAHE on L*).

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear RGB.
    ctx : StageContext
        Unused.

    Returns
    -------
    numpy.ndarray
        uint8 (H, W, 3) sRGB.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Tone transformation", Option 2 ("+tone Equalization");
    Zuiderveld 1994.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.tone import tone_srgb_gamma_equalize
    >>> tone_srgb_gamma_equalize(np.full((4, 4, 3), 0.5, np.float32), StageContext()).dtype
    dtype('uint8')
    """
    return equalize(image)


VARIANTS = stage_variants(
    "tone",
    StageVariant("tone", "srgb-gamma", tone_srgb_gamma,
                 "sRGB transfer function (IEC 61966-2-1; Stokes et al. 1996), 8-bit", "baseline"),
    StageVariant("tone", "none", tone_none, "no tone curve: linear round(255 x)", "option1"),
    StageVariant("tone", "srgb-gamma+equalize", tone_srgb_gamma_equalize,
                 "sRGB gamma, then CLAHE (Zuiderveld 1994; clip 2.0, 8x8 tiles) on L* of CIELAB", "option2"),
)
