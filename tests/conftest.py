"""Shared fixtures. The Hugging Face cache goes to a temporary folder and stays offline."""

from __future__ import annotations

import os
import tempfile

# must be set before `datasets` is imported anywhere
_HF_HOME = tempfile.mkdtemp(prefix="hetbench-hf-")
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")
# the trainer's decoded-image cache (by default in the user's ~/.cache/hetbench/train) goes to the same
# temporary folder; tests of where it goes set or unset HETBENCH_CACHE themselves
os.environ["HETBENCH_CACHE"] = os.path.join(_HF_HOME, "hetbench-train-cache")
# Ray on Linux puts its nodes on the machine's own address and its servers on every interface, even
# with --node-ip-address=127.0.0.1, unless it treats this machine as a single-node one: then the head
# started by the Ray tests, every local instance (hetbench's --engine ray, Flower's simulation) and
# every worker bind 127.0.0.1 only. Inherited by every subprocess the tests start.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# Idle OpenMP threads (torch's intra-op pool, MKL) sleep instead of spinning. `make test` runs two workers
# on two cores, each with torch's default of one thread per core, beside the Ray and CLI processes tests
# start: with GNU OpenMP's default (spin for about 300,000 iterations before sleeping) the waiting threads
# of one process burn the cores the other is computing on, and a 5 s task-embedder training took 40-80 s
# beside another one (the bits are the same: only how a thread waits changes). Read once, when OpenMP is
# loaded (torch's import), so it is set before anything imports torch; inherited by every subprocess.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

# --durations-record (make test keeps the slowest tests in tests/durations.txt): the hooks are that module's
from durations_record import (  # noqa: E402,F401
    pytest_addoption,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_sessionstart,
)

SHARED = Path(__file__).resolve().parents[2] / "shared"


#: most tests pytest-xdist hands a worker at a time (``--maxschedchunk``; see pytest_configure)
SCHEDULE_CHUNK = 2


def pytest_configure(config):
    """With ``-n`` (``make test`` runs two workers): tests are handed out a few at a time, not an eighth of
    the suite to each worker up front as pytest-xdist's ``--dist load`` does by default, so that the slow tests
    that :func:`pytest_collection_modifyitems` puts first are spread over both workers. A
    ``--maxschedchunk`` given on the command line is kept."""
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = SCHEDULE_CHUNK


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` first, in their collection order, then the rest in theirs (what each test runs
    and checks is unchanged). With two workers, the long tests start while the short ones can still fill
    the other worker, so the run ends with short tests on both, instead of one worker finishing a
    two-minute test alone at the end (the default-hyper-parameter tests, collected last, did)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: order kept within each part


@pytest.fixture
def run_cli(capsys):
    """Run the hetbench CLI in-process: returns (exit code, stdout, stderr)."""
    from hetbench.cli.main import main

    def _run(*args: str):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return _run


@pytest.fixture(scope="session")
def digits_table():
    from hetbench.sources import load_table

    return load_table("builtin:digits")
