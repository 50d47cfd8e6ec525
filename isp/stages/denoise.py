"""Denoise stage (HeteroSwitch Table 3, row "Denoising").

Input and output: float32 (H, W, 3) *linear camera RGB*, black level removed, white level 1.0,
not white balanced (see :mod:`hetbench.isp.stages.base`).

Variants:

* ``fbdd`` (baseline): FBDD, Fake Before Demosaicing Denoising (Gozdz, 2010). LibRaw runs FBDD on
  the Bayer mosaic *before* demosaicing (``fbdd_noise_reduction``), so the demosaic stage does this
  work. This stage is therefore the identity, and it exists so that the Table 3 baseline has a
  name here.
* ``none`` (option 1, '-' in Table 3): the identity. The "no denoise" configuration must also
  render its demosaic with FBDD off; the pipeline does that, not this stage.
* ``bayes-shrink`` (option 2): wavelet soft thresholding with BayesShrink sub-band thresholds
  (Chipman, Kolaczyk & McCulloch 1997, adaptive Bayesian wavelet shrinkage; the threshold
  sigma_noise^2 / sigma_signal from Chang, Yu & Vetterli 2000, IEEE TIP 9(9)), using
  :func:`skimage.restoration.denoise_wavelet`. See :func:`bayes_shrink` for the parameters.

``VARIANTS`` lists the variants.

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 3 (row "Denoising").
.. [2] J. Gozdz, FBDD (Fake Before Demosaicing Denoising), 2010, as implemented in LibRaw.
.. [3] H. Chipman, E. Kolaczyk, R. McCulloch, "Adaptive Bayesian wavelet shrinkage", JASA 92, 1997.
.. [4] S. G. Chang, B. Yu, M. Vetterli, "Adaptive wavelet thresholding for image denoising and
   compression", IEEE TIP 9(9), 2000, eq. (12) (the BayesShrink threshold).
"""

from __future__ import annotations

import numpy as np

from .base import StageContext, StageVariant, as_rgb_float32, stage_variants

#: Decomposition levels for BayesShrink (see :func:`bayes_shrink`).
BAYES_SHRINK_LEVELS = 3
#: Haar (``db1``), scikit-image's default orthogonal wavelet.
BAYES_SHRINK_WAVELET = "db1"


