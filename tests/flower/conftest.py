"""Fixtures of the Flower tests: every process a test starts is gone when it ends.

``hetbench train --engine flower`` runs ``flwr run`` on a SuperLink in simulation mode that it starts and
stops itself (:class:`hetbench.flower.superlink.LocalSuperLink`); the SuperLink's SuperExec, the
``flwr-simulation`` process and its Ray instance (GCS, raylet, ClientApp actors) all run below the test
process. :func:`owned_processes` records the test process's descendants before a test and checks that none
started since outlives it (and stops any that does, by pid, so one failure does not leak into the next).
"""
from __future__ import annotations

import os
import signal
import time

import pytest

from proc_sockets import process_tree, same_live

def _tree(root: int) -> dict[int, int]:
    """pid -> start time of ``root``'s live descendants (not ``root`` itself)."""
    return {pid: start for pid, start in process_tree(root).items() if pid != root}


def stop_new_processes(before: dict[int, int]) -> list[int]:
    """SIGTERM, then SIGKILL, every descendant of this process not in ``before`` (same pid and start time);
    returns the pids still alive after that (should be none)."""
    new = {pid: start for pid, start in _tree(os.getpid()).items() if before.get(pid) != start}
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid, start in new.items():
            if same_live(pid, start):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(same_live(p, s) for p, s in new.items()):
            time.sleep(0.1)
        for pid in new:  # reap the ones this process started itself
            try:
                os.waitpid(pid, os.WNOHANG)
            except (ChildProcessError, OSError):
                pass
    return [pid for pid, start in new.items() if same_live(pid, start)]


@pytest.fixture
def owned_processes():
    """Fails the test if a process started during it is still running after it (module notes)."""
    before = _tree(os.getpid())
    yield
    new = sorted(pid for pid, start in _tree(os.getpid()).items() if before.get(pid) != start)
    left = stop_new_processes(before)  # stops them, then names those that survived even SIGKILL
    assert not new, f"processes of the test still running after it: {new} (after SIGKILL: {left})"
