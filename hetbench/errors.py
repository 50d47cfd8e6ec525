"""Errors hetbench reports to users.

A :class:`HetbenchError` is bad input that the user can fix; the CLI prints its message on one line
to stderr and exits with code 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class HetbenchError(ValueError):
    """Bad input: one clear line for the user, exit code 2 from the CLI."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is (as Ctrl-C raises KeyboardInterrupt), so every cleanup runs; the
    CLI prints ``hetbench: terminated`` and exits with code 143. Library code that meets another library's
    way of ending on SIGTERM (Ray's ``sys.exit(15)``) raises this instead."""


class Mismatch(Exception):
    """A built folder does not hold what its manifest says: the one-line reason (``hetbench verify``
    exits 1). Not bad input: a failed check."""


class SourceChanged(HetbenchError):
    """The source loaded again is not the one the split was built from (a failed check, not bad input)."""

    exit_code = 1
