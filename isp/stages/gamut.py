"""Gamut-mapping stage (HeteroSwitch Table 3, row "Gamut mapping").

Input: float32 (H, W, 3) white-balanced linear camera RGB. Output: float32 linear RGB in the
output colour space. Every variant is one 3x3 matrix, applied elementwise (:func:`apply_matrix`) in
float32 (about 0.04 s at 12 MP, against about 0.3 s for a numpy matmul). Nothing is clipped:
out-of-gamut colours keep their negative or > 1 components, and the tone stage clips.

Variants:

* ``srgb`` (baseline): camera RGB -> linear sRGB (IEC 61966-2-1, D65) with
  ``ctx.camera_to_srgb``, or the one the WB stage interpolated for the light of a DNG with two
  calibrations (``ctx.info["camera_to_srgb"]``, :mod:`hetbench.isp.calibration`) (see
  ``RawCapture.camera_to_srgb``: the inverse of the row-normalised
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

``VARIANTS`` lists the variants.

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 3 (row "Gamut mapping").
.. [2] IEC 61966-2-1:1999, sRGB (primaries and D65 white).
.. [3] ISO 22028-2:2013, ROMM RGB (ProPhoto).
.. [4] K. M. Lam, "Metamerism and colour constancy", PhD thesis, 1985 (the Bradford transform).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .base import StageContext, StageVariant, as_rgb_float32, stage_variants


#: linear sRGB (D65) -> linear ProPhoto RGB (D50), Bradford: colour-science's
#: ``matrix_RGB_to_RGB(sRGB, ProPhoto RGB, "Bradford")`` (0.4.7), written out so that it has the same bits
#: on every CPU (colour computes it with numpy's BLAS-backed products); tests/isp/stages/test_stage_gamut.py
#: checks it against colour-science.
SRGB_TO_PROPHOTO = (
    (0.5293884707117271, 0.330231217729904, 0.1406271677633327),
    (0.09830508851443757, 0.8734839012381028, 0.028146056090101387),
    (0.01685106380765967, 0.1176968437423846, 0.8656732685656675),
)


@lru_cache(maxsize=1)
def _srgb_to_prophoto() -> np.ndarray:
    m = np.array(SRGB_TO_PROPHOTO, dtype=np.float64)
    m.setflags(write=False)
    return m


def srgb_to_prophoto_matrix() -> np.ndarray:
    """(3, 3) linear sRGB (D65) -> linear ProPhoto RGB (D50), Bradford adaptation (a copy).

    Returns
    -------
    numpy.ndarray
        float64 (3, 3), from ``colour.matrix_RGB_to_RGB``.

    References
    ----------
    IEC 61966-2-1:1999; ISO 22028-2:2013; Lam 1985 (Bradford).

    Examples
    --------
    >>> from hetbench.isp.stages.gamut import srgb_to_prophoto_matrix
    >>> srgb_to_prophoto_matrix().sum(axis=1).round(3).tolist()  # white stays white: rows sum to 1
    [1.0, 1.0, 1.0]
    """
    return _srgb_to_prophoto().copy()


def camera_to_prophoto_matrix(camera_to_srgb: np.ndarray) -> np.ndarray:
    """(3, 3) white-balanced camera RGB -> linear ProPhoto RGB: M_sRGB->ProPhoto @ camera_to_srgb.

    Parameters
    ----------
    camera_to_srgb : array_like
        (3, 3) white-balanced camera RGB -> linear sRGB.

    Returns
    -------
    numpy.ndarray
        float64 (3, 3).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.gamut import camera_to_prophoto_matrix, srgb_to_prophoto_matrix
    >>> bool(np.allclose(camera_to_prophoto_matrix(np.eye(3)), srgb_to_prophoto_matrix()))
    True
    """
    from hetbench.isp.matrix3 import matmul  # scalar arithmetic: the same bits on every CPU

    return matmul(_srgb_to_prophoto(), _matrix(camera_to_srgb))


def _matrix(m) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.shape != (3, 3) or not np.all(np.isfinite(m)):
        raise ValueError(f"gamut: expected a finite 3x3 colour matrix, got {m!r}")
    return m


_BLOCK = 65_536  # pixels per block of apply_matrix


def apply_matrix(image: np.ndarray, matrix) -> np.ndarray:
    """out[..., i] = sum_j matrix[i, j] * image[..., j], in float32, the same bits on every CPU.

    Elementwise in blocks of pixels, each product and sum rounded on its own in the order
    ``(m0 x0 + m1 x1) + m2 x2``: ``cv2.transform`` fuses multiply-adds (FMA) in its AVX2 path and
    not in its SSE path, so its last bits, and the rounded 8-bit image after it, depend on the CPU.
    Each block is split into three contiguous planes (``cv2.split``, a copy of bits), computed there with
    numpy's contiguous loops, and merged back (``cv2.merge``): 12 MP in 40 ms, against 71 ms on the
    interleaved channels.

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear RGB.
    matrix : array_like
        Finite (3, 3) matrix.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3), not clipped.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.gamut import apply_matrix
    >>> apply_matrix(np.ones((4, 4, 3)), np.diag([1.0, 2.0, 3.0]))[0, 0].tolist()
    [1.0, 2.0, 3.0]
    """
    import cv2

    img = np.ascontiguousarray(as_rgb_float32(image, "gamut"))
    m = _matrix(matrix).astype(np.float32)
    flat = img.reshape(-1, 1, 3)  # one column of 3-channel pixels: what cv2.split and cv2.merge take
    out = np.empty_like(flat)
    n = min(_BLOCK, flat.shape[0])
    planes = [np.empty((n, 1), np.float32) for _ in range(3)]
    mixed = [np.empty((n, 1), np.float32) for _ in range(3)]
    term = np.empty((n, 1), np.float32)
    for start in range(0, flat.shape[0], _BLOCK):
        block, dst = flat[start : start + _BLOCK], out[start : start + _BLOCK]
        k = block.shape[0]
        src = cv2.split(block, [p[:k] for p in planes])  # the planes given, or new ones where a release allocates
        for i, col in enumerate(p[:k] for p in mixed):
            np.multiply(src[0], m[i, 0], out=col)
            col += np.multiply(src[1], m[i, 1], out=term[:k])
            col += np.multiply(src[2], m[i, 2], out=term[:k])
        merged = cv2.merge([p[:k] for p in mixed], dst)
        if merged is not dst:  # pragma: no cover - OpenCV allocated another array
            dst[...] = merged
    return out.reshape(img.shape)


def gamut_srgb(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Gamut ``srgb`` (Table 3 baseline): camera RGB -> linear sRGB with ``ctx.camera_to_srgb``.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) white-balanced linear camera RGB.
    ctx : StageContext
        Supplies ``camera_to_srgb`` (the capture's matrix).

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3) linear sRGB, not clipped.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Gamut mapping", Baseline; IEC 61966-2-1:1999.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.gamut import gamut_srgb
    >>> gamut_srgb(np.ones((4, 4, 3)), StageContext(camera_to_srgb=np.eye(3)))[0, 0].tolist()
    [1.0, 1.0, 1.0]
    """
    return apply_matrix(image, ctx.info.get("camera_to_srgb", ctx.camera_to_srgb))


