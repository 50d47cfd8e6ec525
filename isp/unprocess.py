"""Synthetic RAW captures: Brooks et al. (CVPR 2019) unprocessing into a device profile's sensor.

:func:`unprocess` turns an 8-bit sRGB photograph into a :class:`~hetbench.isp.raw.RawCapture` that
looks as if a :class:`~hetbench.isp.profiles.DeviceProfile`'s sensor had taken it: Bayer mosaic in
the profile's CFA order, its bit depth and black/white levels, its colour matrix, a random (or
given) white balance and exposure, and its heteroscedastic noise. The capture then goes through
the same ISP stages (and LibRaw path) as a real RAW file.

Steps of :func:`unprocess` (each inverts one step of the forward pipeline, last step first):

1. uint8 sRGB -> float64 in [0, 1];
2. invert the global smoothstep tone curve ``y = 3x^2 - 2x^3`` in closed form:
   ``x = 0.5 - sin(asin(1 - 2y) / 3)``;
3. invert the sRGB transfer function with the exact IEC 61966-2-1 piecewise inverse (linear toe
   below 0.04045, exponent 2.4 above) rather than Brooks et al.'s plain power 2.2, so that sRGB
   photographs decode to the linear light they encode;
4. linear sRGB -> *white-balanced* camera RGB with ``inv(camera_to_srgb)`` (see "Matrices");
5. invert white balance and exposure: multiply by ``exposure / wb_gains`` per channel, through
   Brooks et al.'s highlight-preserving mask so that near-white pixels keep (almost) unit gain and
   stay saturated instead of being dimmed; clip to [0, 1]; the capture's AsShotNeutral is
   ``1 / wb_gains`` normalised to green = 1;
6. mosaic into the profile's CFA order; 6b. darken it by the profile's lens vignetting (the cos^4
   law, :class:`~hetbench.isp.lens_shading.LensShading`; none for an ideal lens);
7. add heteroscedastic Gaussian noise, ``variance = shot * x + read`` (profile parameters), and
   clip to [0, 1];
8. scale to ``black .. white`` digital numbers and round to uint16; 8b. apply the phone's own
   lens-shading correction (full, partial or none) to the signal above black, as a DNG reader applies
   a phone's GainMap: a corrected corner is brighter and noisier, a partial one keeps some vignetting.

Matrices (all 3x3, applied to column vectors ``out = M @ in``):

* ``profile.color_matrix`` / ``RawCapture.color_matrix``: XYZ (D65) -> camera RGB (DNG ColorMatrix1);
* ``RawCapture.camera_to_srgb()``: white-balanced camera RGB -> linear sRGB (dcraw convention:
  ``cam_from_srgb = ColorMatrix1 @ M(sRGB->XYZ)``, rows normalised to sum 1, inverted), so a
  white-balanced neutral (1, 1, 1) maps to sRGB (1, 1, 1);
* :func:`srgb_to_camera_matrix`: linear sRGB -> white-balanced camera RGB, the exact inverse of the
  above (step 4).

White balance in camera RGB is a per-channel gain ``wb_gains = (r, 1, b)``: raw camera RGB x gains =
white-balanced camera RGB. AsShotNeutral = ``1 / wb_gains`` (the raw camera RGB of a neutral), so a
forward pipeline white balances by ``1 / as_shot_neutral``.

:func:`hetbench.isp.reference.process_reference` is a small, exact forward pipeline (bilinear
demosaic in numpy) used to test the round trip independently of LibRaw and of the ISP stages.

The photographs that embedded builds unprocess are :mod:`hetbench.sources.photographs`.

References
----------
.. [1] T. Brooks, B. Mildenhall, T. Xue, J. Chen, D. Sharlet, J. T. Barron, "Unprocessing Images
   for Learned Raw Denoising", CVPR 2019, sections 3.1 (inverting tone mapping, gamma, colour
   correction, white balance and gains; the highlight-preserving mask) and 3.2 (noise model).
.. [2] IEC 61966-2-1:1999 (sRGB decoding, :mod:`hetbench.isp.transfer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hetbench.isp.capture import RawCapture, cfa_channel_map
from hetbench.isp.device import DeviceProfile
from hetbench.isp.lens_shading import scale_signal
from hetbench.isp.matrix3 import inverse
from hetbench.isp import srgb_tables

#: Brooks et al. 2019: red gain ~ U(1.9, 2.4), blue gain ~ U(1.5, 1.9), green 1.
RED_GAIN_RANGE = (1.9, 2.4)
BLUE_GAIN_RANGE = (1.5, 1.9)
#: Brooks et al. divide by rgb_gain = 1 / N(0.8, 0.1), i.e. scale the signal by N(0.8, 0.1); we
#: call that factor ``exposure`` and clip it to this range (draws outside it are > 3 sigma away).
EXPOSURE_MEAN, EXPOSURE_STD = 0.8, 0.1
EXPOSURE_RANGE = (0.5, 1.1)
#: Brooks et al.'s highlight mask starts at this gray level (mean of the 3 channels).
HIGHLIGHT_INFLECTION = 0.9


# ------------------------------------------------------------------------------ colour


def srgb_to_camera_matrix(profile: DeviceProfile) -> np.ndarray:
    """(3, 3) linear sRGB -> white-balanced camera RGB for ``profile``: the inverse of what
    ``RawCapture.camera_to_srgb()`` returns for the profile's colour matrix.

    Parameters
    ----------
    profile : DeviceProfile
        The device.

    Returns
    -------
    numpy.ndarray
        float64 (3, 3); its rows sum to 1 (neutral stays neutral).

    References
    ----------
    Brooks et al., CVPR 2019, section 3.1 ("Color correction"); Adobe DNG Specification 1.4.

    Examples
    --------
    >>> from hetbench.isp.profiles import load_profiles
    >>> from hetbench.isp.unprocess import srgb_to_camera_matrix
    >>> srgb_to_camera_matrix(load_profiles()[0]).sum(axis=1).round(6).tolist()
    [1.0, 1.0, 1.0]
    """
    return inverse(profile.camera_to_srgb())


def apply_matrix(img: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``out[..., i] = sum_j m[i, j] * img[..., j]`` for an (H, W, 3) image, in float64.

    Parameters
    ----------
    img : array_like
        (H, W, 3) image.
    m : array_like
        (3, 3) matrix.

    Returns
    -------
    numpy.ndarray
        float64 (H, W, 3).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.unprocess import apply_matrix
    >>> apply_matrix(np.ones((2, 2, 3)), np.diag([1.0, 2.0, 3.0]))[0, 0].tolist()
    [1.0, 2.0, 3.0]
    """
    x = np.asarray(img, dtype=np.float64)
    w = np.asarray(m, dtype=np.float64).reshape(3, 3)
    # element-wise, each product and sum rounded on its own: a BLAS product's sums (and so the mosaic's
    # rounding) would depend on the CPU
    out = np.empty(x.shape, np.float64)
    for i in range(3):
        out[..., i] = (x[..., 0] * w[i, 0] + x[..., 1] * w[i, 1]) + x[..., 2] * w[i, 2]
    return out


