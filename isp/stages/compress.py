"""Compression stage (HeteroSwitch Table 3, row "Image compression").

Input and output: uint8 (H, W, 3) RGB. The output is what a viewer decodes from the stored file.

Variants:

* ``jpeg85`` (baseline): a JPEG (ITU-T T.81 / ISO 10918-1) round trip at quality 85, as in
  HeteroSwitch (after Cidon et al. 2021).
* ``none`` (option 1, '-' in Table 3): the identity, with no file written.
* ``jpeg50`` (option 2): the same at quality 50.

Encoding and decoding use OpenCV's libjpeg(-turbo) through :func:`cv2.imencode` /
:func:`cv2.imdecode`, with the IJG quality scaling of the Annex K tables, 4:2:0 chroma
subsampling (set explicitly, and also OpenCV's default), baseline sequential coding and no
Huffman optimisation. So the byte counts are those of a plain camera-style JPEG. OpenCV expects
BGR order, so the image is converted before encoding and decoded straight to RGB
(``IMREAD_COLOR_RGB`` on OpenCV >= 4.10, else by converting back).

The registered variants record the encoded size in ``ctx.info["jpeg_bytes"]``. ``none`` sets it to
``None``, so a value from an earlier run does not survive. ``VARIANTS`` lists the variants.

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 3 (row "Image compression").
.. [2] ITU-T T.81 | ISO/IEC 10918-1, JPEG baseline sequential coding, Annex K quantisation tables.
.. [3] Cidon et al., "Characterizing and taming model instability across edge devices", MLSys 2021.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import StageContext, StageVariant, stage_variants

_IMREAD_RGB = getattr(cv2, "IMREAD_COLOR_RGB", None)


def _encode_params(quality: int) -> list[int]:
    return [
        cv2.IMWRITE_JPEG_QUALITY,
        int(quality),
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
        cv2.IMWRITE_JPEG_OPTIMIZE,
        0,
        cv2.IMWRITE_JPEG_PROGRESSIVE,
        0,
    ]


def _check_rgb_uint8(image: np.ndarray) -> np.ndarray:
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(f"compress: expected a uint8 (H, W, 3) image, got {img.dtype} {img.shape}")
    return np.ascontiguousarray(img)


_REDUCED = {2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}


def decode_scale(shape: tuple[int, ...], output_size: int | None) -> int:
    """Largest libjpeg DCT scale-down (1, 2, 4 or 8) that keeps the shorter side at least twice
    ``output_size``: the pipeline downsizes to ``output_size`` afterwards anyway.

    Parameters
    ----------
    shape : tuple of int
        The image shape (H, W, ...).
    output_size : int or None
        Side of the square the pipeline downsizes to; None or 0: full size.

    Returns
    -------
    int
        1, 2, 4 or 8.

    Examples
    --------
    >>> from hetbench.isp.stages.compress import decode_scale
    >>> decode_scale((3024, 4032, 3), 224), decode_scale((64, 64, 3), 64), decode_scale((64, 64, 3), None)
    (4, 1, 1)
    """
    if not output_size:
        return 1
    short = min(shape[0], shape[1])
    for k in (8, 4, 2):
        if short // k >= 2 * output_size:
            return k
    return 1


def jpeg_roundtrip(rgb_uint8: np.ndarray, quality: int, scale: int = 1) -> tuple[np.ndarray, int]:
    """Encode an RGB uint8 image as JPEG at ``quality`` (1-100) and decode it back, at full size or
    scaled down by ``scale`` (2, 4, 8) in the DCT domain as libjpeg's reduced decoding does.

    Parameters
    ----------
    rgb_uint8 : array_like
        uint8 (H, W, 3) RGB.
    quality : int
        IJG quality, 1-100.
    scale : int, optional
        1 (full size), 2, 4 or 8.

    Returns
    -------
    tuple of (numpy.ndarray, int)
        The decoded uint8 RGB image (sides divided by ``scale``, rounded up) and the size of the
        JPEG file in bytes.

    References
    ----------
    ITU-T T.81 | ISO/IEC 10918-1 (baseline sequential, Annex K tables with IJG quality scaling).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.compress import jpeg_roundtrip
    >>> decoded, nbytes = jpeg_roundtrip(np.full((16, 16, 3), 128, np.uint8), 85)
    >>> decoded.shape, decoded.dtype, int(decoded[0, 0, 0])
    ((16, 16, 3), dtype('uint8'), 128)
    """
    q = int(quality)
    if not 1 <= q <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality!r}")
    rgb = _check_rgb_uint8(rgb_uint8)
    if rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError(f"compress: cannot encode an empty image {rgb.shape}")
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), _encode_params(q))
    if not ok:
        raise RuntimeError("cv2.imencode failed to write a JPEG")
    if scale > 1:
        decoded = cv2.imdecode(buf, _REDUCED[scale])
        expected = (-(-rgb.shape[0] // scale), -(-rgb.shape[1] // scale), 3)
        decoded = None if decoded is None else cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB)
    elif _IMREAD_RGB is not None:
        decoded, expected = cv2.imdecode(buf, _IMREAD_RGB), rgb.shape
    else:  # OpenCV < 4.10
        decoded, expected = cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB), rgb.shape
    if decoded is None or decoded.shape != tuple(expected):
        raise RuntimeError(f"JPEG decode gave {None if decoded is None else decoded.shape}, expected {expected}")
    return decoded, int(buf.size)


def _jpeg(image: np.ndarray, ctx: StageContext, quality: int) -> np.ndarray:
    decoded, nbytes = jpeg_roundtrip(image, quality, decode_scale(image.shape, ctx.output_size))
    ctx.info["jpeg_bytes"] = nbytes
    return decoded


def compress_jpeg85(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Compress ``jpeg85`` (Table 3 baseline): :func:`jpeg_roundtrip` at quality 85.

    Parameters
    ----------
    image : array_like
        uint8 (H, W, 3) RGB.
    ctx : StageContext
        ``output_size`` picks the decode scale (:func:`decode_scale`); receives ``info["jpeg_bytes"]``.

    Returns
    -------
    numpy.ndarray
        The decoded uint8 RGB image.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Image compression", Baseline (JPEG quality 85, after
    Cidon et al. 2021); ITU-T T.81.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.compress import compress_jpeg85
    >>> ctx = StageContext()
    >>> compress_jpeg85(np.zeros((8, 8, 3), np.uint8), ctx).shape, ctx.info["jpeg_bytes"] > 0
    ((8, 8, 3), True)
    """
    return _jpeg(image, ctx, 85)


