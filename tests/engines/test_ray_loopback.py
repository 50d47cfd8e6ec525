"""Every Ray instance listens on the loopback interface only (read from /proc, never from Ray): the cluster the
tests start, and the local instances hetbench starts itself (``--engine ray`` without ``--ray-address``,
``train --engine flower``) in a user's environment, without the variable ``tests/conftest.py`` sets."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from proc_sockets import is_loopback, listening_addresses, run_watched

HETBENCH = Path(sys.executable).parent / "hetbench"
#: set by tests/conftest.py for the test session; a user's shell does not have it
SESSION_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: seconds one command may take before it is stopped and the test fails
COMMAND_TIMEOUT_S = 300

needs_proc = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")


@needs_proc
def test_the_ray_cluster_listens_on_loopback_only(ray_cluster):
    addresses = listening_addresses(ray_cluster.pgid)
    assert addresses, "found no listening socket of the Ray cluster"
    assert all(is_loopback(a) for a in addresses), addresses


def _user_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != SESSION_VAR}
    env["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "0"
    return env


def _assert_loopback_only(cmd: list[str]) -> None:
    watched = run_watched([str(HETBENCH), *map(str, cmd)], _user_env(), COMMAND_TIMEOUT_S)
    assert not watched.left, f"processes still running after the stop: {watched.left}"
    assert watched.returncode == 0, f"exit {watched.returncode}:\n{watched.output[-3000:]}"
    assert watched.addresses, f"saw no listening socket of the command's Ray instance ({watched.most_processes} processes)"
    exposed = sorted(a for a in watched.addresses if not is_loopback(a))
    assert not exposed, f"listening beyond the loopback interface: {exposed} (all: {sorted(watched.addresses)})"


@needs_proc
@pytest.mark.slow
def test_engine_ray_without_an_address_listens_on_loopback_only(tmp_path):
    pytest.importorskip("ray")
    _assert_loopback_only(["partition", "embedding", "--embedder", "hog", "--clients", "4", "--clusters", "3",
                           "--engine", "ray", "-q", "--out", tmp_path / "o"])


@needs_proc
@pytest.mark.slow
def test_flower_simulation_listens_on_loopback_only(tmp_path):
    pytest.importorskip("flwr")
    pytest.importorskip("ray")
    from hetbench.partitioners import IIDPartitioner
    from hetbench.pipeline import make_split

    split = tmp_path / "digits-n2"
    make_split("builtin:digits", IIDPartitioner(2), split, seed=0, test_fraction=0.2, quiet=True)
    _assert_loopback_only(["train", "--split", split, "--algo", "fedavg", "--rounds", "1", "--clients-per-round", "2",
                           "--seed", "0", "--engine", "flower", "--flower-actors", "1", "-q", "--out", tmp_path / "r"])
