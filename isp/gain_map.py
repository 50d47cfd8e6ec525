"""Lens shading correction from a DNG's own GainMap and FixVignetteRadial opcodes (OpcodeList2).

Phone lenses darken and tint the corners of the frame; a phone DNG carries the per-channel correction
it measured as GainMap opcodes (DNG 1.3+ opcode 9) in OpcodeList2, which the DNG specification applies
to the raw data right after linearisation, before demosaicing. LibRaw does not apply them, so
:func:`hetbench.isp.raw.read_raw` does (:func:`apply_gain_maps`): each map is a grid of gains over a
rectangle of the mosaic, for the photosites on a row/column pitch (one map per CFA colour in practice),
bilinearly interpolated at each photosite.

Binary layout (big-endian): the opcode count, then per opcode its id, DNG version, flags, parameter
byte count and parameters. A GainMap's parameters: Top, Left, Bottom, Right, Plane, Planes, RowPitch,
ColPitch, MapPointsV, MapPointsH (uint32); MapSpacingV, MapSpacingH, MapOriginV, MapOriginH (float64,
in units of the rectangle's height/width); MapPlanes (uint32); then the gains (float32, row-major,
planes interleaved). Other opcodes are skipped (an optional one) or refused (one flagged as required).

References
----------
.. [1] Adobe, *Digital Negative (DNG) Specification* 1.4, chapter 7 "Opcode List Processing", GainMap
   (opcode 9), and tag OpcodeList2 (51009).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from hetbench.isp.lens_shading import OPCODE_FIX_VIGNETTE_RADIAL, RadialVignette, parse_fix_vignette_radial, scale_signal

OPCODE_GAIN_MAP = 9
#: an opcode whose flags have this bit may be skipped by a reader that does not know it
FLAG_OPTIONAL = 1


@dataclass(frozen=True)
class GainMap:
    """One GainMap opcode: the rectangle and pitch it covers and its grid of gains (V, H, planes)."""

    top: int
    left: int
    bottom: int
    right: int
    plane: int
    planes: int
    row_pitch: int
    col_pitch: int
    spacing: tuple[float, float]
    origin: tuple[float, float]
    gains: np.ndarray


def parse_opcode_list(data: bytes, *, radial_only: bool = False) -> list[GainMap | RadialVignette]:
    """The lens-shading opcodes of an OpcodeList tag's bytes: GainMaps and FixVignetteRadial
    (:mod:`hetbench.isp.lens_shading`), in their order.

    ``radial_only``: keep only FixVignetteRadial and pass over every other opcode, required or not (for
    OpcodeList3, which applies after demosaicing: its warps and colour-plane maps are not hetbench's to
    apply, and its radial vignetting gain is the same applied before).

    Raises
    ------
    ValueError
        One line: truncated data, a GainMap whose sizes disagree, a required opcode hetbench does not
        apply.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.gain_map import gain_map_opcode, parse_opcode_list
    >>> blob = gain_map_opcode(np.full((3, 3), 1.5, np.float32), top=0, left=0, bottom=8, right=8)
    >>> [(m.bottom, m.gains.shape) for m in parse_opcode_list(blob)]
    [(8, (3, 3, 1))]
    """
    buf = bytes(data)
    if len(buf) < 4:
        raise ValueError("OpcodeList is truncated")
    (count,), pos, maps = struct.unpack_from(">I", buf, 0), 4, []
    for _ in range(count):
        if pos + 16 > len(buf):
            raise ValueError("OpcodeList is truncated")
        op, _version, flags, size = struct.unpack_from(">IIII", buf, pos)
        pos += 16
        if pos + size > len(buf):
            raise ValueError(f"opcode {op} says {size} bytes, the list has {len(buf) - pos}")
        body = buf[pos : pos + size]
        pos += size
        if op == OPCODE_FIX_VIGNETTE_RADIAL:
            maps.append(parse_fix_vignette_radial(body))
        elif radial_only:
            continue
        elif op == OPCODE_GAIN_MAP:
            maps.append(_gain_map(body))
        elif not flags & FLAG_OPTIONAL:
            raise ValueError(f"required DNG opcode {op} is not supported (only GainMap, 9, and FixVignetteRadial, 3)")
    return maps


def _gain_map(body: bytes) -> GainMap:
    if len(body) < 76:
        raise ValueError("GainMap opcode is truncated")
    top, left, bottom, right, plane, planes, row_pitch, col_pitch, points_v, points_h = struct.unpack_from(">10I", body, 0)
    spacing_v, spacing_h, origin_v, origin_h = struct.unpack_from(">4d", body, 40)
    (map_planes,) = struct.unpack_from(">I", body, 72)
    n = points_v * points_h * map_planes
    if not (bottom > top and right > left and row_pitch > 0 and col_pitch > 0 and points_v > 0 and points_h > 0
            and map_planes > 0) or len(body) != 76 + 4 * n:
        raise ValueError(f"GainMap opcode is malformed ({points_v} x {points_h} x {map_planes} gains in "
                         f"{len(body) - 76} bytes, area {top}-{bottom} x {left}-{right})")
    for name, value, points in (("MapSpacingV", spacing_v, points_v), ("MapSpacingH", spacing_h, points_h),
                                ("MapOriginV", origin_v, None), ("MapOriginH", origin_h, None)):
        # the DNG specification's map is a grid at finite, positive spacings from a finite origin; a NaN
        # origin indexed the map at garbage positions, a NaN or non-positive spacing collapsed it silently
        if not np.isfinite(value) or (points is not None and points > 1 and not value > 0):
            raise ValueError(f"GainMap opcode is malformed ({name} is {value!r})")
    gains = np.frombuffer(body, ">f4", count=n, offset=76).astype(np.float32).reshape(points_v, points_h, map_planes)
    if not np.all(np.isfinite(gains)) or np.any(gains <= 0):
        raise ValueError("GainMap has a gain that is not positive and finite")
    return GainMap(top, left, bottom, right, plane, planes, row_pitch, col_pitch, (spacing_v, spacing_h),
                   (origin_v, origin_h), gains)


def gain_map_opcode(gains: np.ndarray, *, top: int, left: int, bottom: int, right: int, row_pitch: int = 1,
                    col_pitch: int = 1, optional: bool = True) -> bytes:
    """An OpcodeList holding one GainMap over [top, bottom) x [left, right) with a (V, H) grid of gains
    spanning it (spacing 1 / (points - 1), origin 0): what a DNG writer stores, for tests and examples."""
    g = np.asarray(gains, np.float32)
    v, h = g.shape[:2]
    params = struct.pack(">10I", top, left, bottom, right, 0, 1, row_pitch, col_pitch, v, h)
    params += struct.pack(">4d", 1.0 / max(v - 1, 1), 1.0 / max(h - 1, 1), 0.0, 0.0) + struct.pack(">I", 1)
    params += g.astype(">f4").tobytes()
    return struct.pack(">I", 1) + struct.pack(">IIII", OPCODE_GAIN_MAP, 0x01030000, int(optional), len(params)) + params


def _axis_weights(coords: np.ndarray, origin: float, spacing: float, points: int) -> tuple[np.ndarray, ...]:
    """Bilinear interpolation indices and weights of relative positions ``coords`` on a map axis."""
    pos = (coords - origin) / spacing if spacing > 0 else np.zeros_like(coords)
    pos = np.clip(pos, 0.0, points - 1.0)
    i0 = np.minimum(np.floor(pos).astype(np.int64), points - 1)
    i1 = np.minimum(i0 + 1, points - 1)
    return i0, i1, (pos - i0).astype(np.float32)


def apply_gain_maps(mosaic: np.ndarray, black: np.ndarray, white: float,
                    maps: list[GainMap | RadialVignette]) -> np.ndarray:
    """The mosaic with each map's gains applied to its photosites' signal above black (rounded, clipped at
    ``white``): linear values times the gain, as the DNG specification applies OpcodeList2. A
    :class:`~hetbench.isp.lens_shading.RadialVignette` (FixVignetteRadial) covers the whole frame.

    Parameters
    ----------
    mosaic : numpy.ndarray
        (H, W) uint16 sensor values.
    black : numpy.ndarray
        (H, W) or broadcastable black level of each photosite.
    white : float
        White level.
    maps : list of GainMap
        From :func:`parse_opcode_list`.

    Raises
    ------
    ValueError
        A map whose rectangle does not fit the image, or that names a plane a mosaic does not have.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.gain_map import apply_gain_maps, gain_map_opcode, parse_opcode_list
    >>> flat = np.full((4, 4), 164, np.uint16)  # 100 above black 64
    >>> vignette = np.array([[2.0, 1.0], [1.0, 2.0]], np.float32)  # corners TL, BR x2
    >>> out = apply_gain_maps(flat, np.full((4, 4), 64.0), 1023, parse_opcode_list(
    ...     gain_map_opcode(vignette, top=0, left=0, bottom=4, right=4)))
    >>> out[0].tolist()
    [264, 239, 214, 189]
    """
    h, w = mosaic.shape
    gain_all = np.ones((h, w), np.float32)
    for m in maps:
        if isinstance(m, RadialVignette):
            gain_all *= m.gain(h, w)
            continue
        if m.bottom > h or m.right > w:
            raise ValueError(f"GainMap covers rows {m.top}-{m.bottom}, columns {m.left}-{m.right}; the image is {h} x {w}")
        if m.plane != 0 or m.planes != 1:
            raise ValueError(f"GainMap for plane {m.plane} of {m.planes}: a CFA mosaic has one plane")
        rows = np.arange(m.top, m.bottom, m.row_pitch)
        cols = np.arange(m.left, m.right, m.col_pitch)
        rv = (rows - m.top).astype(np.float64) / (m.bottom - m.top)  # relative: 0 at Top, 1 at Bottom
        ch = (cols - m.left).astype(np.float64) / (m.right - m.left)
        r0, r1, fr = _axis_weights(rv, m.origin[0], m.spacing[0], m.gains.shape[0])
        c0, c1, fc = _axis_weights(ch, m.origin[1], m.spacing[1], m.gains.shape[1])
        g = m.gains[..., 0]
        top = g[r0][:, c0] * (1 - fc) + g[r0][:, c1] * fc
        bot = g[r1][:, c0] * (1 - fc) + g[r1][:, c1] * fc
        gain = top * (1 - fr)[:, None] + bot * fr[:, None]
        gain_all[np.ix_(rows, cols)] *= gain
    return scale_signal(mosaic, black, white, gain_all)