def compress_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Compress ``none`` (Table 3 option 1, '-'): the identity; ``info["jpeg_bytes"]`` = None.

    Parameters
    ----------
    image : array_like
        uint8 (H, W, 3) RGB.
    ctx : StageContext
        Receives ``info["jpeg_bytes"] = None``.

    Returns
    -------
    numpy.ndarray
        The image (contiguous).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Image compression", Option 1 (stage omitted).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.compress import compress_none
    >>> ctx = StageContext()
    >>> compress_none(np.zeros((4, 4, 3), np.uint8), ctx).shape, ctx.info["jpeg_bytes"]
    ((4, 4, 3), None)
    """
    ctx.info["jpeg_bytes"] = None
    return _check_rgb_uint8(image)


def compress_jpeg50(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Compress ``jpeg50`` (Table 3 option 2): :func:`jpeg_roundtrip` at quality 50.

    Parameters
    ----------
    image : array_like
        uint8 (H, W, 3) RGB.
    ctx : StageContext
        ``output_size`` picks the decode scale; receives ``info["jpeg_bytes"]``.

    Returns
    -------
    numpy.ndarray
        The decoded uint8 RGB image.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Image compression", Option 2 (JPEG quality 50, after
    Cidon et al. 2021); ITU-T T.81.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.compress import compress_jpeg50
    >>> compress_jpeg50(np.zeros((8, 8, 3), np.uint8), StageContext()).dtype
    dtype('uint8')
    """
    return _jpeg(image, ctx, 50)


VARIANTS = stage_variants(
    "compress",
    StageVariant("compress", "jpeg85", compress_jpeg85,
                 "JPEG round trip at quality 85 (4:2:0, libjpeg via OpenCV)", "baseline"),
    StageVariant("compress", "none", compress_none, "no compression (identity)", "option1"),
    StageVariant("compress", "jpeg50", compress_jpeg50,
                 "JPEG round trip at quality 50 (4:2:0, libjpeg via OpenCV)", "option2"),
)
