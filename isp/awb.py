"""The baseline's auto white balance: the scene light estimated by grey edges and moved to the nearest
light a camera meets, with the colour matrix at that light's temperature when the capture has two.

References
----------
.. [1] J. van de Weijer, T. Gevers and A. Gijsenij, "Edge-Based Color Constancy", IEEE TIP 16(9), 2007
   (:mod:`hetbench.isp.grey_edge`).
.. [2] Adobe, *Digital Negative (DNG) Specification* 1.4, chapter 6 (:mod:`hetbench.isp.calibration`);
   ANSI C78.377 (:mod:`hetbench.isp.illuminant`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hetbench.isp.grey_edge import grey_edge_estimate
from hetbench.isp.illuminant import constrain_neutral


def estimate_light(camera_rgb: np.ndarray, color_matrix: np.ndarray | None, calibrations: Sequence = (), *,
                   clip: float = 0.98, step: int = 1) -> tuple[np.ndarray, float | None, float | None]:
    """The camera RGB of the scene light (green = 1), its CCT and its Duv (None without a colour matrix).

    Parameters
    ----------
    camera_rgb : array_like
        (H, W, 3) linear camera RGB, white level 1.
    color_matrix : numpy.ndarray or None
        XYZ -> camera matrix; None: the grey-edge estimate unconstrained.
    calibrations : sequence
        A DNG's two (illuminant, matrix) pairs: the constraint then uses the matrix interpolated at the
        estimate's own temperature.
    clip, step : float, int
        As :func:`hetbench.isp.grey_edge.grey_edge_estimate`.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.awb import estimate_light
    >>> from hetbench.isp.capture import SRGB_TO_XYZ
    >>> from hetbench.isp.illuminant import cct_to_xy, xy_to_neutral
    >>> cm = np.linalg.inv(SRGB_TO_XYZ)
    >>> light = xy_to_neutral(cct_to_xy(3200), cm)
    >>> grey = np.random.default_rng(0).uniform(0.05, 0.4, (64, 64, 1))
    >>> n, cct, duv = estimate_light(grey * light / light.max(), cm)
    >>> round(cct, -1), bool(np.allclose(n, light, rtol=1e-3))
    (3200.0, True)
    """
    estimate = grey_edge_estimate(camera_rgb, clip=clip, step=step)
    matrix = color_matrix
    if calibrations:
        from hetbench.isp.calibration import matrix_at, neutral_to_xy_interpolated

        matrix = matrix_at(neutral_to_xy_interpolated(estimate, calibrations)[1], calibrations)
    if matrix is None:
        return estimate, None, None
    neutral, cct, duv = constrain_neutral(estimate, matrix)
    return neutral, float(cct), float(duv)
