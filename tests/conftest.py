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

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"


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
