"""Fixtures of the Flower tests: one local Ray instance, and its ClientApp actors, shared by a module's
Flower simulations.

Flower's Simulation Runtime starts Ray for every run (``ray.init`` when none is running), starts a pool
of ClientApp actors (each a Ray worker process importing torch and hetbench) and at the end terminates
them and shuts Ray down (``RayBackend.terminate``): about 11 s of a run whose two rounds take one, paid
once per algorithm of ``--algo a,b,...``. :func:`shared_ray` starts one instance as Flower would
(127.0.0.1 only, through hetbench's own :func:`~hetbench.engines.ray_engine.loopback_ray`; Flower then
skips ``ray.init``), keeps Flower from shutting it down after each run, and hands the actors a run leaves
idle to the module's next run instead of terminating them. An actor is stateless between runs as far
as Flower goes; hetbench's ClientApp keeps one job per process and drops the last one when a run of
another job arrives (``hetbench.flower.client_app._PREPARED``), as in a deployed SuperNode serving
several runs; a test that compares each run bit for bit with the local engine would fail on anything a
run left behind. At the end of the module Ray is shut down and every process started while the instance
was up that is still running is stopped by pid (Ray's own servers and workers, started by this process),
whatever happens. Tests that check how a run starts and stops Ray and its actors itself
(tests/engines/test_ray_loopback.py, tests/cli/test_cli_interrupts.py, the first run of
test_flower_simulation.py) do not use it.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

import pytest

#: Ray CPUs of the shared instance: what ``--flower-actors 2`` asks Flower's ``ray.init`` for
SHARED_RAY_CPUS = 2


def _tree(root: int) -> dict[int, int]:
    """pid -> start time of ``root``'s live descendants (from /proc; not ``root`` itself)."""
    stats: dict[int, tuple[str, int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            stats[int(entry)] = (fields[0], int(fields[1]), int(fields[19]))
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found and stats[pid][0] != "Z":
            found[pid] = stats[pid][2]
            todo.extend(children.get(pid, []))
    return found


def _alive(pid: int, start: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] != "Z" and int(fields[19]) == start


def stop_new_processes(before: dict[int, int]) -> list[int]:
    """SIGTERM, then SIGKILL, every descendant of this process not in ``before`` (same pid and start time);
    returns the pids still alive after that (should be none)."""
    new = {pid: start for pid, start in _tree(os.getpid()).items() if before.get(pid) != start}
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid, start in new.items():
            if _alive(pid, start):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(_alive(p, s) for p, s in new.items()):
            time.sleep(0.1)
        for pid in new:  # reap the ones this process started itself
            try:
                os.waitpid(pid, os.WNOHANG)
            except (ChildProcessError, OSError):
                pass
    return [pid for pid, start in new.items() if _alive(pid, start)]


@pytest.fixture(scope="module")
def shared_ray():
    """One Ray instance on 127.0.0.1 for the Flower simulations of a module (module notes)."""
    pytest.importorskip("flwr")
    ray = pytest.importorskip("ray")
    from flwr.server.superlink.fleet.vce.backend.raybackend import RayBackend
    from flwr.simulation.ray_transport.ray_actor import BasicActorPool

    from hetbench.engines.ray_engine import loopback_ray

    if ray.is_initialized():  # pragma: no cover - nothing else in a test process keeps Ray up
        pytest.fail("a Ray instance is already running in this test process")
    before = _tree(os.getpid())
    saved_sigterm = signal.getsignal(signal.SIGTERM)
    patch = pytest.MonkeyPatch()
    try:
        for name in ("RAY_DEDUP_LOGS", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"):  # as hetbench.flower.simulation
            if name not in os.environ:
                patch.setenv(name, "0")
        with loopback_ray():
            # Flower's RayBackend.init_ray arguments for --flower-actors 2, quiet
            ray.init(num_cpus=SHARED_RAY_CPUS, include_dashboard=False, logging_level=logging.ERROR,
                     log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}})
        signal.signal(signal.SIGTERM, saved_sigterm)  # ray.init replaces it by one calling sys.exit

        idle: dict[tuple, list] = {}  # actors a run left idle, by the resources they hold

        def add_actors_to_pool(self, num_actors: int) -> None:  # BasicActorPool's, reusing idle actors first
            spare = idle.setdefault(tuple(sorted(self.client_resources.items())), [])
            for _ in range(num_actors):
                self.pool.append(spare.pop() if spare else self.create_actor_fn())
            self.num_actors += num_actors

        def terminate_all_actors(self) -> None:  # idle actors wait for the next run; busy ones end
            idle.setdefault(tuple(sorted(self.client_resources.items())), []).extend(self.pool)
            self.pool.clear()
            for actor in self._future_to_actor.values():  # a run stopped mid-round
                actor.terminate.remote()
            self._future_to_actor.clear()

        def terminate(self) -> None:  # RayBackend.terminate without its ray.shutdown()
            if self.pool:
                self.pool.terminate_all_actors()

        patch.setattr(BasicActorPool, "add_actors_to_pool", add_actors_to_pool)
        patch.setattr(BasicActorPool, "terminate_all_actors", terminate_all_actors)
        patch.setattr(RayBackend, "terminate", terminate)
        yield ray
    finally:
        patch.undo()
        try:
            ray.shutdown()  # ends every actor too
        finally:
            signal.signal(signal.SIGTERM, saved_sigterm)
            left = stop_new_processes(before)
        assert not left, f"processes of the shared Ray instance still running: {left}"


@pytest.fixture
def ray_of_its_own():
    """For a test of a Flower run that starts and stops Ray itself: no instance is up in this process (one
    from :func:`shared_ray` would be used instead)."""
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized(), "a shared Ray instance is up: this test must run before it"
