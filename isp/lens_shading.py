"""Radial lens shading: the DNG FixVignetteRadial model, the cos^4 law of a lens, and its correction.

A lens darkens the frame towards its corners. The DNG specification describes the correction as a
radial polynomial gain (opcode FixVignetteRadial, id 3):

    g(r) = 1 + k0 r^2 + k1 r^4 + k2 r^6 + k3 r^8 + k4 r^10                (DNG 1.4, chapter 7)

with r the distance from the optical centre (cx, cy; relative coordinates, (0, 0) the top-left and
(1, 1) the bottom-right photosite) divided by the distance to the farthest corner, so r = 1 there.
A DNG writer stores it in an OpcodeList; :func:`hetbench.isp.raw.read_raw` applies it to the mosaic's
signal above black (a smooth gain commutes with demosaicing, so applying it before is equivalent).

Where a capture carries no correction of its own, the natural vignetting of a thin lens, the cos^4 law
(illumination at field angle theta = cos^4 theta times the centre's), is the radial model: with
tan theta = r tan theta_max and the corner's relative illumination c = cos^4 theta_max,

    V(r) = 1 / (1 + t r^2)^2,   t = c^(-1/2) - 1,

whose exact inverse is the polynomial above with k0 = 2 t, k1 = t^2 (:func:`cos4_vignette`). A phone
ISP may correct fully, partly (many tunings keep some vignetting: a full correction amplifies the
corners' noise) or not at all (:data:`CORRECTIONS`, the exponent applied to the full gain).

Every operation is an element-wise float64 multiply, add or square root, so the gains have the same
bits on every CPU.

References
----------
.. [1] Adobe, *Digital Negative (DNG) Specification* 1.4, chapter 7, opcode FixVignetteRadial (3).
.. [2] E. Hecht, *Optics*, 5th ed., 2017, section 5.7 (the cos^4 law of illumination); S. F. Ray,
   *Applied Photographic Optics*, 3rd ed., 2002, chapter 29 (natural vignetting of camera lenses).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from hetbench.registry import Registry

OPCODE_FIX_VIGNETTE_RADIAL = 3
#: what a phone's ISP does with its lens's falloff: the fraction (in EV) of it that it corrects
CORRECTIONS: Registry[float] = Registry("lens-shading correction", {"none": 0.0, "partial": 0.5, "full": 1.0})


@dataclass(frozen=True)
class RadialVignette:
    """A FixVignetteRadial correction: the gain polynomial's coefficients k0..k4 and the optical centre.

    Examples
    --------
    >>> from hetbench.isp.lens_shading import RadialVignette
    >>> g = RadialVignette((1.0, 0.0, 0.0, 0.0, 0.0)).gain(3, 3)  # g = 1 + r^2
    >>> g[1, 1].item(), g[0, 0].item(), round(g[0, 1].item(), 3)
    (1.0, 2.0, 1.5)
    """

    coefficients: tuple[float, float, float, float, float]
    centre: tuple[float, float] = (0.5, 0.5)

    def __post_init__(self) -> None:
        k = tuple(float(v) for v in self.coefficients)
        c = tuple(float(v) for v in self.centre)
        if len(k) != 5 or not all(math.isfinite(v) for v in k):
            raise ValueError(f"FixVignetteRadial needs 5 finite coefficients, got {self.coefficients!r}")
        if len(c) != 2 or not all(0.0 <= v <= 1.0 for v in c):
            raise ValueError(f"FixVignetteRadial's optical centre must lie in [0, 1] x [0, 1], got {self.centre!r}")
        object.__setattr__(self, "coefficients", k)
        object.__setattr__(self, "centre", c)

    def gain(self, height: int, width: int) -> np.ndarray:
        """float32 (height, width): g(r) at every photosite, by Horner's rule in r^2.

        Raises
        ------
        ValueError
            A gain that is not positive and finite somewhere in the frame.
        """
        cx, cy = self.centre[0] * (width - 1), self.centre[1] * (height - 1)
        mx, my = max(cx, width - 1 - cx), max(cy, height - 1 - cy)
        norm = mx * mx + my * my
        dy2 = (np.arange(height, dtype=np.float64) - cy) ** 2
        dx2 = (np.arange(width, dtype=np.float64) - cx) ** 2
        r2 = (dy2[:, None] + dx2[None, :]) / norm if norm > 0 else np.zeros((height, width))
        k0, k1, k2, k3, k4 = self.coefficients
        g = 1.0 + r2 * (k0 + r2 * (k1 + r2 * (k2 + r2 * (k3 + r2 * k4))))
        if not (np.all(np.isfinite(g)) and np.all(g > 0)):
            raise ValueError(f"FixVignetteRadial {self.coefficients} gives a gain that is not positive in the frame")
        return g.astype(np.float32)


def cos4_vignette(corner: float) -> RadialVignette:
    """The correction that undoes a cos^4-law lens whose corner receives ``corner`` of the centre's light.

    Parameters
    ----------
    corner : float
        Relative illumination at the frame's corner, in (0, 1] (1: no vignetting).

    Examples
    --------
    >>> from hetbench.isp.lens_shading import cos4_vignette
    >>> v = cos4_vignette(0.25)
    >>> [round(k, 6) for k in v.coefficients[:2]], round(float(v.gain(5, 5)[0, 0]), 6)  # corner x4
    ([2.0, 1.0], 4.0)
    """
    c = float(corner)
    if not 0.0 < c <= 1.0:
        raise ValueError(f"corner illumination must be in (0, 1], got {corner!r}")
    t = c ** -0.5 - 1.0
    return RadialVignette((2.0 * t, t * t, 0.0, 0.0, 0.0))


def parse_cos4_option(text: str) -> RadialVignette | None:
    """``--lens-shading``'s radial model: ``cos4:C`` (C the corner's relative illumination), or None for
    ``dng`` (only the file's own correction) and ``none``.

    Examples
    --------
    >>> from hetbench.isp.lens_shading import parse_cos4_option
    >>> parse_cos4_option("cos4:0.5").coefficients[1] > 0, parse_cos4_option("dng")
    (True, None)
    """
    value = str(text).strip().lower()
    if value in ("dng", "none"):
        return None
    if value.startswith("cos4:"):
        try:
            return cos4_vignette(float(value[5:]))
        except ValueError:
            pass
    raise ValueError(f"`lens_shading` {text!r}: choose dng, none or cos4:C with C in (0, 1] "
                     "(the corner's relative illumination)")


def parse_fix_vignette_radial(body: bytes) -> RadialVignette:
    """A FixVignetteRadial opcode's parameters (7 big-endian float64: k0..k4, cx, cy).

    Examples
    --------
    >>> from hetbench.isp.lens_shading import fix_vignette_radial_opcode, parse_fix_vignette_radial
    >>> blob = fix_vignette_radial_opcode((0.5, 0, 0, 0, 0))
    >>> parse_fix_vignette_radial(blob[20:]).coefficients[0]
    0.5
    """
    if len(body) != 56:
        raise ValueError(f"FixVignetteRadial has {len(body)} parameter bytes, not 56")
    values = struct.unpack(">7d", body)
    return RadialVignette(values[:5], values[5:])


def fix_vignette_radial_opcode(coefficients, centre=(0.5, 0.5), *, optional: bool = True) -> bytes:
    """An OpcodeList holding one FixVignetteRadial opcode: what a DNG writer stores, for tests and examples."""
    params = struct.pack(">7d", *(float(k) for k in coefficients), *(float(c) for c in centre))
    return struct.pack(">I", 1) + struct.pack(">IIII", OPCODE_FIX_VIGNETTE_RADIAL, 0x01030000, int(optional),
                                              len(params)) + params


def scale_signal(mosaic: np.ndarray, black, white: float, gain: np.ndarray) -> np.ndarray:
    """``mosaic`` with its signal above ``black`` multiplied by ``gain``, rounded and clipped to
    [0, white]: how the DNG specification applies an opcode's gains to linear raw data.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.lens_shading import scale_signal
    >>> scale_signal(np.array([[164, 1000]], np.uint16), 64.0, 1023, np.float32([[2.0, 2.0]])).tolist()
    [[264, 1023]]
    """
    out = mosaic.astype(np.float32) - np.asarray(black, np.float32)
    out *= gain
    out += np.asarray(black, np.float32)
    return np.clip(np.rint(out), 0, white).astype(np.uint16)


@dataclass(frozen=True)
class LensShading:
    """A device's lens and its ISP's answer: the cos^4-law falloff its lens puts on the sensor (corner
    illumination ``corner``) and how much of it the ISP corrects (``correction``, a :data:`CORRECTIONS`
    name). The default is an ideal lens (no falloff, nothing to correct).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.lens_shading import LensShading
    >>> lens = LensShading(corner=0.25, correction="partial")
    >>> on_sensor, gain = lens.falloff_and_correction(5, 5)
    >>> round(float(on_sensor[0, 0]), 6), round(float(on_sensor[2, 2]), 6)
    (0.25, 1.0)
    >>> round(float(on_sensor[0, 0] * gain[0, 0]), 6)  # half the falloff in EV kept
    0.5
    """

    corner: float = 1.0
    correction: str = "none"

    def __post_init__(self) -> None:
        cos4_vignette(self.corner)  # a corner outside (0, 1] is a ValueError
        CORRECTIONS[self.correction]  # an unknown name lists the valid ones

    def falloff_and_correction(self, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The lens's relative illumination at each photosite (float64) and the ISP's gain (float32): the
        full cos^4 correction g to the power of the correction's fraction (0 none, 1/2 partial, 1 full).
        One evaluation of g serves both."""
        gain = cos4_vignette(self.corner).gain(height, width).astype(np.float64)
        return 1.0 / gain, (gain ** CORRECTIONS[self.correction]).astype(np.float32)
