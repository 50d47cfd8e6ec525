"""Colour by illuminant: a DNG's two calibration matrices interpolated at the scene light's colour
temperature, as the DNG specification describes.

A DNG may carry ColorMatrix1 and ColorMatrix2 (XYZ -> camera), measured under CalibrationIlluminant1
and 2 (EXIF LightSource codes, typically standard illuminant A and D65). For a light of correlated
colour temperature T the matrix is

    CM(T) = g CM1 + (1 - g) CM2,   g = (1/T - 1/T2) / (1/T1 - 1/T2) clamped to [0, 1]

(weights linear in inverse temperature; T1 < T2 the two illuminants' temperatures). The light's T is
found from a camera neutral by iteration, since the neutral's chromaticity itself depends on the
matrix: start at D50, map the neutral to xy with CM(T) (:func:`hetbench.isp.illuminant.neutral_to_xy`),
take that xy's CCT, and repeat until it stops moving (:func:`neutral_to_xy_interpolated`).

Everything is scalar Python arithmetic (the same bits on every CPU).

References
----------
.. [1] Adobe, *Digital Negative (DNG) Specification* 1.4, chapter 6, "Mapping Camera Color Space to CIE
   XYZ Space" (the interpolation by inverse temperature and the iterative neutral -> xy mapping).
.. [2] Adobe DNG SDK, ``dng_camera_profile`` (the temperature of each EXIF LightSource code).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hetbench.isp.illuminant import camera_to_srgb_from, cct_duv, neutral_to_xy

#: temperature (K) of each EXIF LightSource code a DNG calibration can name, as the DNG SDK assigns them.
ILLUMINANT_CCT: dict[int, float] = {
    1: 5500.0,  # daylight
    2: 4150.0,  # fluorescent
    3: 2850.0,  # tungsten
    4: 5500.0,  # flash
    9: 5500.0,  # fine weather
    10: 6500.0,  # cloudy
    11: 7500.0,  # shade
    12: 6430.0,  # daylight fluorescent
    13: 5000.0,  # day white fluorescent
    14: 4150.0,  # cool white fluorescent
    15: 3450.0,  # white fluorescent
    17: 2850.0,  # standard light A
    18: 5500.0,  # standard light B
    19: 6500.0,  # standard light C
    20: 5500.0,  # D55
    21: 6500.0,  # D65
    22: 7500.0,  # D75
    23: 5000.0,  # D50
    24: 3200.0,  # ISO studio tungsten
}
#: D50, where the neutral -> xy iteration starts (the DNG SDK's choice).
_D50_XY = (0.3457, 0.3585)


def check_calibrations(calibrations: Sequence[tuple[int, np.ndarray]]) -> tuple[tuple[int, np.ndarray], ...]:
    """Two (illuminant code, XYZ -> camera matrix) pairs, checked: known codes of different temperatures,
    finite invertible 3 x 3 matrices. Returns them sorted by temperature (lowest first).

    Raises
    ------
    ValueError
        With one line saying what is wrong.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.calibration import check_calibrations
    >>> [code for code, _ in check_calibrations([(21, np.eye(3)), (17, 2 * np.eye(3))])]
    [17, 21]
    >>> check_calibrations([(21, np.eye(3)), (17, np.zeros((3, 3)))])
    Traceback (most recent call last):
    ...
    ValueError: ColorMatrix for illuminant 17 is singular or not finite
    """
    pairs = []
    for code, matrix in calibrations:
        m = np.asarray(matrix, np.float64)
        if int(code) not in ILLUMINANT_CCT:
            raise ValueError(f"calibration illuminant {code} is not an EXIF light source with a known temperature")
        if m.shape != (3, 3) or not np.all(np.isfinite(m)) or abs(float(np.linalg.det(m))) < 1e-9:
            raise ValueError(f"ColorMatrix for illuminant {code} is singular or not finite")
        pairs.append((int(code), m))
    if len(pairs) != 2:
        raise ValueError(f"expected two calibrations, got {len(pairs)}")
    pairs.sort(key=lambda p: ILLUMINANT_CCT[p[0]])
    if ILLUMINANT_CCT[pairs[0][0]] == ILLUMINANT_CCT[pairs[1][0]]:
        raise ValueError(f"calibration illuminants {pairs[0][0]} and {pairs[1][0]} have the same temperature")
    return tuple(pairs)


def matrix_at(cct: float, calibrations: Sequence[tuple[int, np.ndarray]]) -> np.ndarray:
    """The XYZ -> camera matrix at colour temperature ``cct``: the two calibrations weighted linearly in
    inverse temperature, clamped outside them (DNG specification, chapter 6).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.calibration import matrix_at
    >>> cal = [(17, np.eye(3)), (21, 3 * np.eye(3))]  # A (2850 K) and D65 (6500 K)
    >>> [float(matrix_at(t, cal)[0, 0]) for t in (2000, 2850, 6500, 9000)]
    [1.0, 1.0, 3.0, 3.0]
    >>> round(float(matrix_at(1 / ((1 / 2850 + 1 / 6500) / 2), cal)[0, 0]), 6)  # half way in mired
    2.0
    """
    (c1, m1), (c2, m2) = sorted(calibrations, key=lambda p: ILLUMINANT_CCT[int(p[0])])
    t1, t2 = ILLUMINANT_CCT[int(c1)], ILLUMINANT_CCT[int(c2)]
    g = (1.0 / float(cct) - 1.0 / t2) / (1.0 / t1 - 1.0 / t2)
    g = min(max(g, 0.0), 1.0)
    return np.array([[g * float(a) + (1.0 - g) * float(b) for a, b in zip(r1, r2)]
                     for r1, r2 in zip(np.asarray(m1, np.float64).tolist(), np.asarray(m2, np.float64).tolist())])


def neutral_to_xy_interpolated(neutral, calibrations: Sequence[tuple[int, np.ndarray]],
                               iterations: int = 30) -> tuple[np.ndarray, float]:
    """Chromaticity and CCT of the light whose camera RGB is ``neutral``, with the matrix interpolated at
    that light's own temperature (the DNG specification's iteration, from D50).

    Returns
    -------
    (numpy.ndarray, float)
        xy of the light and its CCT (K).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.calibration import matrix_at, neutral_to_xy_interpolated
    >>> from hetbench.isp.illuminant import cct_to_xy, xy_to_neutral
    >>> cal = [(17, np.array([[0.9, -0.2, -0.1], [-0.4, 1.2, 0.2], [0.0, 0.1, 0.5]])),
    ...        (21, np.array([[0.65, -0.12, -0.09], [-0.38, 1.16, 0.25], [-0.04, 0.15, 0.60]]))]
    >>> light = cct_to_xy(3500)
    >>> n = xy_to_neutral(light, matrix_at(3500, cal))  # a camera neutral under a 3500 K light
    >>> xy, t = neutral_to_xy_interpolated(n, cal)
    >>> round(t), bool(np.abs(xy - light).max() < 1e-6)
    (3500, True)
    """
    xy = np.array(_D50_XY)
    t = 5000.0
    for _ in range(int(iterations)):
        t, _duv = cct_duv(xy)
        nxt = neutral_to_xy(neutral, matrix_at(t, calibrations))
        if float(np.abs(nxt - xy).max()) < 1e-9:
            return nxt, cct_duv(nxt)[0]
        xy = nxt
    return xy, cct_duv(xy)[0]


def light_colour(neutral, calibrations: Sequence[tuple[int, np.ndarray]]) -> dict:
    """What the white balance tells the colour stage for a DNG with two calibrations: the light's CCT
    (``wb_cct``) and the camera -> sRGB matrix interpolated at it (``camera_to_srgb``).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.calibration import light_colour
    >>> from hetbench.isp.illuminant import SRGB_TO_XYZ
    >>> cm = np.linalg.inv(SRGB_TO_XYZ)
    >>> out = light_colour((1.0, 1.0, 1.0), [(17, cm), (21, cm)])
    >>> round(out["wb_cct"]), bool(np.allclose(out["camera_to_srgb"], np.eye(3)))
    (6505, True)
    """
    _, cct = neutral_to_xy_interpolated(neutral, calibrations)
    return {"wb_cct": float(cct), "camera_to_srgb": camera_to_srgb_from(matrix_at(cct, calibrations))}
