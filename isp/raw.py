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

import math
import os

import numpy as np

from hetbench.isp.capture import CFA_PATTERNS, SRGB_TO_XYZ, RawCapture

class UnsupportedRaw(ValueError):
    """A RAW file that is readable but not a Bayer CFA mosaic (LinearRaw DNG, Foveon, ...), or not
    readable at all; ``reason`` is one line for the build report."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


#: EXIF LightSource codes used for CalibrationIlluminant1.
ILLUMINANT_D65 = 21


def _pattern_from_colors(colors: np.ndarray, color_desc: bytes) -> str:
    """2x2 CFA string from a (2, 2) block of LibRaw colour indices and ``color_desc``.

    ``raw_pattern`` / ``raw_colors`` hold indices into ``color_desc`` (e.g. ``b'RGBG'``: 0 R,
    1 G, 2 B, 3 second G), so the two greens carry different indices; both map to ``G`` here.
    """
    desc = color_desc.decode("ascii", "replace") if isinstance(color_desc, bytes) else str(color_desc)
    letters = []
    for idx in np.asarray(colors).ravel():
        i = int(idx)
        if not 0 <= i < len(desc):
            raise ValueError(f"colour index {i} outside color_desc {desc!r}")
        letters.append(desc[i])
    return "".join(letters)


def _neutral_from_multipliers(mult) -> tuple[float, float, float] | None:
    """AsShotNeutral = 1 / WB multiplier, normalised so green = 1; None when unusable."""
    if mult is None:
        return None
    m = np.asarray(list(mult)[:3], dtype=np.float64)
    if m.shape != (3,) or not np.all(np.isfinite(m)) or np.any(m <= 0):
        return None
    neutral = (1.0 / m) / (1.0 / m[1])
    return (float(neutral[0]), 1.0, float(neutral[2]))


def color_matrix_from_rgb_cam(rgb_cam: np.ndarray, daylight_wb=None) -> np.ndarray:
    """XYZ -> camera matrix (ColorMatrix1-style) recovered from LibRaw's camera -> sRGB ``rgb_cam``.

    LibRaw (dcraw's ``cam_xyz_coeff``) builds ``rgb_cam = inv(rownorm(cm @ SRGB_TO_XYZ))``, where
    ``rownorm`` divides row ``i`` by its sum ``s_i``, and stores ``pre_mul[i] = 1 / s_i`` (rawpy's
    ``daylight_whitebalance``). Hence ``inv(SRGB_TO_XYZ @ rgb_cam) = diag(1 / s) @ cm`` and, with a
    usable ``daylight_wb``, ``cm = diag(1 / daylight_wb) @ inv(SRGB_TO_XYZ @ rgb_cam)`` exactly
    (measured: the DNG's ColorMatrix1 to 5 digits, LibRaw keeps rgb_cam in float32). Without it the
    rows are only known up to scale; they are then scaled so that the largest response to D65 white
    (XYZ of sRGB (1, 1, 1)) is 1. Either way :meth:`RawCapture.camera_to_srgb` of the result
    reproduces ``rgb_cam``: its row normalisation cancels any row scale.

    Parameters
    ----------
    rgb_cam : array_like
        (3, 3) (or larger; the top-left 3x3 is used) camera -> sRGB matrix.
    daylight_wb : array_like, optional
        LibRaw's ``pre_mul`` (rawpy ``daylight_whitebalance``).

    Returns
    -------
    numpy.ndarray
        float64 (3, 3) XYZ -> camera matrix.

    References
    ----------
    dcraw / LibRaw ``cam_xyz_coeff``; Adobe DNG Specification 1.4 (ColorMatrix1).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.capture import RawCapture
    >>> from hetbench.isp.raw import color_matrix_from_rgb_cam
    >>> rgb_cam = np.array([[1.6, -0.5, -0.1], [-0.2, 1.4, -0.2], [0.0, -0.4, 1.4]])
    >>> cm = color_matrix_from_rgb_cam(rgb_cam)
    >>> cap = RawCapture(np.zeros((2, 2), np.uint16), "RGGB", 0, 1023, cm, (1, 1, 1))
    >>> bool(np.allclose(cap.camera_to_srgb(), rgb_cam))
    True
    """
    from hetbench.isp.matrix3 import inverse, matmul, matvec  # scalar arithmetic: the same bits on every CPU

    rgb_cam = np.asarray(rgb_cam, dtype=np.float64)[:3, :3]
    cm = inverse(matmul(SRGB_TO_XYZ, rgb_cam))
    d = None if daylight_wb is None else np.asarray(list(daylight_wb)[:3], dtype=np.float64)
    if d is not None and d.shape == (3,) and np.all(np.isfinite(d)) and np.all(d > 0):
        return cm / d[:, None]
    white = matvec(cm, matvec(SRGB_TO_XYZ, np.ones(3)))
    peak = float(np.max(np.abs(white)))
    if np.isfinite(peak) and peak > 0:
        cm = cm / peak
    return cm


def _measure_rgb_cam(raw) -> np.ndarray | None:
    """LibRaw's internal camera -> sRGB matrix (``rgb_cam``), measured, for files where rawpy shows
    neither ``rgb_xyz_matrix`` nor ``color_matrix`` (e.g. Kodak DC50: LibRaw then still applies a
    built-in or file matrix, which rawpy 0.28 does not expose).

    Renders the file twice with ``half_size`` (no demosaic, so no mixing between pixels), unit WB,
    linear 16-bit, once in raw colour and once in sRGB, and solves ``srgb = rgb_cam @ raw`` by least
    squares on the pixels clipped in neither. Returns None when there are too few such pixels or the
    fit is not exact to a few DN (then the caller falls back to an identity camera -> sRGB).
    """
    import rawpy

    common = dict(
        half_size=True, user_wb=[1.0, 1.0, 1.0, 1.0], gamma=(1, 1), no_auto_bright=True, output_bps=16,
        user_flip=0, adjust_maximum_thr=0.0, highlight_mode=rawpy.HighlightMode.Clip,
    )
    try:
        cam = raw.postprocess(output_color=rawpy.ColorSpace.raw, **common).reshape(-1, 3).astype(np.float64)
        srgb = raw.postprocess(output_color=rawpy.ColorSpace.sRGB, **common).reshape(-1, 3).astype(np.float64)
    except Exception:
        return None
    if cam.shape != srgb.shape:
        return None
    ok = (cam.min(axis=1) > 64) & (cam.max(axis=1) < 60000) & (srgb.min(axis=1) > 64) & (srgb.max(axis=1) < 60000)
    if ok.sum() < 1000:
        return None
    a, b = cam[ok], srgb[ok]
    # least squares by the normal equations, each sum exactly rounded (math.fsum) and the 3 x 3 algebra
    # in scalar arithmetic: LAPACK's lstsq gives other last bits on other CPUs
    from hetbench.isp.matrix3 import determinant, inverse, matmul

    ata = [[math.fsum(a[:, i] * a[:, j]) for j in range(3)] for i in range(3)]
    atb = [[math.fsum(a[:, i] * b[:, j]) for j in range(3)] for i in range(3)]
    try:
        sol = matmul(inverse(ata), atb)  # (3 raw, 3 sRGB): srgb = raw @ sol
    except ValueError:
        return None
    rgb_cam = sol.T
    fit = (a[:, 0:1] * sol[0] + a[:, 1:2] * sol[1]) + a[:, 2:3] * sol[2]
    resid = np.abs(fit - b)
    if not np.all(np.isfinite(rgb_cam)) or np.percentile(resid, 99) > 4.0 or abs(determinant(rgb_cam.tolist())) < 1e-6:
        return None
    return rgb_cam


def _tiff_metadata(path: str) -> dict:
    """Make, Model and the calibration illuminant of the matrix LibRaw uses, from the first IFD of
    TIFF-based raws (DNG, KDC, CR2, NEF...); empty for other containers or unreadable files.

    LibRaw takes the D65 matrix when a DNG has two; with a single ColorMatrix1 its
    CalibrationIlluminant1 applies.
    """
    out: dict = {}
    try:
        import tifffile

        with tifffile.TiffFile(path) as tf:
            tags = tf.pages[0].tags
            for key, code in (("make", 271), ("model", 272)):
                tag = tags.get(code)
                if tag is not None and isinstance(tag.value, str) and tag.value.strip("\x00 "):
                    out[key] = tag.value.strip("\x00 ")
            ill = [tags.get(c) for c in (50778, 50779)]
            codes = [int(t.value) for t in ill if t is not None and isinstance(t.value, int)]
            if codes and ILLUMINANT_D65 not in codes and tags.get(50721) is not None and tags.get(50722) is None:
                out["illuminant"] = codes[0]
            matrices = [tags.get(c) for c in (50721, 50722)]
            raw_values = [None if t is None else t.value for t in matrices]
            # OpcodeList2 (GainMaps, FixVignetteRadial) and OpcodeList3's FixVignetteRadial: lens shading
            opcode_bytes = [None if tags.get(code) is None else bytes(tags.get(code).value) for code in (51009, 51022)]
    except Exception:  # not a TIFF container, or unreadable: callers fall back to defaults
        return {}
    try:  # outside the guard above: a malformed matrix is the file's fault, said in one line
        parsed = [None if v is None else _srational_matrix(v) for v in raw_values]
        if parsed[0] is not None and parsed[1] is not None:
            if len(codes) != 2:
                raise ValueError("ColorMatrix2 without both CalibrationIlluminant tags")
            from hetbench.isp.calibration import check_calibrations

            out["calibrations"] = check_calibrations(list(zip(codes, parsed)))
    except ValueError as exc:
        out["error"] = f"malformed colour matrices: {exc}"
    from hetbench.isp.gain_map import parse_opcode_list

    for listing, data in zip((2, 3), opcode_bytes):
        if data is None or "error" in out:
            continue
        try:
            out.setdefault("gain_maps", []).extend(parse_opcode_list(data, radial_only=listing == 3))
        except ValueError as exc:
            out["error"] = f"unusable lens-shading opcodes (OpcodeList{listing}): {exc}"
    return out


def _srational_matrix(value) -> np.ndarray:
    """A 3 x 3 ColorMatrix from a DNG SRATIONAL tag value (tifffile gives numerator, denominator pairs)."""
    flat = np.asarray(value, dtype=np.float64).ravel()
    if flat.size != 18:
        raise ValueError(f"a ColorMatrix has {flat.size // 2} values, not 9 (3-colour Bayer)")
    num, den = flat[0::2], flat[1::2]
    if np.any(den == 0):
        raise ValueError("a ColorMatrix has a zero denominator")
    m = (num / den).reshape(3, 3)
    if not np.all(np.isfinite(m)) or abs(float(np.linalg.det(m))) < 1e-9:
        raise ValueError("a ColorMatrix is singular or not finite")
    return m


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
      from LibRaw's matrix measured by :func:`_measure_rgb_cam`; failing that ``inv(SRGB_TO_XYZ)``
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
                cfa = _pattern_from_colors(block, raw.color_desc)
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
                measured = _measure_rgb_cam(raw)
                if measured is not None:
                    cmat = color_matrix_from_rgb_cam(measured, daylight)
                else:
                    cmat = np.linalg.inv(SRGB_TO_XYZ)

            neutral = (
                _neutral_from_multipliers(raw.camera_whitebalance)
                or _neutral_from_multipliers(daylight)
                or (1.0, 1.0, 1.0)
            )
    except UnsupportedRaw:
        raise
    except Exception as exc:  # LibRaw errors raised lazily on first data access (truncated files)
        raise UnsupportedRaw(p, f"cannot decode: {_exc_line(exc)}") from None

    meta = _tiff_metadata(p)
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
