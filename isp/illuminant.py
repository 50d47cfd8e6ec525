"""Illuminants a camera can meet: a camera-RGB neutral as a correlated colour temperature, and its
projection onto the Planckian locus.

A white-balance estimate is the camera RGB of a neutral surface under the scene light (DNG
AsShotNeutral). Through the capture's XYZ -> camera matrix (DNG ColorMatrix) it is a chromaticity,
and a chromaticity is a correlated colour temperature (CCT) and a distance Duv from the Planckian
locus in the CIE 1960 uv diagram (the locus by Krystek's 1985 rational approximation, within 1e-4
of Planck's law from 1000 to 15000 K; the CCT the locus point nearest the estimate). Real light
sources lie near that locus: ANSI C78.377 allows white lamps a Duv within about +-0.006 of it, and
daylight lies just above it. :func:`constrain_neutral` moves an estimate to the nearest illuminant
of that kind: its CCT clamped to [2000, 12000] K (candle flame to blue-sky shade) and its Duv to
+-0.006. A statistical estimator then cannot give a purple or green cast no light produces, which
is how camera auto white balance constrains its estimates (the grey-world-on-the-locus search of
camera AWB, e.g. Raspberry Pi's libcamera AWB, which searches along a CCT curve).

Everything here is scalar Python arithmetic (no numpy, BLAS or vectorised transcendental), so a
white balance has the same bits on every CPU: colour-science's vectorised CCT differs in the last
bits when numpy's AVX-512 kernels are switched off.

References
----------
.. [1] Adobe, *Digital Negative (DNG) Specification* 1.4, chapter 6 (AsShotNeutral, ColorMatrix;
   camera neutral <-> xy).
.. [2] M. Krystek, "An algorithm to calculate correlated colour temperature", Color Research &
   Application 10(1), 1985 (the rational approximation of the Planckian locus in CIE 1960 uv).
.. [3] Y. Ohno, "Practical Use and Calculation of CCT and Duv", LEUKOS 10(1), 2014 (CCT and Duv as the
   nearest locus point and the signed distance to it; colour-science implements it, and the tests
   compare with it).
.. [4] ANSI C78.377-2017, *Specifications for the Chromaticity of Solid-State Lighting Products*
   (Duv tolerance +-0.006 around the nominal CCTs).
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.isp.matrix3 import inverse, matmul, rows, solve

#: linear sRGB (D65) -> CIE XYZ, IEC 61966-2-1.
SRGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)

#: CCT range of the illuminants a camera meets: candle flame to blue-sky shade (kelvin).
CCT_RANGE = (2000.0, 12000.0)
#: largest distance from the Planckian locus a light source has (ANSI C78.377 tolerance).
MAX_DUV = 0.006
#: the locus is searched in mired (1e6 / K) between these temperatures.
_SEARCH_K = (1000.0, 15000.0)


def planckian_uv(cct: float) -> tuple[float, float]:
    """CIE 1960 uv of the Planckian radiator at ``cct`` kelvin (Krystek 1985).

    Examples
    --------
    >>> from hetbench.isp.illuminant import planckian_uv
    >>> [round(c, 4) for c in planckian_uv(2856)]  # CIE illuminant A: (0.2560, 0.3495)
    [0.2559, 0.3496]
    """
    t = float(cct)
    u = (0.860117757 + 1.54118254e-4 * t + 1.28641212e-7 * t * t) / (1 + 8.42420235e-4 * t + 7.08145163e-7 * t * t)
    v = (0.317398726 + 4.22806245e-5 * t + 4.20481691e-8 * t * t) / (1 - 2.89741816e-5 * t + 1.61456053e-7 * t * t)
    return u, v


def xy_to_uv(xy) -> tuple[float, float]:
    """CIE 1931 xy -> CIE 1960 uv."""
    x, y = (float(c) for c in xy)
    d = -2.0 * x + 12.0 * y + 3.0
    return 4.0 * x / d, 6.0 * y / d


def uv_to_xy(uv) -> tuple[float, float]:
    """CIE 1960 uv -> CIE 1931 xy."""
    u, v = (float(c) for c in uv)
    d = 2.0 * u - 8.0 * v + 4.0
    return 3.0 * u / d, 2.0 * v / d


def _above(cct: float) -> tuple[float, float]:
    """The unit normal of the locus at ``cct`` that points above it (towards green, Duv > 0)."""
    (u1, v1), (u2, v2) = planckian_uv(cct * 0.999), planckian_uv(cct * 1.001)
    du, dv = u2 - u1, v2 - v1
    n = math.hypot(du, dv)
    return dv / n, -du / n


def neutral_to_xy(neutral, color_matrix) -> np.ndarray:
    """CIE xy of the light whose camera RGB is ``neutral``: ``XYZ = inv(ColorMatrix) @ neutral``.

    Parameters
    ----------
    neutral : array_like
        (3,) positive camera RGB of a neutral surface.
    color_matrix : array_like
        (3, 3) XYZ -> camera matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.capture import SRGB_TO_XYZ
    >>> from hetbench.isp.illuminant import neutral_to_xy
    >>> neutral_to_xy((1, 1, 1), np.linalg.inv(SRGB_TO_XYZ)).round(4).tolist()  # sRGB white is D65
    [0.3127, 0.329]
    """
    x, y, z = solve(color_matrix, [float(c) for c in np.asarray(neutral, np.float64).reshape(3)])
    total = x + y + z
    return np.array([x / total, y / total])


def xy_to_neutral(xy, color_matrix) -> np.ndarray:
    """Camera RGB of a neutral under the light of chromaticity ``xy``, green = 1 (the inverse of
    :func:`neutral_to_xy`).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.illuminant import neutral_to_xy, xy_to_neutral
    >>> cm = np.array([[0.65, -0.12, -0.09], [-0.38, 1.16, 0.25], [-0.04, 0.15, 0.60]])
    >>> xy_to_neutral(neutral_to_xy((0.5, 1.0, 0.7), cm), cm).round(6).tolist()
    [0.5, 1.0, 0.7]
    """
    x, y = (float(v) for v in xy)
    xyz = (x / y, 1.0, (1.0 - x - y) / y)
    n = [row[0] * xyz[0] + row[1] * xyz[1] + row[2] * xyz[2] for row in rows(color_matrix)]
    return np.array([n[0] / n[1], 1.0, n[2] / n[1]])


def cct_duv(xy) -> tuple[float, float]:
    """Correlated colour temperature (K) and Duv of chromaticity ``xy``: the nearest point of the
    Planckian locus (golden-section search in mired over 1000-15000 K) and the signed distance to it
    in CIE 1960 uv (positive above the locus, towards green).

    Examples
    --------
    >>> from hetbench.isp.illuminant import cct_duv
    >>> t, duv = cct_duv((0.44757, 0.40745))  # CIE illuminant A
    >>> round(t), round(duv, 4)  # Ohno 2013 (colour-science): 2856 K, 0.0000
    (2855, -0.0001)
    >>> t, duv = cct_duv((0.31271, 0.32902))  # D65 lies a little above the locus
    >>> round(t), round(duv, 4)  # Ohno 2013: 6503 K, 0.0032
    (6506, 0.0033)
    """
    u, v = xy_to_uv(xy)

    def dist2(mired: float) -> float:
        pu, pv = planckian_uv(1e6 / mired)
        return (u - pu) ** 2 + (v - pv) ** 2

    lo, hi = 1e6 / _SEARCH_K[1], 1e6 / _SEARCH_K[0]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = dist2(a), dist2(b)
    for _ in range(80):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = dist2(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = dist2(b)
    t = 1e6 / ((lo + hi) / 2.0)
    pu, pv = planckian_uv(t)
    nu, nv = _above(t)
    duv = math.copysign(math.hypot(u - pu, v - pv), (u - pu) * nu + (v - pv) * nv)
    return t, duv


def cct_to_xy(cct: float, duv: float = 0.0) -> np.ndarray:
    """Chromaticity xy of colour temperature ``cct`` (K) at distance ``duv`` from the Planckian locus.

    Examples
    --------
    >>> from hetbench.isp.illuminant import cct_to_xy
    >>> cct_to_xy(2856).round(4).tolist()  # illuminant A: (0.4476, 0.4074)
    [0.4477, 0.4078]
    """
    pu, pv = planckian_uv(cct)
    nu, nv = _above(float(cct))
    return np.array(uv_to_xy((pu + float(duv) * nu, pv + float(duv) * nv)))


def constrain_neutral(neutral, color_matrix: np.ndarray, cct_range: tuple[float, float] = CCT_RANGE,
                      max_duv: float = MAX_DUV) -> tuple[np.ndarray, float, float]:
    """The illuminant nearest a white-balance estimate that a camera can meet: the estimate's CCT
    clamped to ``cct_range`` and its Duv to +-``max_duv`` (:mod:`hetbench.isp.illuminant`).

    Parameters
    ----------
    neutral : array_like
        (3,) camera RGB of a neutral, as an estimator found it.
    color_matrix : numpy.ndarray
        (3, 3) XYZ -> camera matrix of the capture.
    cct_range : (float, float)
        Lowest and highest CCT (K).
    max_duv : float
        Largest distance from the Planckian locus; 0 projects onto the locus.

    Returns
    -------
    (numpy.ndarray, float, float)
        The constrained neutral (green = 1), its CCT and its Duv.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.capture import SRGB_TO_XYZ
    >>> from hetbench.isp.illuminant import constrain_neutral
    >>> cm = np.linalg.inv(SRGB_TO_XYZ)
    >>> n, t, duv = constrain_neutral((1.0, 1.0, 1.0), cm)  # D65 is a light a camera meets: unchanged
    >>> round(t), round(duv, 4), n.round(3).tolist()
    (6505, 0.0033, [1.0, 1.0, 1.0])
    >>> n, t, duv = constrain_neutral((1.0, 1.3, 1.0), cm)  # a strong green cast (Duv > 0) is no light
    >>> round(duv, 4)
    0.006
    """
    xy = neutral_to_xy(neutral, color_matrix)
    if not np.all(np.isfinite(xy)):
        raise ValueError(f"white-balance estimate {tuple(neutral)} has no chromaticity under this colour matrix")
    t, duv = cct_duv(xy)
    t_c = min(max(t, cct_range[0]), cct_range[1])
    duv_c = min(max(duv, -max_duv), max_duv)
    if t_c == t and duv_c == duv:
        n = np.asarray(neutral, np.float64).reshape(3)
        return n / n[1], t, duv
    return xy_to_neutral(cct_to_xy(t_c, duv_c), color_matrix), t_c, duv_c


def camera_to_srgb_from(color_matrix: np.ndarray) -> np.ndarray:
    """(3, 3) white-balanced camera RGB -> linear sRGB for an XYZ -> camera matrix: the inverse of
    ``color_matrix @ M(sRGB -> XYZ)`` with each row normalised to sum 1 (see :meth:`RawCapture.camera_to_srgb`).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.illuminant import SRGB_TO_XYZ, camera_to_srgb_from
    >>> bool(np.allclose(camera_to_srgb_from(2 * np.linalg.inv(SRGB_TO_XYZ)), np.eye(3)))
    True
    """
    cam_from_srgb = rows(matmul(color_matrix, SRGB_TO_XYZ))  # scalar arithmetic: the same bits on every CPU
    return inverse([[v / ((r[0] + r[1]) + r[2]) for v in r] for r in cam_from_srgb])
