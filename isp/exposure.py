"""Auto exposure: the digital gain a phone's AE applies so that a scene renders at mid-grey, with its
highlights protected.

A RAW capture keeps whatever exposure the camera chose (or a Magic Lantern or Raspberry Pi default),
often 1-3 EV below what a phone would show. Every pipeline of :mod:`hetbench.isp.pipeline` meters its
denoised linear image with :func:`exposure_gain`, and the white-balance stage applies that gain together
with its own (one multiply, as a phone ISP's digital gain), the way the Raspberry Pi camera stack's
AGC meters (libcamera ``rpi.agc``, the *Raspberry Pi Camera Algorithm and Tuning Guide*):

1. **Centre-weighted average.** The mean luminance, weighted 3 in the central quarter of the frame
   (half its width and height), 2 in the ring out to three quarters and 1 outside, is brought to the
   target ``Y_TARGET`` = 0.16 (the tuning guide's default y_target for normal light).
2. **Highlight constraints** (its "highlight" constraint mode): the mean of the brightest 2% of the
   pixels must end between 0.5 (the "normal" mode's lower bound: a dim scene with a bright area is
   not left murky) and 0.8 (the upper bound: they do not clip).
3. **Gain range**: [1/16, 16] (4 EV each way): a lens-capped frame is not amplified into noise.

Luminance is the green channel of the demosaiced camera RGB, which white balance never changes (its
gain is 1), so every WB, gamut and tone variant of a capture gets the same exposure: a Table 3 variant
changes only its own stage. Statistics use a strided subsample and float64 sums, so the gain has the
same bits on every CPU.

References
----------
.. [1] Raspberry Pi Ltd, *Raspberry Pi Camera Algorithm and Tuning Guide* (2023), AGC/AE section:
   metering modes (centre-weighted), y_target, constraint modes (q_lo 0.98, q_hi 1.0, bounds 0.5
   LOWER and 0.8 UPPER).
.. [2] E. Reinhard et al., "Photographic Tone Reproduction for Digital Images", SIGGRAPH 2002 (the
   scene key mapped to mid-grey).
"""

from __future__ import annotations

import numpy as np

#: mean luminance the centre-weighted average is brought to (Raspberry Pi AGC default y_target).
Y_TARGET = 0.16
#: fraction of the brightest pixels whose mean the highlight constraints bound.
TOP_FRACTION = 0.02
#: the brightest pixels' mean ends at least here ...
TOP_LOWER = 0.5
#: ... and at most here.
TOP_UPPER = 0.8
#: the gain stays within [1 / MAX_GAIN, MAX_GAIN].
MAX_GAIN = 16.0
#: the statistics subsample keeps about this many pixels.
SAMPLE_PIXELS = 250_000


def metering_weights(height: int, width: int) -> np.ndarray:
    """Centre-weighted metering weights: 3 in the central half of each side, 2 out to three quarters,
    1 outside.

    Examples
    --------
    >>> from hetbench.isp.exposure import metering_weights
    >>> metering_weights(4, 8).astype(int).tolist()
    [[1, 2, 2, 2, 2, 2, 2, 1], [1, 2, 3, 3, 3, 3, 2, 1], [1, 2, 3, 3, 3, 3, 2, 1], [1, 2, 2, 2, 2, 2, 2, 1]]
    """
    y = np.abs(np.arange(height) + 0.5 - height / 2) / (height / 2)
    x = np.abs(np.arange(width) + 0.5 - width / 2) / (width / 2)
    ring = np.maximum(y[:, None], x[None, :])
    return np.where(ring <= 0.5, 3.0, np.where(ring <= 0.75, 2.0, 1.0))


def exposure_gain(camera_rgb: np.ndarray, *, target: float = Y_TARGET, top_fraction: float = TOP_FRACTION,
                  top_lower: float = TOP_LOWER, top_upper: float = TOP_UPPER, max_gain: float = MAX_GAIN) -> float:
    """The exposure gain of a linear camera-RGB image (:mod:`hetbench.isp.exposure`).

    Parameters
    ----------
    camera_rgb : array_like
        (H, W, 3) linear camera RGB, white level 1 (the demosaiced, denoised image).
    target : float
        Centre-weighted mean luminance after the gain.
    top_fraction, top_lower, top_upper : float
        The brightest ``top_fraction`` of the pixels end with a mean in [top_lower, top_upper].
    max_gain : float
        The gain stays within [1 / max_gain, max_gain].

    Returns
    -------
    float
        The gain (1.0 for an image with no light at all).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.exposure import exposure_gain
    >>> rng = np.random.default_rng(0)
    >>> scene = rng.uniform(0.01, 0.06, (64, 64, 1)) * np.ones(3)  # a dim, flat scene
    >>> round(exposure_gain(scene), 2)  # its brightest 2% are lifted to 0.5 (mean 0.035 -> 0.29)
    8.4
    >>> scene[:8, :8] = 1.0  # a clipped light in a corner: the brightest 2% may not pass 0.8
    >>> round(exposure_gain(scene), 2)  # which holds the gain near 1
    1.01
    """
    g = np.asarray(camera_rgb, np.float32)[..., 1]
    step = max(1, int(np.sqrt(g.size / SAMPLE_PIXELS)))
    g = np.ascontiguousarray(g[::step, ::step], dtype=np.float64)
    weights = metering_weights(*g.shape)
    mean = float((g * weights).sum() / weights.sum())
    if not mean > 0:
        return 1.0
    gain = target / mean
    k = max(1, int(round(top_fraction * g.size)))
    top = float(np.partition(g.ravel(), g.size - k)[g.size - k :].mean())
    if top > 0:
        gain = min(max(gain, top_lower / top), top_upper / top)
    return float(min(max(gain, 1.0 / max_gain), max_gain))
