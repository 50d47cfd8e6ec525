"""Resident memory given back to the system between client updates (glibc's ``malloc_trim``), past a growth
threshold, so that a round over large images does not keep several hundred MB of freed heap."""

from __future__ import annotations

import ctypes
import ctypes.util
import os


class HeapTrim:
    """Give freed heap memory back to the system when resident memory has grown by ``growth`` bytes.

    glibc's malloc keeps the blocks of freed large tensors (its mmap threshold rises with every large
    block freed, so later ones come from the heap and fragment it): over a round of client updates on
    64 px images, resident memory grew by several hundred MB more than the live tensors need. After each
    client update the pool reads its resident size (``/proc/self/statm``, microseconds) and calls
    ``malloc_trim(0)`` only past the growth, so small models never pay for a trim. Nothing happens where
    there is no ``/proc`` or no glibc.

    Parameters
    ----------
    growth : int
        Bytes of resident memory above the size after the last trim that trigger the next one.

    Examples
    --------
    >>> trim = HeapTrim(growth=2**62)
    >>> trim()  # resident memory is nowhere near the growth: nothing to do
    >>> trim.resident() >= 0
    True
    """

    def __init__(self, growth: int = 256 * 2**20) -> None:
        self.growth = growth
        self._trim = None
        if os.path.exists("/proc/self/statm"):
            try:
                self._trim = ctypes.CDLL(ctypes.util.find_library("c") or None).malloc_trim
            except (OSError, AttributeError):
                self._trim = None
        self.page = os.sysconf("SC_PAGE_SIZE") if self._trim is not None else 0
        self.base = self.resident()

    def resident(self) -> int:
        if self._trim is None:
            return 0
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * self.page

    def __call__(self) -> None:
        if self._trim is not None and self.resident() > self.base + self.growth:
            self._trim(0)
            self.base = self.resident()
