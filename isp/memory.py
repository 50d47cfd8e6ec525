"""Keep freed memory in an ISP worker process: glibc ``malloc`` tuned so that large image buffers are reused.

A 12-MP render allocates a dozen arrays of 36-144 MB (LibRaw's own buffers, then every stage's float32 or
uint8 image). glibc serves every allocation above its mmap threshold (at most 32 MB by default) with a fresh
``mmap`` and returns it with ``munmap`` when freed, so each buffer of each render is faulted in page by page
again: measured on a 12-MP baseline render, 150,000 page faults, LibRaw 1.41 s instead of 1.07 s and the
whole render 2.0 s instead of 1.5 s. With the mmap threshold above any image buffer and trimming off, a
worker keeps the heap it grew for its first render and every later render reuses it without a fault.

This changes only where memory comes from, never a value: the published bytes are the same with and without
it (``tests/isp/test_isp_memory.py``). It is called in the processes that render (the builders' worker
initialiser and the ISP benchmark), not on import: a worker's resident memory then stays at its peak (about
1.5 GB for a 12-MP capture) until it exits, which a long-lived interactive process may not want.

References
----------
glibc manual, "Malloc Tunable Parameters" (``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD``, ``M_TOP_PAD``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc <malloc.h>
#: allocations below this come from the heap, which is reused (glibc's mallopt takes an int)
MMAP_THRESHOLD = 1 << 30
#: the heap grows by at least this much at a time (fewer brk calls while the first render grows it)
TOP_PAD = 64 << 20


def keep_freed_memory() -> bool:
    """Tune glibc ``malloc`` in this process so that freed image buffers are reused, not unmapped.

    Returns
    -------
    bool
        True if every setting was accepted; False where the C library is not glibc (nothing changes).

    Examples
    --------
    >>> from hetbench.isp.memory import keep_freed_memory
    >>> keep_freed_memory() in (True, False)
    True
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl or another C library: leave it as it is
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    done = [mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD), mallopt(M_TRIM_THRESHOLD, 2**31 - 1),
            mallopt(M_TOP_PAD, TOP_PAD)]
    return all(r == 1 for r in done)
