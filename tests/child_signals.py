"""How tests start a hetbench process they will signal: as a shell starts a command."""

from __future__ import annotations

import signal


def signals_as_in_a_shell() -> None:
    """In the child before exec: SIGINT and SIGTERM handled by default and not blocked, as a shell starts a
    command. A test worker may hold them otherwise (another test left SIGINT ignored), and the child would
    inherit that through exec: an ignored SIGINT made hetbench ignore the Ctrl-C the test sends."""
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT, signal.SIGTERM])
