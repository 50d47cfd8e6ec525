"""What :func:`hetbench.isp.raw.read_raw` reads beside the mosaic: the CFA pattern from LibRaw's colour
indices, the neutral from its multipliers, the colour matrix LibRaw uses (from its ``rgb_cam``, or measured
where rawpy does not expose it) and the DNG/TIFF tags (ColorMatrix1, AsShotNeutral, CalibrationIlluminant1,
Make, Model) read straight from the file.

References
----------
.. [1] LibRaw (https://www.libraw.org) through rawpy; D. Coffin, dcraw (``cam_xyz_coeff``).
.. [2] Adobe, *Digital Negative (DNG) Specification* 1.4; Adobe, *TIFF Revision 6.0*.
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.isp.capture import SRGB_TO_XYZ

#: EXIF LightSource codes used for CalibrationIlluminant1.
ILLUMINANT_D65 = 21


def pattern_from_colors(colors: np.ndarray, color_desc: bytes) -> str:
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


def neutral_from_multipliers(mult) -> tuple[float, float, float] | None:
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
    >>> from hetbench.isp.raw_metadata import color_matrix_from_rgb_cam
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


def measure_rgb_cam(raw) -> np.ndarray | None:
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


def tiff_metadata(path: str) -> dict:
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
        parsed = [None if v is None else srational_matrix(v) for v in raw_values]
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


def srational_matrix(value) -> np.ndarray:
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
