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


class Mismatch(Exception):
    """A built folder does not hold what its manifest says: the one-line reason (``hetbench verify``
    exits 1). Not bad input: a failed check."""
