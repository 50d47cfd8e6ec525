"""The two sRGB tables the ISP's workers use, stored in the package so that they need not import
colour-science (about 1.2 s, most of a worker pool's start-up: it imports its plotting package and
matplotlib).

* :func:`encode_lut`: the tone stage's 65,536-entry uint8 table, ``round(255 * srgb_encode(i / 65535))``;
* :func:`decode_table`: unprocessing's steps 1-3 for every 8-bit value, float64 (256,):
  ``srgb_decode(inverse_smoothstep(v / 255))``.

Both are computed by :mod:`hetbench.isp.transfer` (colour-science's transfer functions and Brooks et
al.'s inverse tone curve) and written by ``python -m hetbench.isp.srgb_tables``; a test recomputes them
and requires the stored bytes. Stored data also has the same bits on every CPU, which a transcendental
function evaluated at run time need not have.

Examples
--------
>>> from hetbench.isp.srgb_tables import decode_table, encode_lut
>>> encode_lut().shape, int(encode_lut()[65535]), decode_table().shape, float(decode_table()[255])
((65536,), 255, (256,), 1.0)
"""

from __future__ import annotations

import functools
import io
import sys
from importlib import resources

import numpy as np

ENCODE_LUT = "srgb_encode_lut.npy"
DECODE_TABLE = "srgb_decode_table.npy"


def compute_encode_lut() -> np.ndarray:
    """The tone stage's table from colour-science's sRGB encoding (imports colour)."""
    from hetbench.isp.transfer import srgb_encode

    x = np.arange(65536, dtype=np.float64) / 65535.0
    return np.clip(np.rint(255.0 * srgb_encode(x)), 0, 255).astype(np.uint8)


def compute_decode_table() -> np.ndarray:
    """Unprocessing's 8-bit decode table from the inverse tone curve and colour-science's decoding."""
    from hetbench.isp.transfer import inverse_smoothstep, srgb_decode

    return srgb_decode(inverse_smoothstep(np.arange(256, dtype=np.float64) / 255.0))


def _load(name: str) -> np.ndarray:
    data = resources.files("hetbench.isp").joinpath("tables").joinpath(name).read_bytes()
    table = np.load(io.BytesIO(data), allow_pickle=False)
    table.setflags(write=False)
    return table


@functools.lru_cache(maxsize=1)
def encode_lut() -> np.ndarray:
    """uint8 (65536,): the stored :func:`compute_encode_lut`."""
    return _load(ENCODE_LUT)


@functools.lru_cache(maxsize=1)
def decode_table() -> np.ndarray:
    """float64 (256,): the stored :func:`compute_decode_table`."""
    return _load(DECODE_TABLE)


def main(argv: list[str] | None = None) -> int:
    """Write both tables into the package's ``tables/`` folder (after a change to the transfer functions)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parent / "tables"
    folder.mkdir(exist_ok=True)
    np.save(folder / ENCODE_LUT, compute_encode_lut(), allow_pickle=False)
    np.save(folder / DECODE_TABLE, compute_decode_table(), allow_pickle=False)
    print(f"wrote {ENCODE_LUT} and {DECODE_TABLE} in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
