"""Errors hetbench reports to users.

A :class:`HetbenchError` is bad input that the user can fix; the CLI prints its message on one line
to stderr and exits with code 2. Anything else is a bug and keeps its traceback.

A message names the parameter a caller got wrong in Python terms, written between backticks in the
source (``HetbenchError(f"`alpha` must be >= 0, got {alpha}")``): a Python caller reads
``alpha must be >= 0, got -1``, and the command line, which knows which of its flags sets which parameter
(``hetbench.cli.flags``), prints ``--alpha must be >= 0, got -1`` (:meth:`HetbenchError.naming`).
"""

from __future__ import annotations

import re
from typing import Callable

#: a parameter named in a message: `name` (a Python identifier between backticks)
PARAMETER = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def python_terms(message: str) -> str:
    """``message`` with every `parameter` written as its plain Python name.

    Examples
    --------
    >>> python_terms("`num_clients` must be at least 1 (got 0)")
    'num_clients must be at least 1 (got 0)'
    """
    return PARAMETER.sub(r"\1", message)


def marked(exc: BaseException) -> str:
    """The text of ``exc`` to put inside another :class:`HetbenchError`'s message: a HetbenchError's with its
    parameters still marked (so the command line names them by flag), any other's as it reads.

    Examples
    --------
    >>> inner = HetbenchError("`size` must be at least 8")
    >>> HetbenchError(f"the claim's settings: {marked(inner)}").naming(lambda name: "--" + name)
    "the claim's settings: --size must be at least 8"
    """
    return str(exc.args[0]) if isinstance(exc, HetbenchError) and exc.args else str(exc)


class HetbenchError(ValueError):
    """Bad input: one clear line for the user, exit code 2 from the CLI.

    Examples
    --------
    >>> exc = HetbenchError("`alpha` must be >= 0, got -1")
    >>> str(exc)
    'alpha must be >= 0, got -1'
    >>> exc.naming({"alpha": "--alpha"}.get)
    '--alpha must be >= 0, got -1'
    """

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))  # the marked text: it survives pickling to a worker

    def __str__(self) -> str:
        return python_terms(str(self.args[0])) if self.args else ""

    def naming(self, flag_of: Callable[[str], str | None]) -> str:
        """The message with every parameter named by ``flag_of(name)`` (the command line's flag), or by its
        Python name where ``flag_of`` gives None."""
        text = str(self.args[0]) if self.args else ""
        return PARAMETER.sub(lambda m: flag_of(m[1]) or m[1], text)


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
