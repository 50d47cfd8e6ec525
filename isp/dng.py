"""Writing uncompressed CFA DNGs that LibRaw decodes exactly (every capture takes one LibRaw path).

A :class:`~hetbench.isp.capture.RawCapture` is written as a single-IFD DNG 1.4 with 16-bit samples and
no compression (LibRaw rejects tifffile's deflate CFA DNGs; docs/architecture.md).

References
----------
.. [1] Adobe, *Digital Negative (DNG) Specification* 1.4.0.0, 2012 (tags 50706-50778, CFA tags
   33421/33422 from TIFF/EP, ISO 12234-2).
.. [2] Adobe, *TIFF Revision 6.0*, 1992 (field types BYTE, ASCII, SHORT, LONG, (S)RATIONAL).
"""

from __future__ import annotations

import numpy as np

from hetbench.isp.capture import RawCapture

_TAG_CFA_REPEAT_PATTERN_DIM = 33421
_TAG_CFA_PATTERN = 33422
_TAG_MAKE = 271
_TAG_MODEL = 272
_TAG_DNG_VERSION = 50706
_TAG_DNG_BACKWARD_VERSION = 50707
_TAG_UNIQUE_CAMERA_MODEL = 50708
_TAG_BLACK_LEVEL_REPEAT_DIM = 50713
_TAG_BLACK_LEVEL = 50714
_TAG_WHITE_LEVEL = 50717
_TAG_COLOR_MATRIX1 = 50721
_TAG_COLOR_MATRIX2 = 50722
_TAG_OPCODE_LIST2 = 51009
_TAG_OPCODE_LIST3 = 51022
_UNDEFINED = 7
_TAG_CALIBRATION_ILLUMINANT2 = 50779
_TAG_AS_SHOT_NEUTRAL = 50728
_TAG_CALIBRATION_ILLUMINANT1 = 50778
# TIFF field types
_BYTE, _ASCII, _SHORT, _LONG, _RATIONAL, _SRATIONAL = 1, 2, 3, 4, 5, 10


