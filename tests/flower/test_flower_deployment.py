"""Flower's deployment engine on this machine: a SuperLink and two SuperNodes on 127.0.0.1 (insecure,
ephemeral ports, their own FLWR_HOME), the project ``hetbench flower-app`` writes, ``flwr run``; every
process the test started (and every process they started) is stopped by pid whatever happens."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first found by scanning /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class Cluster:
    """The processes of one test: started with :meth:`start`, all stopped by :meth:`stop`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: list[subprocess.Popen] = []
        self.env = {**os.environ, "FLWR_HOME": str(root / "flwr-home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
                    "PYTHONUNBUFFERED": "1", "FLWR_TELEMETRY_ENABLED": "0"}
        (root / "flwr-home").mkdir()

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "wb")
        proc = subprocess.Popen([str(BIN / args[0]), *args[1:]], stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                cwd=self.root)
        log.close()
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        pids = []
        for proc in self.procs:
            pids += [proc.pid, *descendants(proc.pid)]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        assert proc.poll() is None, f"process {proc.args} exited with {proc.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


@pytest.fixture(scope="module")
def split2(tmp_path_factory):
    """A two-client Dirichlet split of the built-in digits."""
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("flower-deploy") / "digits-n2"
    make_split("builtin:digits", DirichletPartitioner(2, 0.5, "client", None, 0), out, seed=0, test_fraction=0.2,
               quiet=True)
    return out


@pytest.mark.slow
def test_deployment_engine_runs_fedavg_like_the_local_engine(split2, tmp_path, run_cli):
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.data import load_federated
    from hetbench.train.simulation import run_training

    app, results = tmp_path / "app", tmp_path / "results" / "fedavg-s0.json"
    code, out, err = run_cli("flower-app", "--split", split2, "--algo", "fedavg", "--rounds", "2",
                             "--clients-per-round", "2", "--out", app, "--results", results, "--node-wait", "60")
    assert code == 0, err
    assert "flwr run" in out and 'partition-id=1 num-partitions=2' in out

    cluster = Cluster(tmp_path)
    try:
        link = free_port()
        superlink = cluster.start("superlink", "flower-superlink", "--insecure", "--port", str(link),
                                  "--disable-runtime-dependency-installation")
        wait_for_port(link, superlink)
        nodes = []
        for k in range(2):
            port = free_port()
            nodes.append((cluster.start(f"supernode{k}", "flower-supernode", "--insecure", "--superlink",
                                        f"127.0.0.1:{link}", "--port", str(port), "--node-config",
                                        f"partition-id={k} num-partitions=2"), port))
        for proc, port in nodes:
            wait_for_port(port, proc)
        (tmp_path / "flwr-home" / "config.toml").write_text(
            f'[superlink]\ndefault = "hetbench-test"\n\n[superlink.hetbench-test]\naddress = "127.0.0.1:{link}"\n'
            "insecure = true\n")
        run = subprocess.run([str(BIN / "flwr"), "run", str(app), "hetbench-test", "--stream"], env=cluster.env,
                             cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert results.is_file(), f"no results JSON; flwr run said:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        doc = json.loads(results.read_text())

        # a third SuperNode whose partition id is out of range: the next run stops with one clear line
        bad_port = free_port()
        bad = cluster.start("supernode-bad", "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{link}",
                            "--port", str(bad_port), "--node-config", "partition-id=2 num-partitions=2")
        wait_for_port(bad_port, bad)
        other = tmp_path / "results" / "bad.json"
        run2 = subprocess.run([str(BIN / "flwr"), "run", str(app), "hetbench-test", "--stream", "--run-config",
                               f'results="{other}"'], env=cluster.env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)
    finally:
        cluster.stop()
    for proc in cluster.procs:
        assert proc.poll() is not None

    assert doc["engine"] == "flower" and doc["timing"]["nodes"] == 2
    data = load_federated(str(split2))
    local = run_training(data, make_algorithm("fedavg"), TrainConfig(rounds=2, clients_per_round=2))
    assert abs(doc["final"]["accuracy"] - local["final"]["accuracy"]) <= 1.0
    strip = lambda d: {k: v for k, v in d.items() if k not in ("timing", "engine", "config", "execution")}  # noqa: E731
    assert strip(doc) == strip(local)  # the same model, bit for bit
    assert not other.exists()
    assert "partition-id 2 is out of range: the split has 2 clients (partition ids 0..1)" in run2.stdout + run2.stderr
