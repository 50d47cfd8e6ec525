"""LibRaw prints some of its complaints itself (``<file>: Unexpected end of file``, to the C stderr)
before rawpy raises; hetbench reports every RAW it cannot read in its own words (one line, or one entry
of a build's skipped list), so the calls into rawpy run inside :func:`libraw_quiet`.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def libraw_quiet() -> Iterator[None]:
    """Send file descriptor 2 (the C library's stderr, where LibRaw writes) to ``/dev/null`` for the
    duration, and restore it afterwards, also when the body raises. Python's ``sys.stderr`` is flushed
    first so nothing written before is lost. When descriptor 2 cannot be duplicated (closed), nothing
    changes. Not for threads that write to stderr meanwhile: their lines would be lost too (the ISP
    reads RAW files in worker processes, or in the main thread between progress updates).

    Examples
    --------
    >>> import os
    >>> from hetbench.isp.libraw_stderr import libraw_quiet
    >>> before = os.fstat(2).st_ino
    >>> with libraw_quiet():
    ...     _ = os.write(2, b"example.dng: Unexpected end of file\\n")  # not shown
    ...     os.fstat(2).st_ino == os.stat(os.devnull).st_ino
    True
    >>> os.fstat(2).st_ino == before  # descriptor 2 is back
    True
    """
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # a closed or replaced sys.stderr
        pass
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
        finally:
            os.close(null)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


__all__ = ["libraw_quiet"]