# ------------------------------------------------------------------------------ CFA


def mosaic(rgb: np.ndarray, cfa: str) -> np.ndarray:
    """Sample an (H, W, 3) image into an (H, W) Bayer mosaic with the given 2x2 ``cfa`` order.

    Parameters
    ----------
    rgb : numpy.ndarray
        (H, W, 3) image.
    cfa : str
        2x2 pattern, e.g. ``"RGGB"``.

    Returns
    -------
    numpy.ndarray
        (H, W), the ``rgb`` dtype.

    References
    ----------
    Brooks et al., CVPR 2019, section 3.1 ("Mosaicing").

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.unprocess import mosaic
    >>> mosaic(np.tile(np.array([1, 2, 3]), (2, 2, 1)), "GRBG").tolist()
    [[2, 1], [3, 2]]
    """
    h, w, _ = rgb.shape
    idx = cfa_channel_map(cfa, h, w)
    return np.take_along_axis(rgb, idx[..., None].astype(np.intp), axis=2)[..., 0]


# ------------------------------------------------------------------------------ unprocessing


@dataclass(frozen=True)
class UnprocessParams:
    """The random choices of one unprocessing.

    Attributes:
        wb_gains: (r, g, b) white-balance gains, g = 1: raw camera RGB x gains = balanced RGB.
        exposure: the factor the linear signal was scaled by (Brooks et al.'s 1 / rgb_gain); a
            forward pipeline undoes it with ``brightness = 1 / exposure``.
    """

    wb_gains: tuple[float, float, float]
    exposure: float

    @property
    def as_shot_neutral(self) -> tuple[float, float, float]:
        """``1 / wb_gains`` normalised to green = 1 (DNG AsShotNeutral)."""
        r, g, b = self.wb_gains
        return (g / r, 1.0, g / b)


