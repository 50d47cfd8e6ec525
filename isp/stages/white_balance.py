"""White-balance stage (HeteroSwitch Table 3, row "Color transformation").

Input: float32 (H, W, 3) linear camera RGB, not white balanced. Output: the same, multiplied by
per-channel gains (green gain 1, the DNG convention) so that a neutral surface has R = G = B, with
highlights clipped at the smallest gain (:func:`clip_highlights`, as dcraw's highlight mode 0), so a
sensor-saturated pixel stays white instead of turning magenta. The auto-exposure gain metered before
this stage (``ctx.info["exposure_gain"]``, :mod:`hetbench.isp.exposure`; 1 when absent) is applied in
the same multiply, as a phone ISP applies its digital and white-balance gains in one block: every
variant, ``none`` included, gets the same exposure, so a variant still changes only its own stage.

Variants:

* ``grey-edge`` (hetbench's baseline): the grey-edge estimate e^{1,1,1} (van de Weijer et al. 2007,
  :mod:`hetbench.isp.grey_edge`) on 2 x 2 pixel block means (one Bayer period), moved to the nearest
  light a camera meets
  (:func:`hetbench.isp.illuminant.constrain_neutral`); docs/measurements.md compares them.
* ``gray-world`` (Table 3's baseline in the paper; an extra option here): the gray-world assumption
  (Buchsbaum 1980; Ebner 2007, *Color Constancy*, section 6.2). The scene averages to gray, so the
  gains equalise the three channel means.
* ``none`` (option 1, '-' in Table 3): gains (1, 1, 1): the sensor's (usually green) cast stays.
* ``white-patch`` (option 2): the white-patch / max-RGB assumption (Land & McCann 1971; Ebner
  2007, section 6.1). The brightest surface is white. For robustness to noise and specular
  outliers, "brightest" is the per-channel 99th percentile rather than the maximum.
* ``camera`` (extra): the camera's own estimate, gains = 1 / AsShotNeutral (DNG spec).

Statistics use *non-clipped* pixels only (any channel >= 0.98 of the white level excluded; all
pixels if every one is clipped), on a strided subsample of about 0.75 MP (step 4 at 12 MP, 1 below
3 MP; for grey edges, of the 2 x 2 block means: step 2 at 12 MP, 1 below 12 MP); the estimators are
:mod:`hetbench.isp.stages.wb_estimators`. Gains are clamped to [1/64, 64] (a dead channel cannot give infinite gains) and applied as a
per-channel float32 multiply (:func:`apply_gains`), and recorded in ``ctx.info["wb_gains"]``.

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 3 (row "Color transformation").
.. [2] M. Ebner, *Color Constancy*, Wiley 2007, sections 6.1 (white patch) and 6.2 (gray world).
.. [3] Adobe, *Digital Negative (DNG) Specification* 1.4, tag AsShotNeutral.
.. [4] J. van de Weijer, T. Gevers and A. Gijsenij, "Edge-Based Color Constancy", IEEE TIP 16(9), 2007.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import StageContext, StageVariant, as_rgb_float32, stage_variants
from .wb_estimators import (  # noqa: F401  (re-exported: the stage's public names)
    CLIP_THRESHOLD,
    GAIN_LIMIT,
    SAMPLE_PIXELS,
    WHITE_PATCH_PERCENTILE,
    _gains_from_reference,
    camera_gains,
    gray_world_gains,
    sample_step,
    white_patch_gains,
)


def apply_gains(image: np.ndarray, gains) -> np.ndarray:
    """Multiply each channel by its gain (float32 out), elementwise: the same bits on every CPU.

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear camera RGB.
    gains : array_like
        (R, G, B) gains.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3), not clipped.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.white_balance import apply_gains
    >>> apply_gains(np.full((4, 4, 3), 0.5, np.float32), (2.0, 1.0, 0.5))[0, 0].tolist()
    [1.0, 0.5, 0.25]
    """
    img = np.ascontiguousarray(as_rgb_float32(image, "wb"))
    g = np.asarray(gains, dtype=np.float64).reshape(3).astype(np.float32)
    if img.size == 0:
        return img * g
    # OpenCV's per-channel scalar multiply: one IEEE product per element, like numpy's (a float32
    # product is exact in double, so computing it either way rounds to the same float), at about half
    # the time of numpy's broadcast over a last axis of 3
    return cv2.multiply(img, tuple(float(v) for v in g) + (0.0,))


def clip_highlights(balanced: np.ndarray, gains) -> np.ndarray:
    """Clip every channel (in place) at the level where the weakest channel saturates.

    A pixel clipped on the sensor (1, 1, 1) becomes (g_R, 1, g_B) after the gains and would render
    magenta; clipped at min(gains) it stays neutral.

    Parameters
    ----------
    balanced : numpy.ndarray
        float32 (H, W, 3) white-balanced image; it is modified.
    gains : array_like
        The (R, G, B) gains it was balanced with.

    Returns
    -------
    numpy.ndarray
        ``balanced``, clipped.

    References
    ----------
    dcraw / LibRaw ``highlight_mode`` 0 (clip).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.white_balance import clip_highlights
    >>> clip_highlights(np.array([[[2.0, 1.0, 1.5]]], np.float32), (2.0, 1.0, 1.5)).tolist()
    [[[1.0, 1.0, 1.0]]]
    """
    level = float(np.float32(np.min(np.asarray(gains, dtype=np.float64))))
    if balanced.size == 0 or balanced.ndim != 3 or balanced.shape[2] != 3 or not balanced.flags.c_contiguous:
        return np.minimum(balanced, np.float32(level), out=balanced)
    # a minimum is exact in any arithmetic; OpenCV's in place takes half numpy's time (12 MP: 7 ms against 14)
    return cv2.min(balanced, (level,) * 4, dst=balanced)


def _finish(image: np.ndarray, gains: np.ndarray, ctx: StageContext) -> np.ndarray:
    ctx.info["wb_gains"] = tuple(float(g) for g in gains)
    if ctx.calibrations:  # colour by illuminant: the matrix at the light's temperature (DNG spec, ch. 6)
        from hetbench.isp.calibration import light_colour

        ctx.info.update(light_colour(1.0 / np.asarray(gains, np.float64), ctx.calibrations))
    digital = np.asarray(gains, np.float64) * _exposure(ctx)  # WB and exposure gains in one multiply
    return clip_highlights(apply_gains(image, digital), digital)


def _exposure(ctx: StageContext) -> float:
    """The auto-exposure gain metered before this stage (:mod:`hetbench.isp.exposure`), else 1."""
    return float(ctx.info.get("exposure_gain", 1.0))


def wb_gray_world(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """White balance ``gray-world`` (the paper's baseline): :func:`gray_world_gains`, applied and clipped.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear camera RGB, not white balanced.
    ctx : StageContext
        Receives ``info["wb_gains"]``.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3), white balanced, highlights clipped by :func:`clip_highlights`.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Color transformation", Baseline (Ebner 2007, section 6.2).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.white_balance import wb_gray_world
    >>> ctx = StageContext()
    >>> wb_gray_world(np.full((4, 4, 3), (0.25, 0.5, 0.125), np.float32), ctx)[0, 0].tolist()
    [0.5, 0.5, 0.5]
    >>> [round(g, 3) for g in ctx.info["wb_gains"]]
    [2.0, 1.0, 4.0]
    """
    return _finish(image, gray_world_gains(image), ctx)


def wb_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """White balance ``none`` (Table 3 option 1, '-'): gains (1, 1, 1), the image unchanged.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear camera RGB.
    ctx : StageContext
        Receives ``info["wb_gains"] = (1.0, 1.0, 1.0)``.

    Returns
    -------
    numpy.ndarray
        The image as float32 (H, W, 3).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Color transformation", Option 1 (stage omitted).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.white_balance import wb_none
    >>> wb_none(np.full((4, 4, 3), 0.5), StageContext()).dtype
    dtype('float32')
    """
    ctx.info["wb_gains"] = (1.0, 1.0, 1.0)
    exposure = _exposure(ctx)
    if exposure == 1.0:
        return as_rgb_float32(image, "wb")
    return apply_gains(image, (exposure,) * 3)  # not clipped: no gain differs, so no highlight turns coloured


def wb_white_patch(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """White balance ``white-patch`` (Table 3 option 2): :func:`white_patch_gains`, applied and clipped.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear camera RGB, not white balanced.
    ctx : StageContext
        Receives ``info["wb_gains"]``.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3), white balanced, highlights clipped.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Color transformation", Option 2 (Ebner 2007, section 6.1).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.white_balance import wb_white_patch
    >>> wb_white_patch(np.full((4, 4, 3), (0.25, 0.5, 0.125), np.float32), StageContext())[0, 0].tolist()
    [0.5, 0.5, 0.5]
    """
    return _finish(image, white_patch_gains(image), ctx)


def wb_camera(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """White balance ``camera`` (extra, not in Table 3): :func:`camera_gains` of ``ctx.as_shot_neutral``.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear camera RGB, not white balanced.
    ctx : StageContext
        Supplies ``as_shot_neutral``; receives ``info["wb_gains"]``.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3), white balanced, highlights clipped.

    References
    ----------
    Adobe DNG Specification 1.4, tag AsShotNeutral.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.white_balance import wb_camera
    >>> ctx = StageContext(as_shot_neutral=(0.5, 1.0, 0.25))
    >>> wb_camera(np.full((4, 4, 3), (0.25, 0.5, 0.125), np.float32), ctx)[0, 0].tolist()
    [0.5, 0.5, 0.5]
    """
    return _finish(image, camera_gains(ctx.as_shot_neutral), ctx)


def wb_grey_edge(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """White balance ``grey-edge`` (hetbench's baseline): :func:`hetbench.isp.awb.estimate_light` on the
    statistics subsample (grey edges, constrained to a light a camera meets), applied and clipped.

    ``ctx.color_matrix`` is the XYZ -> camera matrix; ``ctx.info`` receives ``wb_gains``, ``wb_cct`` and
    ``wb_duv``.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.capture import SRGB_TO_XYZ
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.white_balance import wb_grey_edge
    >>> grey = np.random.default_rng(0).uniform(0.05, 0.5, (64, 64, 1)).astype(np.float32)
    >>> ctx = StageContext(color_matrix=np.linalg.inv(SRGB_TO_XYZ))  # camera RGB = linear sRGB
    >>> _ = wb_grey_edge(grey * np.float32([1.0, 1.0, 1.0]), ctx)
    >>> round(ctx.info["wb_cct"]), [round(g, 3) for g in ctx.info["wb_gains"]]  # D65: nothing to do
    (6505, [1.0, 1.0, 1.0])
    """
    from hetbench.isp.awb import estimate_light

    img = as_rgb_float32(image, "wb")
    blocks = (img.shape[0] // 2, img.shape[1] // 2)  # grey edges on 2 x 2 block means (one Bayer period)
    light, cct, duv = estimate_light(img, ctx.color_matrix, ctx.calibrations, clip=CLIP_THRESHOLD,
                                     step=sample_step(blocks))
    if cct is not None:
        ctx.info["wb_cct"], ctx.info["wb_duv"] = cct, duv
    return _finish(img, _gains_from_reference(light), ctx)


VARIANTS = stage_variants(
    "wb",
    StageVariant("wb", "grey-edge", wb_grey_edge,
                 "grey edge e^{1,1,1} (van de Weijer et al. 2007) constrained to real lights", "baseline"),
    StageVariant("wb", "gray-world", wb_gray_world,
                 "gray world (Ebner 2007; the paper's Table 3 baseline): equal channel means", "extra"),
    StageVariant("wb", "none", wb_none, "no white balance (gains 1, 1, 1)", "option1"),
    StageVariant("wb", "white-patch", wb_white_patch,
                 "white patch (Ebner 2007): per-channel 99th percentile maps to neutral", "option2"),
    StageVariant("wb", "camera", wb_camera, "camera white balance: gains 1 / AsShotNeutral, G = 1", "extra"),
)