def _rationals(values, signed: bool) -> tuple[int, ...]:
    """Flat (num, den, num, den, ...): the closest fraction whose numerator and denominator fit the
    32-bit TIFF (S)RATIONAL fields (relative error far below LibRaw's float32)."""
    from fractions import Fraction

    limit = 2**31 - 1 if signed else 2**32 - 1
    out: list[int] = []
    for v in np.asarray(values, dtype=np.float64).ravel():
        if not np.isfinite(v):
            raise ValueError(f"cannot store {v} as a TIFF rational")
        if not signed and v < 0:
            raise ValueError(f"negative value {v} in an unsigned RATIONAL tag")
        if abs(v) > limit:
            raise ValueError(f"value {v} too large for a TIFF rational")
        frac = Fraction(float(v)).limit_denominator(max(1, int(limit // max(abs(v), 1.0))))
        if abs(frac.numerator) > limit:  # rounding pushed it over: drop to an integer value
            frac = Fraction(int(round(v)))
        out += [frac.numerator, frac.denominator]
    return tuple(out)


def _ascii(text: str) -> str:
    return (text or "unknown").encode("ascii", "replace").decode("ascii")


def write_dng(capture: RawCapture, path_or_buffer, opcode_list2: bytes | None = None,
              opcode_list3: bytes | None = None) -> None:
    """Write ``capture`` as an uncompressed single-IFD CFA DNG (DNG 1.4) that LibRaw decodes exactly.

    The mosaic is stored as 16-bit samples in IFD0 (no thumbnail, no SubIFD), with: NewSubfileType 0,
    PhotometricInterpretation 32803 (CFA), CFARepeatPatternDim (2, 2), CFAPattern, DNGVersion 1.4,
    DNGBackwardVersion 1.3, UniqueCameraModel, BlackLevelRepeatDim (2, 2) + BlackLevel (4 RATIONAL
    values, row-major CFA positions), WhiteLevel (LONG), ColorMatrix1 (9 SRATIONAL),
    CalibrationIlluminant1 (and ColorMatrix2 / CalibrationIlluminant2 for a capture with two
    ``calibrations``), AsShotNeutral (3 RATIONAL), Make and Model. Compression must stay off:
    LibRaw rejects tifffile's deflate CFA DNGs (docs/architecture.md).

    Parameters
    ----------
    capture : RawCapture
        The frame; its white level must fit 16 bits.
    path_or_buffer : str, os.PathLike or file-like
        Where to write.
    opcode_list2, opcode_list3 : bytes, optional
        OpcodeList2 / OpcodeList3 tags to store (e.g. a lens-shading GainMap, :mod:`hetbench.isp.gain_map`,
        or FixVignetteRadial, :mod:`hetbench.isp.lens_shading`).

    References
    ----------
    Adobe DNG Specification 1.4; TIFF 6.0.

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from hetbench.isp.dng import write_dng
    >>> from hetbench.isp.capture import RawCapture
    >>> buf = io.BytesIO()
    >>> write_dng(RawCapture(np.zeros((4, 4), np.uint16), "RGGB", 0, 1023, np.eye(3), (1, 1, 1)), buf)
    >>> buf.getvalue()[:4]
    b'II*\\x00'
    """
    import tifffile

    white = float(capture.white_level)
    if not (np.isfinite(white) and 0 < white <= 65535):
        raise ValueError(f"white level {white} does not fit 16-bit samples")
    unique = _ascii(f"{capture.make} {capture.model}".strip())
    extratags = [
        (_TAG_CFA_REPEAT_PATTERN_DIM, _SHORT, 2, (2, 2), True),
        (_TAG_CFA_PATTERN, _BYTE, 4, bytes(int(c) for c in capture.cfa_codes.ravel()), True),
        (_TAG_MAKE, _ASCII, 0, _ascii(capture.make), True),
        (_TAG_MODEL, _ASCII, 0, _ascii(capture.model), True),
        (_TAG_DNG_VERSION, _BYTE, 4, bytes((1, 4, 0, 0)), True),
        (_TAG_DNG_BACKWARD_VERSION, _BYTE, 4, bytes((1, 3, 0, 0)), True),
        (_TAG_UNIQUE_CAMERA_MODEL, _ASCII, 0, unique, True),
        (_TAG_BLACK_LEVEL_REPEAT_DIM, _SHORT, 2, (2, 2), True),
        (_TAG_BLACK_LEVEL, _RATIONAL, 4, _rationals(capture.black_level, signed=False), True),
        (_TAG_WHITE_LEVEL, _LONG, 1, (int(round(white)),), True),
        (_TAG_COLOR_MATRIX1, _SRATIONAL, 9, _rationals(capture.color_matrix, signed=True), True),
        (_TAG_CALIBRATION_ILLUMINANT1, _SHORT, 1, (int(capture.calibration_illuminant),), True),
        (_TAG_AS_SHOT_NEUTRAL, _RATIONAL, 3, _rationals(capture.as_shot_neutral, signed=False), True),
    ]
    if capture.calibrations:  # two calibrations: ColorMatrix1/2 with their illuminants (replacing the single one)
        (code1, m1), (code2, m2) = capture.calibrations
        extratags = [t for t in extratags if t[0] not in (_TAG_COLOR_MATRIX1, _TAG_CALIBRATION_ILLUMINANT1)] + [
            (_TAG_COLOR_MATRIX1, _SRATIONAL, 9, _rationals(m1, signed=True), True),
            (_TAG_CALIBRATION_ILLUMINANT1, _SHORT, 1, (int(code1),), True),
            (_TAG_COLOR_MATRIX2, _SRATIONAL, 9, _rationals(m2, signed=True), True),
            (_TAG_CALIBRATION_ILLUMINANT2, _SHORT, 1, (int(code2),), True),
        ]
    if opcode_list2 is not None:
        extratags.append((_TAG_OPCODE_LIST2, _UNDEFINED, len(opcode_list2), bytes(opcode_list2), True))
    if opcode_list3 is not None:
        extratags.append((_TAG_OPCODE_LIST3, _UNDEFINED, len(opcode_list3), bytes(opcode_list3), True))
    tifffile.imwrite(
        path_or_buffer,
        capture.mosaic,
        photometric=32803,
        subfiletype=0,
        compression=None,
        planarconfig=None,
        metadata=None,
        extratags=extratags,
    )


def dng_bytes(capture: RawCapture) -> bytes:
    """:func:`write_dng` into memory.

    Parameters
    ----------
    capture : RawCapture
        The frame.

    Returns
    -------
    bytes
        The DNG file.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.dng import dng_bytes
    >>> from hetbench.isp.capture import RawCapture
    >>> data = dng_bytes(RawCapture(np.zeros((4, 4), np.uint16), "RGGB", 0, 1023, np.eye(3), (1, 1, 1)))
    >>> data[:2], len(data) > 32
    (b'II', True)
    """
    import io

    buf = io.BytesIO()
    write_dng(capture, buf)
    return buf.getvalue()
