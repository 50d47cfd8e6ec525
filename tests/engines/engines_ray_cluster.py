"""A real local Ray cluster for the engine tests (helpers and fixture), owned by the test run and
stopped whatever happens.

``ray start --head --block`` on 127.0.0.1, 2 CPUs, every port it lets us choose an ephemeral one,
its own temporary folder, in a process group of its own; teardown kills that process group (never
``ray stop``, which would stop other people's clusters) and checks no process of it is left.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

RAY = Path(sys.executable).parent / "ray"
HETBENCH = Path(sys.executable).parent / "hetbench"
START_TIMEOUT_S = 90


def free_ports(n: int) -> list[int]:
    """``n`` distinct ephemeral ports that were free a moment ago."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def busy_workers(pgid: int) -> list[int]:
    """Ray workers of the cluster running a hetbench task now: their title is ``ray::hetbench-job``
    (idle ones are ``ray::IDLE``; ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` are the node's own)."""
    return [p for p in group_members(pgid) if cmdline(p) == "ray::hetbench-job"]


@dataclass
class Cluster:
    address: str
    pgid: int
    temp_dir: str


def ray_cluster_fixture():
    """A 2-CPU Ray head on 127.0.0.1 with ephemeral ports; yields its :class:`Cluster`."""
    pytest.importorskip("ray")
    temp_dir = tempfile.mkdtemp(prefix="hbray")  # short: Ray's socket paths must stay under 108 bytes
    gcs, node_manager, object_manager, client, agent, agent_grpc, metrics, runtime_env, *workers = free_ports(8 + 16)
    cmd = [
        str(RAY), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={gcs}", "--num-cpus=2",
        "--include-dashboard=false", f"--temp-dir={temp_dir}", f"--node-manager-port={node_manager}",
        f"--object-manager-port={object_manager}", f"--ray-client-server-port={client}",
        f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
        f"--worker-port-list={','.join(map(str, workers))}", "--disable-usage-stats", "--object-store-memory=200000000",
    ]
    log = open(os.path.join(temp_dir, "ray-start.log"), "w+")
    env = dict(os.environ, RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO="0")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            log.seek(0)
            text = log.read()
            if "Ray runtime started" in text:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ray start did not come up (exit {proc.poll()}):\n{text[-3000:]}")
            time.sleep(0.2)
        yield Cluster(f"127.0.0.1:{gcs}", proc.pid, temp_dir)
    finally:
        for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait_s
            while group_members(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if not group_members(proc.pid):
                break
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL above
            pass
        log.close()
        left = group_members(proc.pid)
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not left, f"processes of the test's Ray cluster are still running: {[cmdline(p) for p in left]}"
