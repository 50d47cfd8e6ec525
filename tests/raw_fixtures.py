"""Hand-made RAW files for tests in several folders: a DNG with two colour calibrations, and one whose
second matrix is singular."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: the shared real RAW captures (../shared/data/raw)
SHARED_RAW = Path(__file__).resolve().parents[2] / "shared" / "data" / "raw"
#: two Raspberry Pi HQ captures of that folder: an own-RAW build in seconds
TWO_PI_CAPTURES = ("rpi_picamera2_1920x1200_desk.dng", "rpi_picamera2_1920x1200_rover.dng")

#: XYZ -> camera matrices of a camera under standard illuminant A and D65 (Canon-like values).
CM_A = np.array([[0.8890, -0.2106, -0.0913], [-0.3972, 1.2147, 0.1826], [-0.0330, 0.1250, 0.5100]])
CM_D65 = np.array([[0.6461, -0.1164, -0.0857], [-0.3825, 1.1597, 0.2534], [-0.0416, 0.1540, 0.6039]])
CAL = ((17, CM_A), (21, CM_D65))


def two_matrix_capture():
    from hetbench.isp.capture import RawCapture

    rng = np.random.default_rng(0)
    mosaic = rng.integers(200, 3000, (64, 64)).astype(np.uint16)
    return RawCapture(mosaic, "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45), make="Test", model="Dual",
                      capture_id="dual", calibrations=CAL)


def malformed_dng_bytes() -> bytes:
    """A DNG whose ColorMatrix2 is all zeros (its numerators overwritten): singular."""
    import struct

    from hetbench.isp.dng import _rationals, dng_bytes

    data = dng_bytes(two_matrix_capture())
    packed = struct.pack("<18i", *_rationals(CM_D65, signed=True))
    assert data.count(packed) == 1
    zeros = struct.pack("<18i", *[v if i % 2 else 0 for i, v in enumerate(_rationals(CM_D65, signed=True))])
    return data.replace(packed, zeros)



def shared_raw_copies(folder: Path, names=TWO_PI_CAPTURES) -> Path:
    """``folder/raws`` holding copies of the shared RAW files ``names`` (the test is skipped without them)."""
    import shutil

    import pytest

    if not all((SHARED_RAW / n).is_file() for n in names):
        pytest.skip("the shared real RAW captures (../shared/data/raw) are not present")
    raws = folder / "raws"
    raws.mkdir()
    for n in names:
        shutil.copy(SHARED_RAW / n, raws / n)
    return raws
