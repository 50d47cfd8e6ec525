"""``make test`` keeps its slowest tests in ``tests/durations.txt`` (``--durations-record``): a whole run,
its xdist workers' reports included, writes them slowest first; an interrupted run leaves the record as
it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SUITE = '''
import time

import pytest


@pytest.fixture
def slow_setup():
    time.sleep(0.3)


def test_slow(slow_setup):
    time.sleep(0.4)


def test_quick():
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_middle(n):
    time.sleep(0.1 * n)
'''


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "durations_record",
                           *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_a_whole_run_on_two_workers_records_its_slowest_tests_slowest_first(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    done = _pytest(tmp_path, "-n", "2", "--durations-record", "durations.txt", "test_suite.py")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = (tmp_path / "durations.txt").read_text().splitlines()
    header = [line for line in lines if line.startswith("#")]
    rows = [line.split() for line in lines if not line.startswith("#")]
    assert "4 tests in" in header[-1] and "2 pytest-xdist workers" in header[-1]
    assert [r[1] for r in rows] == ["test_suite.py::test_slow", "test_suite.py::test_middle[2]",
                                    "test_suite.py::test_middle[1]", "test_suite.py::test_quick"]
    assert float(rows[0][0]) >= 0.7  # the fixture's setup counts with the call
    assert [float(r[0]) for r in rows] == sorted((float(r[0]) for r in rows), reverse=True)
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # written through a rename


def test_an_interrupted_run_leaves_the_record_as_it_was(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE + '''

def test_stop():
    pytest.exit("stopped", returncode=2)
''')
    (tmp_path / "durations.txt").write_text("# the last whole run\n")
    done = _pytest(tmp_path, "--durations-record", "durations.txt", "test_suite.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (tmp_path / "durations.txt").read_text() == "# the last whole run\n"
