"""A small, exact forward pipeline in numpy, to test unprocessing independently of LibRaw.

:func:`process_reference` undoes what :func:`hetbench.isp.unprocess.unprocess` did (black/white
levels, white balance and exposure, demosaic, colour matrix, sRGB transfer function, smoothstep
tone curve) with none of the ISP stages' approximations, so round trips can be measured
(:func:`psnr`).

References
----------
.. [1] T. Brooks et al., "Unprocessing Images for Learned Raw Denoising", CVPR 2019, section 3.1.
.. [2] H. S. Malvar, L.-W. He, R. Cutler, "High-quality linear interpolation for demosaicing of
   Bayer-patterned color images", ICASSP 2004 (the bilinear baseline it improves on).
.. [3] IEC 61966-2-1:1999 (sRGB encoding).
"""

from __future__ import annotations

import numpy as np

from hetbench.isp.capture import RawCapture, cfa_channel_map, cfa_code_block
from hetbench.isp.transfer import smoothstep, srgb_encode
from hetbench.isp.unprocess import apply_matrix

_K_GREEN = np.array([[0.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 0.0]]) / 4.0
_K_RED_BLUE = np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 4.0


def bilinear_demosaic(raw: np.ndarray, cfa: str) -> np.ndarray:
    """Bilinear demosaic of a float (H, W) mosaic -> (H, W, 3), exact at the sampled sites.

    Each channel is its masked samples convolved with the classic bilinear kernels; borders are
    mirrored about the edge photosite, which keeps the Bayer phase of the mirrored samples.
    """
    from scipy.ndimage import convolve

    h, w = raw.shape
    idx = cfa_channel_map(cfa, h, w)
    out = np.empty((h, w, 3), dtype=np.float64)
    for c in range(3):
        plane = np.where(idx == c, raw, 0.0)
        out[..., c] = convolve(plane, _K_GREEN if c == 1 else _K_RED_BLUE, mode="mirror")
    return out


def superpixel_demosaic(raw: np.ndarray, cfa: str) -> np.ndarray:
    """One RGB pixel per 2x2 Bayer block (R, mean of the two G, B): (H/2, W/2, 3)."""
    h, w = raw.shape
    blocks = raw[: h // 2 * 2, : w // 2 * 2].reshape(h // 2, 2, w // 2, 2).transpose(0, 2, 1, 3)
    blocks = blocks.reshape(h // 2, w // 2, 4)  # the 4 sites in the row-major order of ``cfa``
    codes = cfa_code_block(cfa).ravel()
    return np.stack([blocks[..., codes == c].mean(axis=-1) for c in range(3)], axis=-1)


def process_reference(
    capture: RawCapture, *, brightness: float = 1.0, output: str = "srgb", demosaic: str = "bilinear"
) -> np.ndarray:
    """A small exact forward pipeline, for round-trip tests independent of LibRaw.

    Black/white normalisation -> white balance by ``1 / as_shot_neutral`` and ``brightness`` (use
    ``1 / exposure`` to undo :func:`unprocess`'s exposure) -> clip at 1 (sensor saturation) ->
    demosaic -> ``camera_to_srgb`` -> clip to [0, 1] -> for ``output="srgb"`` (default) the sRGB
    transfer function and the smoothstep tone curve.

    Parameters
    ----------
    capture : RawCapture
        The frame.
    brightness : float, optional
        Extra gain (``1 / exposure`` undoes :func:`~hetbench.isp.unprocess.unprocess`'s).
    output : {"srgb", "linear"}, optional
        Display-referred sRGB (comparable with the unprocessed photograph / 255) or linear sRGB.
    demosaic : {"bilinear", "superpixel"}, optional
        ``"bilinear"`` (full resolution; the only lossy step of the round trip) or
        ``"superpixel"`` (one RGB pixel per 2x2 block, greens averaged: half resolution, and exact
        for images that are constant on 2x2 blocks).

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3) in [0, 1] ((H/2, W/2, 3) for ``superpixel``).

    References
    ----------
    Brooks et al., CVPR 2019, section 3.1 (the forward steps it inverts); IEC 61966-2-1.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.profiles import load_profiles
    >>> from hetbench.isp.reference import process_reference, psnr
    >>> from hetbench.isp.unprocess import unprocess_with_params
    >>> grey = np.full((4, 4, 3), 128, np.uint8)
    >>> cap, params = unprocess_with_params(grey, load_profiles()[0], np.random.default_rng(0), "g", noise=False)
    >>> out = process_reference(cap, brightness=1 / params.exposure, demosaic="superpixel")
    >>> out.shape, psnr(out, grey[:2, :2] / 255.0) > 40
    ((2, 2, 3), True)
    """
    if output not in ("srgb", "linear"):
        raise ValueError(f"output must be 'srgb' or 'linear', got {output!r}")
    if demosaic not in ("bilinear", "superpixel"):
        raise ValueError(f"demosaic must be 'bilinear' or 'superpixel', got {demosaic!r}")
    m = capture.mosaic.astype(np.float64)
    h, w = m.shape
    idx = cfa_channel_map(capture.cfa, h, w)
    black = np.tile(np.array(capture.black_level).reshape(2, 2), (h // 2, w // 2))
    raw = (m - black) / (capture.white_level - black)
    neutral = np.asarray(capture.as_shot_neutral, dtype=np.float64)
    gains = (neutral[1] / neutral) * float(brightness)
    raw = np.clip(raw * gains[idx], 0.0, 1.0)
    rgb = bilinear_demosaic(raw, capture.cfa) if demosaic == "bilinear" else superpixel_demosaic(raw, capture.cfa)
    rgb = np.clip(apply_matrix(rgb, capture.camera_to_srgb()), 0.0, 1.0)
    if output == "srgb":
        rgb = smoothstep(srgb_encode(rgb))
    return rgb.astype(np.float32)


def psnr(a: np.ndarray, b: np.ndarray, peak: float = 1.0) -> float:
    """Peak signal-to-noise ratio in dB between two images on the same scale (inf if equal)."""
    mse = float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
    return float("inf") if mse == 0 else 10.0 * np.log10(peak * peak / mse)