def sample_params(
    rng: np.random.Generator,
    *,
    wb_gains: tuple[float, float, float] | None = None,
    exposure: float | None = None,
) -> UnprocessParams:
    """Draw Brooks et al.'s white balance and exposure (three draws, always consumed, so the
    noise stream that follows does not depend on which values were given).

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness.
    wb_gains : tuple of 3 float, optional
        Given gains (normalised to g = 1) instead of the drawn ones.
    exposure : float, optional
        Given exposure instead of the drawn one.

    Returns
    -------
    UnprocessParams
        Red gain ~ U(1.9, 2.4), blue gain ~ U(1.5, 1.9), exposure ~ N(0.8, 0.1) clipped to
        [0.5, 1.1], unless given.

    References
    ----------
    Brooks et al., CVPR 2019, section 3.1 ("White balance and digital gain").

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.unprocess import sample_params
    >>> p = sample_params(np.random.default_rng(0), exposure=0.8)
    >>> 1.9 <= p.wb_gains[0] <= 2.4, p.wb_gains[1], p.exposure
    (True, 1.0, 0.8)
    """
    red = float(rng.uniform(*RED_GAIN_RANGE))
    blue = float(rng.uniform(*BLUE_GAIN_RANGE))
    exp_draw = float(np.clip(rng.normal(EXPOSURE_MEAN, EXPOSURE_STD), *EXPOSURE_RANGE))
    if wb_gains is None:
        gains = (red, 1.0, blue)
    else:
        g = np.asarray(wb_gains, dtype=np.float64)
        if g.shape != (3,) or not np.all(np.isfinite(g)) or np.any(g <= 0):
            raise ValueError(f"wb_gains must be three positive numbers (r, g, b), got {wb_gains!r}")
        gains = tuple(float(v) for v in g / g[1])
    if exposure is None:
        exp = exp_draw
    else:
        if not (np.isfinite(exposure) and exposure > 0):
            raise ValueError(f"exposure must be a positive number, got {exposure!r}")
        exp = float(exposure)
    return UnprocessParams(wb_gains=gains, exposure=exp)


def _safe_invert_gains(cam_wb: np.ndarray, inv_gains: np.ndarray) -> np.ndarray:
    """Brooks et al.'s highlight-preserving inverse gains: pixels whose channel mean exceeds the
    inflection point blend towards unit gain (quadratically), never below the plain inverse."""
    inv = np.asarray(inv_gains, np.float64)
    gray = ((cam_wb[..., 0] + cam_wb[..., 1]) + cam_wb[..., 2]) / 3.0  # numpy's mean, in its order
    out = cam_wb * inv  # below the inflection the mask is 0 and the gain exactly the plain inverse
    bright = gray > HIGHLIGHT_INFLECTION
    if bright.any():
        mask = ((gray[bright] - HIGHLIGHT_INFLECTION) / (1.0 - HIGHLIGHT_INFLECTION))[:, None] ** 2
        out[bright] = cam_wb[bright] * np.maximum(mask + (1.0 - mask) * inv, inv)
    return out


