"""How faithfully a rendered image reproduces an X-Rite ColorChecker Classic: CIEDE2000 per patch
against colour-science's reference values, after one exposure scalar.

The reference is colour-science's ``ColorChecker24 - After November 2014`` (xyY under D50),
chromatically adapted to D65 (Bradford) because the renders are sRGB, whose white is D65. A render's
24 patch colours (sRGB-encoded, in the chart's reading order: dark skin first, black last, as
``colour-checker-detection`` returns them) are decoded to linear sRGB, converted to XYZ and scaled by
one factor that puts patch 22, 'neutral 5 (.70 D)', at its reference luminance, so the score measures
colour, not exposure; the exposure error is reported on its own, in EV, as that factor's log2.

References
----------
.. [1] X-Rite ColorChecker Classic, reference values as published by X-Rite after November 2014
   (colour-science ``CCS_COLOURCHECKERS``).
.. [2] G. Sharma, W. Wu and E. N. Dalal, "The CIEDE2000 Color-Difference Formula: Implementation Notes,
   Supplementary Test Data, and Mathematical Observations", Color Research & Application 30(1), 2005.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: colour-science's name of the reference chart.
REFERENCE_CHART = "ColorChecker24 - After November 2014"
#: index of 'neutral 5 (.70 D)' in the chart's reading order.
NEUTRAL_5 = 21


@dataclass(frozen=True)
class ChartAccuracy:
    """CIEDE2000 of each of the 24 patches, and the exposure error of the render.

    ``exposure_ev``: log2 of the render's 'neutral 5' luminance over the reference's (negative: the
    render is too dark).
    """

    delta_e: np.ndarray
    exposure_ev: float

    @property
    def mean(self) -> float:
        return float(self.delta_e.mean())

    @property
    def max(self) -> float:
        return float(self.delta_e.max())


def reference_xyz() -> np.ndarray:
    """(24, 3) XYZ of the reference chart under D65 (Bradford adaptation from D50), Y of white = 1.

    Examples
    --------
    >>> from hetbench.isp.colour_accuracy import reference_xyz
    >>> round(float(reference_xyz()[21, 1]), 3)  # neutral 5 reflects about 19%
    0.191
    """
    import colour

    chart = colour.CCS_COLOURCHECKERS[REFERENCE_CHART]
    xyz = colour.xyY_to_XYZ(np.array(list(chart.data.values()), np.float64))
    d65 = colour.CCS_ILLUMINANTS["CIE 1931 2 Degree Standard Observer"]["D65"]
    return colour.chromatic_adaptation(xyz, colour.xy_to_XYZ(chart.illuminant), colour.xy_to_XYZ(d65),
                                       method="Von Kries", transform="Bradford")


def chart_accuracy(swatches_srgb: np.ndarray) -> ChartAccuracy:
    """CIEDE2000 of 24 rendered patch colours against the reference (:mod:`hetbench.isp.colour_accuracy`).

    Parameters
    ----------
    swatches_srgb : array_like
        (24, 3) sRGB-encoded colours in [0, 1], in the chart's reading order.

    Examples
    --------
    >>> import colour
    >>> import numpy as np
    >>> from hetbench.isp.colour_accuracy import chart_accuracy, reference_xyz
    >>> perfect = colour.XYZ_to_sRGB(reference_xyz())  # the reference itself, rendered to sRGB
    >>> acc = chart_accuracy(perfect)
    >>> round(acc.exposure_ev, 3), [i for i, d in enumerate(acc.delta_e) if d > 0.01]
    (0.0, [17])
    >>> round(acc.max, 2)  # 'cyan' lies outside the sRGB gamut: clipped, it cannot score 0
    3.37
    >>> round(chart_accuracy(colour.XYZ_to_sRGB(reference_xyz() / 4)).exposure_ev, 3)  # 2 EV dark
    -2.0
    """
    import colour

    swatches = np.asarray(swatches_srgb, np.float64)
    if swatches.shape != (24, 3) or not np.all(np.isfinite(swatches)):
        raise ValueError(f"expected 24 finite sRGB patch colours, got an array of shape {swatches.shape}")
    d65 = colour.CCS_ILLUMINANTS["CIE 1931 2 Degree Standard Observer"]["D65"]
    linear = colour.models.eotf_sRGB(np.clip(swatches, 0.0, 1.0))
    xyz = colour.RGB_to_XYZ(linear, colour.RGB_COLOURSPACES["sRGB"], illuminant=d65)
    ref = reference_xyz()
    if not xyz[NEUTRAL_5, 1] > 0:
        raise ValueError("the 'neutral 5' patch is black: no exposure to normalise")
    scale = ref[NEUTRAL_5, 1] / xyz[NEUTRAL_5, 1]
    delta = colour.delta_E(colour.XYZ_to_Lab(xyz * scale, d65), colour.XYZ_to_Lab(ref, d65), method="CIE 2000")
    return ChartAccuracy(np.asarray(delta, np.float64), float(-np.log2(scale)))
