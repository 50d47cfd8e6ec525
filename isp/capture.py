"""RawCapture: one camera RAW frame and the metadata every later ISP stage needs.

A capture is the Bayer mosaic as the sensor wrote it (uint16 digital numbers, black level not yet
subtracted), the 2x2 CFA pattern, black and white levels, the XYZ->camera colour matrix with its
calibration illuminant (DNG ColorMatrix1), the as-shot neutral (DNG AsShotNeutral) and the camera's
name. Real captures come from any file LibRaw reads (:func:`hetbench.isp.raw.read_raw`); synthetic
ones from unprocessing (:mod:`hetbench.isp.unprocess`); both can be written as uncompressed CFA
DNGs (:func:`hetbench.isp.dng.write_dng`) so that every capture takes the same LibRaw path.

References
----------
.. [1] Adobe, *Digital Negative (DNG) Specification* 1.4 (ColorMatrix1, AsShotNeutral,
   CalibrationIlluminant1, CFAPattern).
.. [2] IEC 61966-2-1:1999 (the sRGB -> XYZ matrix); D. Coffin, dcraw (the colour conventions).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from hetbench.isp.illuminant import SRGB_TO_XYZ, camera_to_srgb_from  # noqa: F401  (re-exported)

#: CFA colour codes as in the DNG CFAPattern tag: 0 = red, 1 = green, 2 = blue.
CFA_CODES = {"R": 0, "G": 1, "B": 2}
CFA_PATTERNS = ("RGGB", "BGGR", "GRBG", "GBRG")
def cfa_code_block(cfa: str) -> np.ndarray:
    """(2, 2) uint8 colour codes (0 R, 1 G, 2 B) of a 2x2 CFA pattern read row by row.

    Parameters
    ----------
    cfa : str
        One of :data:`CFA_PATTERNS`.

    Returns
    -------
    numpy.ndarray
        uint8 (2, 2).

    Examples
    --------
    >>> from hetbench.isp.capture import cfa_code_block
    >>> cfa_code_block("GRBG").tolist()
    [[1, 0], [2, 1]]
    """
    return np.array([CFA_CODES[c] for c in cfa], dtype=np.uint8).reshape(2, 2)


def cfa_channel_map(cfa: str, height: int, width: int) -> np.ndarray:
    """(H, W) uint8 colour code (0 R, 1 G, 2 B) of every photosite for a 2x2 ``cfa`` pattern."""
    codes = cfa_code_block(cfa)
    return np.tile(codes, ((height + 1) // 2, (width + 1) // 2))[:height, :width]


@dataclass(frozen=True)
class RawCapture:
    """A Bayer RAW frame.

    Attributes
    ----------
    mosaic : numpy.ndarray
        (H, W) uint16 sensor values, black level included (H and W even).
    cfa : str
        The 2x2 pattern read row by row, one of ``RGGB``, ``BGGR``, ``GRBG``, ``GBRG``.
    black_level : tuple of 4 float
        Per-CFA-position black level, in the same row-major order as ``cfa``.
    white_level : float
        Saturation value.
    color_matrix : numpy.ndarray
        (3, 3) XYZ -> camera matrix (DNG ColorMatrix1), rows R, G, B of the camera.
    as_shot_neutral : tuple of 3 float
        Camera RGB of a neutral under the scene light (DNG AsShotNeutral), G = 1.
    make, model : str
        Camera maker and model.
    calibration_illuminant : int
        EXIF light-source code of ``color_matrix`` (21 = D65, 17 = std A).
    capture_id : str
        A stable name for the frame (file stem, or a synthetic id).
    calibrations : tuple
        A DNG's two (CalibrationIlluminant, ColorMatrix) pairs when it has two (checked and sorted by
        :func:`hetbench.isp.calibration.check_calibrations`): the render then interpolates them at the
        light's temperature. Empty: ``color_matrix`` alone.

    References
    ----------
    Adobe DNG Specification 1.4 (ColorMatrix1, AsShotNeutral, CalibrationIlluminant1).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.capture import RawCapture
    >>> cap = RawCapture(np.zeros((4, 4), np.uint16), "RGGB", 64, 1023, np.eye(3), (0.5, 1.0, 0.6))
    >>> cap.height, cap.width, cap.black_level
    (4, 4, (64.0, 64.0, 64.0, 64.0))
    """

    mosaic: np.ndarray
    cfa: str
    black_level: tuple[float, float, float, float]
    white_level: float
    color_matrix: np.ndarray
    as_shot_neutral: tuple[float, float, float]
    make: str = "unknown"
    model: str = "unknown"
    calibration_illuminant: int = 21
    capture_id: str = ""
    calibrations: tuple = ()
    _fingerprint: list = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        m = np.asarray(self.mosaic)
        if m.ndim != 2 or m.shape[0] % 2 or m.shape[1] % 2:
            raise ValueError(f"mosaic must be 2-D with even sides (got {m.shape})")
        if self.cfa not in CFA_PATTERNS:
            raise ValueError(f"unsupported CFA pattern {self.cfa!r}; expected one of {CFA_PATTERNS}")
        object.__setattr__(self, "mosaic", np.ascontiguousarray(m, dtype=np.uint16))
        object.__setattr__(self, "color_matrix", np.asarray(self.color_matrix, dtype=np.float64).reshape(3, 3))
        object.__setattr__(self, "black_level", tuple(float(b) for b in np.broadcast_to(self.black_level, 4)))
        object.__setattr__(self, "as_shot_neutral", tuple(float(v) for v in self.as_shot_neutral))
        if self.calibrations:
            from hetbench.isp.calibration import check_calibrations

            object.__setattr__(self, "calibrations", check_calibrations(self.calibrations))

    @property
    def height(self) -> int:
        return int(self.mosaic.shape[0])

    @property
    def width(self) -> int:
        return int(self.mosaic.shape[1])

    @property
    def cfa_codes(self) -> np.ndarray:
        """(2, 2) array of colour codes (0 R, 1 G, 2 B)."""
        return cfa_code_block(self.cfa)

    def camera_to_srgb(self) -> np.ndarray:
        """(3, 3) matrix from *white-balanced* camera RGB to linear sRGB (D65).

        The dcraw / DNG convention: cam_from_srgb = ColorMatrix1 @ M(sRGB -> XYZ), each row
        normalised to sum 1 so that a white-balanced neutral (1, 1, 1) stays neutral; the result is
        its inverse. Gamut stages go on from linear sRGB to other spaces.

        Returns
        -------
        numpy.ndarray
            float64 (3, 3); its rows sum to 1.

        References
        ----------
        Adobe DNG Specification 1.4, chapter 6 ("Mapping Camera Color Space to CIE XYZ Space");
        dcraw's ``cam_xyz_coeff``; IEC 61966-2-1 (:data:`SRGB_TO_XYZ`).

        Examples
        --------
        >>> import numpy as np
        >>> from hetbench.isp.capture import SRGB_TO_XYZ, RawCapture
        >>> cap = RawCapture(np.zeros((2, 2), np.uint16), "RGGB", 0, 1023, np.linalg.inv(SRGB_TO_XYZ), (1, 1, 1))
        >>> bool(np.allclose(cap.camera_to_srgb(), np.eye(3)))
        True
        """
        return camera_to_srgb_from(self.color_matrix)

    @property
    def fingerprint(self) -> str:
        """sha256 over the mosaic and every metadata field (identifies the capture in caches)."""
        if not self._fingerprint:
            h = hashlib.sha256()
            h.update(self.mosaic.tobytes())
            meta = (
                self.cfa,
                self.black_level,
                self.white_level,
                tuple(np.round(self.color_matrix.ravel(), 10)),
                self.as_shot_neutral,
                self.calibration_illuminant,
                self.make,
                self.model,
            )
            if self.calibrations:  # only then: single-matrix captures keep their fingerprints
                meta += tuple((code, tuple(np.round(m.ravel(), 10))) for code, m in self.calibrations)
            h.update(repr(meta).encode())
            self._fingerprint.append(h.hexdigest())
        return self._fingerprint[0]