def unprocess_with_params(
    srgb_uint8: np.ndarray,
    profile: DeviceProfile,
    rng: np.random.Generator,
    capture_id: str,
    *,
    wb_gains: tuple[float, float, float] | None = None,
    exposure: float | None = None,
    noise: bool = True,
) -> tuple[RawCapture, UnprocessParams]:
    """:func:`unprocess`, also returning the :class:`UnprocessParams` it used.

    Parameters
    ----------
    srgb_uint8, profile, rng, capture_id, wb_gains, exposure, noise
        As for :func:`unprocess`.

    Returns
    -------
    tuple of (RawCapture, UnprocessParams)
        The capture and the white balance and exposure it was made with.

    References
    ----------
    Brooks et al., CVPR 2019, sections 3.1 and 3.2.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.profiles import load_profiles
    >>> from hetbench.isp.unprocess import unprocess_with_params
    >>> cap, params = unprocess_with_params(
    ...     np.full((4, 4, 3), 128, np.uint8), load_profiles()[0], np.random.default_rng(0), "grey", exposure=0.8)
    >>> cap.mosaic.shape, params.exposure
    ((4, 4), 0.8)
    """
    img = np.asarray(srgb_uint8)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(f"expected an (H, W, 3) uint8 sRGB image, got shape {img.shape} dtype {img.dtype}")
    h, w = (img.shape[0] // 2) * 2, (img.shape[1] // 2) * 2
    if h == 0 or w == 0:
        raise ValueError(f"image {img.shape[:2]} is too small for a 2x2 Bayer mosaic")
    img = img[:h, :w]  # a Bayer mosaic needs even sides: drop a trailing odd row/column

    params = sample_params(rng, wb_gains=wb_gains, exposure=exposure)
    x = srgb_tables.decode_table()[img]  # 1-3, a function of the 8-bit value alone: one stored lookup
    x = apply_matrix(x, srgb_to_camera_matrix(profile))  # 4: white-balanced camera RGB
    inv_gains = params.exposure / np.asarray(params.wb_gains)  # 5
    x = np.clip(_safe_invert_gains(x, inv_gains), 0.0, 1.0)
    raw = mosaic(x, profile.cfa)  # 6
    lens = profile.lens_shading
    if lens.corner < 1.0:  # 6b: the lens's vignetting reaches the sensor before its noise
        falloff, correction = lens.falloff_and_correction(*raw.shape)
        raw = raw * falloff
    if noise:  # 7
        sigma = np.sqrt(profile.noise.variance(raw))
        raw = np.clip(raw + sigma * rng.standard_normal(raw.shape), 0.0, 1.0)
    black, white = float(profile.black_level), float(profile.white_level)
    dn = np.rint(raw * (white - black) + black).astype(np.uint16)  # 8
    if lens.corner < 1.0 and lens.correction != "none":  # 8b: the phone's lens-shading correction
        dn = scale_signal(dn, black, white, correction)
    capture = RawCapture(
        mosaic=dn,
        cfa=profile.cfa,
        black_level=(black,) * 4,
        white_level=white,
        color_matrix=profile.xyz_to_camera(),
        as_shot_neutral=params.as_shot_neutral,
        make=profile.vendor,
        model=profile.model,
        calibration_illuminant=21,
        capture_id=capture_id,
    )
    return capture, params


def unprocess(
    srgb_uint8: np.ndarray,
    profile: DeviceProfile,
    rng: np.random.Generator,
    capture_id: str,
    *,
    wb_gains: tuple[float, float, float] | None = None,
    exposure: float | None = None,
    noise: bool = True,
) -> RawCapture:
    """Brooks et al. 2019 unprocessing of an sRGB photograph into ``profile``'s sensor.

    Parameters
    ----------
    srgb_uint8 : numpy.ndarray
        (H, W, 3) uint8 sRGB image; a trailing odd row/column is dropped.
    profile : DeviceProfile
        The device whose CFA, levels, colour matrix and noise the capture gets.
    rng : numpy.random.Generator
        The only source of randomness (three draws for WB/exposure, then the noise): equal
        generator states give identical captures.
    capture_id : str
        Stored as the capture's ``capture_id``.
    wb_gains : tuple of 3 float, optional
        (r, g, b) white-balance gains (normalised to g = 1); default: red ~ U(1.9, 2.4),
        blue ~ U(1.5, 1.9).
    exposure : float, optional
        Linear scale of the signal (default ~ N(0.8, 0.1) clipped to [0.5, 1.1]).
    noise : bool, optional
        Add the profile's shot + read noise.

    Returns
    -------
    RawCapture
        AsShotNeutral = 1 / wb_gains (green = 1); the exposure is not stored (RawCapture has no
        field for it): use :func:`unprocess_with_params` to get it back.

    References
    ----------
    Brooks et al., CVPR 2019, section 3.1 (steps 2-6 invert tone mapping, gamma, colour
    correction, white balance and gain, and mosaic) and section 3.2 (step 7, shot and read noise);
    IEC 61966-2-1 (step 3).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.profiles import load_profiles
    >>> from hetbench.isp.unprocess import unprocess
    >>> phone = load_profiles()[0]
    >>> cap = unprocess(np.full((4, 6, 3), 128, np.uint8), phone, np.random.default_rng(0), "grey")
    >>> cap.mosaic.shape, cap.mosaic.dtype, cap.cfa == phone.cfa
    ((4, 6), dtype('uint16'), True)
    """
    capture, _ = unprocess_with_params(
        srgb_uint8, profile, rng, capture_id, wb_gains=wb_gains, exposure=exposure, noise=noise
    )
    return capture
