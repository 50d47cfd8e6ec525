"""Transfer functions and tone curves, in one place for the tone stage, unprocessing and the reference.

The sRGB transfer functions (IEC 61966-2-1), and Brooks et al.'s smoothstep tone curve with its
closed-form inverse.

Both are colour-science's (``colour.models.eotf_inverse_sRGB`` / ``eotf_sRGB``) after clipping to
[0, 1]. They replace two hand-written copies; on every input the ISP feeds them (the 65,536 entries
of the tone stage's LUT, and the 256 values an 8-bit photograph decodes to after the inverse tone
curve) colour's float64 results are bit-identical to the hand-written formulas, so every rendered
byte is unchanged (checked when the copies were merged, and by the output fingerprint tests).

References
----------
.. [1] IEC 61966-2-1:1999, Multimedia systems and equipment - Colour measurement and management -
   Part 2-1: Default RGB colour space - sRGB, eq. (5) (decoding) and its inverse (encoding).
.. [2] M. Stokes, M. Anderson, S. Chandrasekar, R. Motta, "A Standard Default Color Space for the
   Internet - sRGB", 1996.
.. [3] T. Brooks et al., "Unprocessing Images for Learned Raw Denoising", CVPR 2019, section 3.1.
"""

from __future__ import annotations

import numpy as np


def srgb_encode(linear: np.ndarray) -> np.ndarray:
    """The sRGB transfer function (linear light -> encoded value), after clipping to [0, 1].

    ``V = 12.92 L`` for ``L <= 0.0031308``, else ``1.055 L^(1/2.4) - 0.055``.

    Parameters
    ----------
    linear : array_like
        Linear values; clipped to [0, 1] first.

    Returns
    -------
    numpy.ndarray
        float64 encoded values in [0, 1].

    References
    ----------
    IEC 61966-2-1:1999 (inverse of eq. (5)); Stokes et al. 1996.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.transfer import srgb_encode
    >>> srgb_encode(np.array([-1.0, 0.001, 0.18, 1.0, 2.0])).round(4).tolist()
    [0.0, 0.0129, 0.4614, 1.0, 1.0]
    """
    from colour.models import eotf_inverse_sRGB  # imported on use: about 1.2 s (hetbench.isp.srgb_tables)

    return eotf_inverse_sRGB(np.clip(np.asarray(linear, dtype=np.float64), 0.0, 1.0))


def srgb_decode(encoded: np.ndarray) -> np.ndarray:
    """The inverse sRGB transfer function (encoded value -> linear light), after clipping to [0, 1].

    ``L = V / 12.92`` for ``V <= 0.04045``, else ``((V + 0.055) / 1.055)^2.4``.

    Parameters
    ----------
    encoded : array_like
        sRGB-encoded values; clipped to [0, 1] first.

    Returns
    -------
    numpy.ndarray
        float64 linear values in [0, 1].

    References
    ----------
    IEC 61966-2-1:1999, eq. (5).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.transfer import srgb_decode
    >>> srgb_decode(np.array([0.0, 0.5, 1.0])).round(6).tolist()
    [0.0, 0.214041, 1.0]
    """
    from colour.models import eotf_sRGB  # imported on use: about 1.2 s (hetbench.isp.srgb_tables)

    return eotf_sRGB(np.clip(np.asarray(encoded, dtype=np.float64), 0.0, 1.0))


def smoothstep(x: np.ndarray) -> np.ndarray:
    """Brooks et al.'s global tone curve ``3x^2 - 2x^3`` on [0, 1].

    Parameters
    ----------
    x : array_like
        Values, clipped to [0, 1].

    Returns
    -------
    numpy.ndarray
        ``3x^2 - 2x^3``.

    References
    ----------
    Brooks et al., CVPR 2019, section 3.1 ("Tone mapping").

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.transfer import smoothstep
    >>> smoothstep(np.array([0.0, 0.25, 0.5, 1.0])).tolist()
    [0.0, 0.15625, 0.5, 1.0]
    """
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def inverse_smoothstep(y: np.ndarray) -> np.ndarray:
    """Closed-form inverse of :func:`smoothstep` on [0, 1]: ``0.5 - sin(asin(1 - 2y) / 3)``.

    Parameters
    ----------
    y : array_like
        Tone-mapped values, clipped to [0, 1].

    Returns
    -------
    numpy.ndarray
        ``x`` with ``smoothstep(x) = y``.

    References
    ----------
    Brooks et al., CVPR 2019, section 3.1, eq. for the inverse smoothstep.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.transfer import inverse_smoothstep
    >>> inverse_smoothstep(np.array([0.0, 0.15625, 0.5, 1.0])).round(6).tolist()
    [0.0, 0.25, 0.5, 1.0]
    """
    y = np.clip(y, 0.0, 1.0)
    return 0.5 - np.sin(np.arcsin(1.0 - 2.0 * y) / 3.0)
