"""The suite's slowest tests, kept in a file the repository tracks (``tests/durations.txt``), so that a test
that becomes slow shows up in review as a changed line.

``make test`` runs pytest with ``--durations-record tests/durations.txt``: at the end of a run that was not
interrupted, the :data:`KEPT` slowest tests (setup, call and teardown together, as pytest's own
``--durations`` counts them) are written there, slowest first, with the run's wall time and its number of
tests. The hooks below are pytest's; ``conftest.py`` imports them (a plugin of its own elsewhere: ``-p
durations_record`` with this folder on the path).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Mapping

#: how many tests the record keeps
KEPT = 25

HEADER = (
    "# The {kept} slowest tests of the last whole `make test` run, slowest first: seconds of setup, call and\n"
    "# teardown together. `make test` rewrites this file (pytest --durations-record tests/durations.txt); a\n"
    "# test that enters the list or moves up in a change is worth a look in review.\n"
    "# {tests} tests in {wall:.0f} s of wall time on {cores} CPU core(s), {workers}.\n"
)


def slowest(durations: Mapping[str, float], kept: int = KEPT) -> list[tuple[str, float]]:
    """The ``kept`` longest of ``durations`` (test id -> seconds), longest first; ties by test id.

    Examples
    --------
    >>> from durations_record import slowest
    >>> slowest({"t::a": 1.0, "t::b": 3.0, "t::c": 3.0, "t::d": 0.1}, kept=3)
    [('t::b', 3.0), ('t::c', 3.0), ('t::a', 1.0)]
    """
    return sorted(durations.items(), key=lambda item: (-item[1], item[0]))[:kept]


def record_text(durations: Mapping[str, float], wall_s: float, workers: int, kept: int = KEPT) -> str:
    """The record: :data:`HEADER` and one line per test of :func:`slowest` (seconds, right-aligned, then the id).

    Examples
    --------
    >>> from durations_record import record_text
    >>> print(record_text({"tests/test_a.py::test_x": 12.345, "tests/test_b.py::test_y": 0.5}, 60.0, 2, kept=1),
    ...       end="")  # doctest: +ELLIPSIS
    # The 1 slowest tests of the last whole `make test` run, ...
    ...
    # 2 tests in 60 s of wall time on ... CPU core(s), 2 pytest-xdist workers.
       12.35  tests/test_a.py::test_x
    """
    header = HEADER.format(kept=kept, tests=len(durations), wall=wall_s, cores=os.cpu_count(),
                           workers=f"{workers} pytest-xdist workers" if workers else "one process")
    return header + "".join(f"{seconds:8.2f}  {test}\n" for test, seconds in slowest(durations, kept))


def write_record(path: Path, durations: Mapping[str, float], wall_s: float, workers: int) -> None:
    """Write :func:`record_text` to ``path`` through a temporary file and a rename."""
    from hetbench.atomic import write_atomic

    write_atomic(path, record_text(durations, wall_s, workers))


#: seconds per test id of this run (setup + call + teardown; the reports of every xdist worker arrive here)
_DURATIONS: dict[str, float] = {}
_STARTED: list[float] = []


def pytest_addoption(parser):
    parser.addoption("--durations-record", metavar="PATH", default=None,
                     help=f"at the end of a run that was not interrupted, write its {KEPT} slowest tests to PATH "
                          "(make test: tests/durations.txt)")


def pytest_sessionstart(session):
    _STARTED[:] = [time.perf_counter()]


def pytest_runtest_logreport(report):
    _DURATIONS[report.nodeid] = _DURATIONS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    """Write the record from the main process (an xdist worker has ``workerinput``) when every test ran:
    exit status 0 (all passed) or 1 (some failed), not an interrupted run or one that collected nothing."""
    path = session.config.getoption("durations_record")
    if path is None or hasattr(session.config, "workerinput") or int(exitstatus) not in (0, 1) or not _DURATIONS:
        return
    workers = getattr(session.config.option, "numprocesses", None)
    write_record(Path(path), _DURATIONS, time.perf_counter() - _STARTED[0],
                 workers if isinstance(workers, int) else 0)