def gamut_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Gamut ``none`` (Table 3 option 1, '-'): camera RGB passed on unchanged.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) white-balanced linear camera RGB.
    ctx : StageContext
        Unused.

    Returns
    -------
    numpy.ndarray
        The image as float32 (H, W, 3).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Gamut mapping", Option 1 (stage omitted).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.gamut import gamut_none
    >>> gamut_none(np.zeros((4, 4, 3)), StageContext()).dtype
    dtype('float32')
    """
    return as_rgb_float32(image, "gamut")


def gamut_prophoto(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Gamut ``prophoto`` (Table 3 option 2): camera RGB -> linear sRGB -> linear ProPhoto RGB.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) white-balanced linear camera RGB.
    ctx : StageContext
        Supplies ``camera_to_srgb``.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3) linear ProPhoto RGB (D50), not clipped.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Gamut mapping", Option 2; ISO 22028-2:2013 (ROMM RGB);
    Lam 1985 (Bradford chromatic adaptation).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.gamut import gamut_prophoto
    >>> gamut_prophoto(np.ones((4, 4, 3)), StageContext())[0, 0].round(3).tolist()  # white stays white
    [1.0, 1.0, 1.0]
    """
    return apply_matrix(image, camera_to_prophoto_matrix(ctx.info.get("camera_to_srgb", ctx.camera_to_srgb)))


VARIANTS = stage_variants(
    "gamut",
    StageVariant("gamut", "srgb", gamut_srgb,
                 "camera RGB -> linear sRGB (IEC 61966-2-1, D65) with the capture's matrix", "baseline"),
    StageVariant("gamut", "none", gamut_none, "no gamut mapping: camera RGB passed on", "option1"),
    StageVariant("gamut", "prophoto", gamut_prophoto,
                 "camera RGB -> linear sRGB -> linear ProPhoto RGB (ROMM, D50; Bradford adaptation)", "option2"),
)
