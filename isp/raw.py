"""Reading any camera RAW file LibRaw decodes into a :class:`~hetbench.isp.capture.RawCapture`.

:func:`read_raw` takes the Bayer mosaic, CFA pattern, black and white levels from LibRaw (through
rawpy), and the colour matrix LibRaw itself uses for the file, so that the ISP renders the file the
way LibRaw would; files that are not a 3-colour Bayer mosaic raise :class:`UnsupportedRaw`.

References
----------
.. [1] LibRaw (https://www.libraw.org) through rawpy; D. Coffin, dcraw (``cam_xyz_coeff``).
.. [2] Adobe, *Digital Negative (DNG) Specification* 1.4 (ColorMatrix1, AsShotNeutral,
   CalibrationIlluminant1); Adobe, *TIFF Revision 6.0* (Make, Model).
"""

from __future__ import annotations

import os

import numpy as np

from hetbench.isp.capture import CFA_PATTERNS, SRGB_TO_XYZ, RawCapture
from hetbench.isp.raw_metadata import (
    ILLUMINANT_D65, color_matrix_from_rgb_cam, measure_rgb_cam, neutral_from_multipliers, pattern_from_colors, tiff_metadata,
)


class UnsupportedRaw(ValueError):
    """A RAW file that is readable but not a Bayer CFA mosaic (LinearRaw DNG, Foveon, ...), or not
    readable at all; ``reason`` is one line for the build report."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason




def read_raw(path, *, lens_shading: str = "dng") -> RawCapture:
    """Read one Bayer RAW file (anything LibRaw decodes) into a :class:`RawCapture`.

    * mosaic: ``raw_image_visible`` (the active area), copied, cropped at the bottom/right to even
      sides (which keeps the CFA phase);
    * cfa: from ``raw_colors_visible`` (checked to be a 2x2-periodic R/G/B Bayer layout) and
      ``color_desc``;
    * black_level: ``black_level_per_channel`` is indexed by LibRaw colour index; it is mapped to
      the 4 row-major CFA positions;
    * white_level: ``white_level``;
    * color_matrix: ``rgb_xyz_matrix[:3]`` when LibRaw has one (its built-in table); otherwise
      (e.g. most DNGs, where LibRaw uses the file's ColorMatrix but leaves that attribute zero)
      derived from ``color_matrix`` (camera -> sRGB) by :func:`color_matrix_from_rgb_cam`; when
      both are zero (e.g. Kodak DC50, where LibRaw still applies a matrix rawpy does not show),
      from LibRaw's matrix measured by :func:`measure_rgb_cam`; failing that ``inv(SRGB_TO_XYZ)``
      (camera RGB taken as linear sRGB, :meth:`RawCapture.camera_to_srgb` = identity). In every
      case ``camera_to_srgb()`` is the matrix LibRaw itself uses for this file;
    * as_shot_neutral: from ``camera_whitebalance``, else ``daylight_whitebalance``, else (1, 1, 1);
    * make / model: from the file's TIFF Make/Model tags when it has them (rawpy 0.28 does not
      expose LibRaw's make/model), else the file stem; capture_id: the file stem;
    * calibration_illuminant: 21 (D65: LibRaw's built-in matrices are D65 ones, and it prefers the
      D65 matrix of a DNG), except a DNG whose only ColorMatrix1 is for another illuminant;
    * lens shading: a DNG's GainMap and FixVignetteRadial opcodes (OpcodeList2, and OpcodeList3's
      FixVignetteRadial) are applied to the mosaic (:mod:`hetbench.isp.gain_map`,
      :mod:`hetbench.isp.lens_shading`; rectangles read in the visible area's coordinates); one that
      does not fit the image, or a required opcode of OpcodeList2 that is neither, is
      :class:`UnsupportedRaw` ``"unusable lens-shading opcodes (OpcodeList2): ..."``. ``lens_shading``
      chooses: ``"dng"`` (the file's own correction, if any), ``"none"`` (no correction) or
      ``"cos4:C"`` (the file's own, and for a file without one the cos^4-law correction of a lens whose
      corner receives C of the centre's light, :func:`hetbench.isp.lens_shading.cos4_vignette`);
    * calibrations: a DNG's ColorMatrix1/2 with CalibrationIlluminant1/2 when it has both
      (:mod:`hetbench.isp.calibration`); a malformed one (not 9 values, a zero denominator, singular,
      an unknown illuminant) is :class:`UnsupportedRaw` ``"malformed colour matrices: ..."``.
    * orientation: LibRaw's ``sizes.flip`` is not applied; the mosaic is in sensor orientation
      (what ``user_flip=0`` renders).

    Raises :class:`UnsupportedRaw` for files LibRaw cannot decode (``"cannot decode: ..."``: not a
    raw, truncated, corrupt) and for decodable files that are not a 3-colour Bayer mosaic (LinearRaw
    DNG, Foveon, X-Trans, CMYG...); a missing path is ``"cannot decode: no such file"`` (LibRaw
    itself would only say "Input/output error").

    Parameters
    ----------
    path : str or os.PathLike
        The RAW file.

    Returns
    -------
    RawCapture
        The mosaic and its colour metadata.

    References
    ----------
    LibRaw (via rawpy) data structures; Adobe DNG Specification 1.4; TIFF 6.0 (Make, Model).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.dng import write_dng
    >>> from hetbench.isp.capture import RawCapture
    >>> from hetbench.isp.raw import read_raw
    >>> cap = RawCapture(np.full((32, 32), 512, np.uint16), "BGGR", 64, 4095, np.eye(3), (0.5, 1.0, 0.6))
    >>> write_dng(cap, "example.dng")
    >>> back = read_raw("example.dng")
    >>> back.cfa, back.black_level, back.white_level, back.capture_id
    ('BGGR', (64.0, 64.0, 64.0, 64.0), 4095.0, 'example')
    """
    from hetbench.isp.libraw_stderr import libraw_quiet

    from hetbench.isp.lens_shading import parse_cos4_option

    model = parse_cos4_option(lens_shading)  # a bad option is the caller's ValueError, not the file's
    p = str(path)
    if not os.path.isfile(p):
        raise UnsupportedRaw(p, "cannot decode: no such file")
    with libraw_quiet():  # LibRaw's own messages: the reason in UnsupportedRaw says it in one line
        return _read_raw(p, _file_stem(p), str(lens_shading).strip().lower() != "none", model)


def _read_raw(p: str, stem: str, own_shading: bool = True, fallback_shading=None) -> RawCapture:
    """:func:`read_raw` of the file ``p`` (known to exist), whose capture id is ``stem``; ``own_shading``:
    apply the file's lens-shading opcodes; ``fallback_shading``: a RadialVignette for a file without any."""
    import rawpy  # imported lazily: only the ISP needs LibRaw

    try:
        raw = rawpy.imread(p)
    except Exception as exc:  # LibRawError subclasses, OSError, ...
        raise UnsupportedRaw(p, f"cannot decode: {_exc_line(exc)}") from None
    try:
        with raw:
            raw_type = raw.raw_type
            if raw_type != rawpy.RawType.Flat:
                name = getattr(raw_type, "name", str(raw_type))
                raise UnsupportedRaw(
                    p, f"not a CFA mosaic (LibRaw raw_type {name}: LinearRaw/demosaiced data, e.g. a LinearRaw DNG)"
                )
            pattern = raw.raw_pattern
            if pattern is None:
                raise UnsupportedRaw(p, "no CFA pattern (raw_pattern is None)")
            pattern = np.asarray(pattern)
            if pattern.shape != (2, 2):
                rows, cols = pattern.shape
                raise UnsupportedRaw(p, f"CFA repeat is {rows}x{cols}, not a 2x2 Bayer (e.g. X-Trans)")
            if raw.num_colors != 3:
                raise UnsupportedRaw(p, f"{raw.num_colors}-colour CFA ({raw.color_desc!r}), not RGB Bayer")
            colors = np.asarray(raw.raw_colors_visible)
            mosaic = np.array(raw.raw_image_visible, dtype=np.uint16, copy=True)
            if mosaic.ndim != 2:
                raise UnsupportedRaw(p, f"raw data has shape {mosaic.shape}, not a single-plane mosaic")
            h, w = (mosaic.shape[0] // 2) * 2, (mosaic.shape[1] // 2) * 2
            if h < 2 or w < 2:
                raise UnsupportedRaw(p, f"visible area {mosaic.shape} too small")
            mosaic = np.ascontiguousarray(mosaic[:h, :w])
            colors = colors[:h, :w]
            block = colors[:2, :2]
            periodic = all(np.all(colors[i::2, j::2] == block[i, j]) for i in range(2) for j in range(2))
            if not periodic:
                raise UnsupportedRaw(p, "CFA is not 2x2-periodic over the visible area")
            try:
                cfa = pattern_from_colors(block, raw.color_desc)
            except ValueError as exc:
                raise UnsupportedRaw(p, f"unreadable CFA: {exc}") from None
            if cfa not in CFA_PATTERNS:
                raise UnsupportedRaw(p, f"CFA {cfa!r} is not one of {'/'.join(CFA_PATTERNS)}")
            bl = list(raw.black_level_per_channel)
            black = tuple(float(bl[int(i)]) for i in block.ravel())
            white = float(raw.white_level)

            xyz_cam = np.asarray(raw.rgb_xyz_matrix, dtype=np.float64)[:3, :3]
            rgb_cam = np.asarray(raw.color_matrix, dtype=np.float64)[:3, :3]
            daylight = raw.daylight_whitebalance
            if np.any(xyz_cam != 0) and np.all(np.isfinite(xyz_cam)) and abs(np.linalg.det(xyz_cam)) > 1e-12:
                cmat = xyz_cam
            elif np.any(rgb_cam != 0) and np.all(np.isfinite(rgb_cam)) and abs(np.linalg.det(rgb_cam)) > 1e-12:
                cmat = color_matrix_from_rgb_cam(rgb_cam, daylight)
            else:
                measured = measure_rgb_cam(raw)
                if measured is not None:
                    cmat = color_matrix_from_rgb_cam(measured, daylight)
                else:
                    cmat = np.linalg.inv(SRGB_TO_XYZ)

            neutral = (
                neutral_from_multipliers(raw.camera_whitebalance)
                or neutral_from_multipliers(daylight)
                or (1.0, 1.0, 1.0)
            )
    except UnsupportedRaw:
        raise
    except Exception as exc:  # LibRaw errors raised lazily on first data access (truncated files)
        raise UnsupportedRaw(p, f"cannot decode: {_exc_line(exc)}") from None

    meta = tiff_metadata(p)
    shading = meta.get("gain_maps") if own_shading else None
    if not shading and own_shading and fallback_shading is not None:
        shading = [fallback_shading]
    if shading:  # the lens shading correction, before demosaicing (DNG spec ch. 7)
        from hetbench.isp.gain_map import apply_gain_maps

        black_map = np.asarray(black, np.float32).reshape(2, 2)[
            np.arange(mosaic.shape[0])[:, None] % 2, np.arange(mosaic.shape[1])[None, :] % 2]
        try:
            mosaic = apply_gain_maps(mosaic, black_map, white, shading)
        except ValueError as exc:
            meta["error"] = f"unusable lens-shading opcodes (OpcodeList2): {exc}"
    if "error" in meta:
        raise UnsupportedRaw(p, meta["error"])
    return RawCapture(
        mosaic=mosaic,
        cfa=cfa,
        black_level=black,
        white_level=white,
        color_matrix=cmat,
        as_shot_neutral=neutral,
        make=meta.get("make", stem),
        model=meta.get("model", stem),
        calibration_illuminant=meta.get("illuminant", ILLUMINANT_D65),
        capture_id=stem,
        calibrations=meta.get("calibrations", ()),
    )


def _file_stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _exc_line(exc: BaseException) -> str:
    """One line naming a LibRaw error (rawpy puts LibRaw's message in as bytes)."""
    parts = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in exc.args]
    text = " ".join(" ".join(parts).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