def bayes_shrink(
    image: np.ndarray, *, wavelet_levels: int = BAYES_SHRINK_LEVELS, wavelet: str = BAYES_SHRINK_WAVELET
) -> np.ndarray:
    """BayesShrink wavelet denoising of a linear camera RGB image (float32 in, float32 out).

    Calls ``skimage.restoration.denoise_wavelet(image, method="BayesShrink", mode="soft",
    channel_axis=-1, rescale_sigma=True, convert2ycbcr=False, wavelet_levels=3)``. For every
    channel the noise sigma is estimated from the median absolute deviation of the finest diagonal
    sub-band (Donoho & Johnstone 1994). Each detail sub-band is then soft-thresholded at
    sigma_noise^2 / sigma_signal (Chang et al. 2000).

    Parameter choices:

    * ``convert2ycbcr=False``: the input is *linear, not white-balanced camera RGB*. The YCbCr
      transform (ITU-R BT.601) is defined for gamma-encoded sRGB, and skimage assumes a [0, 1]
      sRGB image. On camera RGB it would only mix channels that have very different noise levels
      (before WB the red and blue channels have lower signal, and so a lower SNR, than green).
      Per-channel denoising gives each raw channel its own sigma estimate and thresholds, which
      fits sensor noise better. Speed is about the same either way.
    * ``wavelet_levels=3``: skimage's default is ``max_level - 3``, which depends on the image
      size (8 levels at 12 MP, fewer on a crop), so the same stage would act differently on a
      crop and on the full frame. Sensor noise after demosaicing is correlated over only a few
      pixels, so almost all of its energy lies in the three finest scales (1, 2 and 4 pixels). At
      coarser scales the signal variance is far above the noise and BayesShrink's thresholds are
      near zero, so extra levels change little. The run time is dominated by the finest level,
      so the choice is about consistency, not speed. The value is capped at the largest level
      the image size allows.
    * ``wavelet="db1"`` (Haar): skimage's default, orthonormal as BayesShrink assumes.

    Limitation: BayesShrink assumes stationary Gaussian noise. Raw sensor noise is
    heteroscedastic (shot noise), so the single per-channel sigma over-smooths shadows and
    under-smooths highlights. Table 3 asks for plain BayesShrink, so no variance-stabilising
    transform is applied.

    The output keeps the input's value range: it is clipped to [min(input), max(input)], because
    wavelet shrinkage can overshoot slightly near edges (e.g. below 0). Cost: about 3-5 s per
    12 MP frame on one core (skimage/PyWavelets). That is 10x the rest of the post-demosaic
    chain, so cache the renders.

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear camera RGB.
    wavelet_levels : int, optional
        Decomposition levels (capped at what the image size allows).
    wavelet : str, optional
        PyWavelets wavelet name.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3), clipped to the input's range.

    References
    ----------
    Chipman, Kolaczyk & McCulloch 1997; Chang, Yu & Vetterli 2000, IEEE TIP 9(9), eq. (12);
    HeteroSwitch (MLSys 2024) Table 3, "Denoising", Option 2.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.denoise import bayes_shrink
    >>> noisy = np.random.default_rng(0).normal(0.5, 0.05, (8, 8, 3)).astype(np.float32)
    >>> out = bayes_shrink(noisy)
    >>> out.shape, out.dtype, bool(out.std() < noisy.std())
    ((8, 8, 3), dtype('float32'), True)
    """
    try:
        import pywt
    except ImportError as exc:  # scikit-image lists PyWavelets as optional
        raise ImportError("denoise=bayes-shrink needs PyWavelets (pip install PyWavelets)") from exc
    from skimage.restoration import denoise_wavelet

    img = as_rgb_float32(image, "bayes-shrink")
    if img.size == 0:
        return img.copy()
    max_level = pywt.dwtn_max_level(img.shape[:2], wavelet)
    if max_level < 1:  # too small to decompose even once
        return img.copy()
    levels = max(1, min(int(wavelet_levels), max_level))
    out = denoise_wavelet(
        img,
        wavelet=wavelet,
        method="BayesShrink",
        mode="soft",
        wavelet_levels=levels,
        convert2ycbcr=False,
        channel_axis=-1,
        rescale_sigma=True,
    )
    out = np.asarray(out, dtype=np.float32)
    np.clip(out, img.min(), img.max(), out=out)
    return out


def denoise_fbdd(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Denoise ``fbdd`` (Table 3 baseline): the identity here; LibRaw ran FBDD before the demosaic.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear camera RGB from LibRaw (FBDD already applied).
    ctx : StageContext
        Unused.

    Returns
    -------
    numpy.ndarray
        The image as float32 (H, W, 3).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Denoising", Baseline (Gozdz 2010).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.denoise import denoise_fbdd
    >>> denoise_fbdd(np.zeros((4, 4, 3)), StageContext()).dtype
    dtype('float32')
    """
    return as_rgb_float32(image, "fbdd")


def denoise_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Denoise ``none`` (Table 3 option 1, '-'): the identity (the pipeline turns FBDD off).

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear camera RGB.
    ctx : StageContext
        Unused.

    Returns
    -------
    numpy.ndarray
        The image as float32 (H, W, 3).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Denoising", Option 1 (stage omitted).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.denoise import denoise_none
    >>> denoise_none(np.ones((4, 4, 3)), StageContext()).dtype
    dtype('float32')
    """
    return as_rgb_float32(image, "none")


def denoise_bayes_shrink(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    """Denoise ``bayes-shrink`` (Table 3 option 2): :func:`bayes_shrink` with its defaults.

    Parameters
    ----------
    image : array_like
        float32 (H, W, 3) linear camera RGB.
    ctx : StageContext
        Unused.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Denoising", Option 2 (Chipman et al. 1997).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import StageContext
    >>> from hetbench.isp.stages.denoise import denoise_bayes_shrink
    >>> denoise_bayes_shrink(np.full((4, 4, 3), 0.5, np.float32), StageContext()).shape
    (4, 4, 3)
    """
    return bayes_shrink(image)


VARIANTS = stage_variants(
    "denoise",
    StageVariant("denoise", "fbdd", denoise_fbdd,
                 "FBDD (Gozdz 2010), run by LibRaw before demosaic; identity here", "baseline"),
    StageVariant("denoise", "none", denoise_none, "no denoising (identity)", "option1"),
    StageVariant("denoise", "bayes-shrink", denoise_bayes_shrink,
                 "wavelet BayesShrink (Chipman et al. 1997; Chang et al. 2000), per camera channel, 3 levels",
                 "option2"),
)
