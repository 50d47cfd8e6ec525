"""A SuperLink in simulation mode that this process owns: what ``hetbench train --engine flower`` runs its
Flower apps on with ``flwr run``, Flower's supported route to a simulation.

``flwr run`` against a ``:local:`` connection starts a SuperLink itself, detached, on fixed ports (39091,
39093), with its state and installed apps under the user's ``~/.flwr``, and leaves it running
(``flwr/cli/local_superlink.py``, ``_start_local_superlink``). Instead, :class:`LocalSuperLink` starts
``flower-superlink --simulation`` as a child of this process:

* listening on 127.0.0.1 only, on an ephemeral port (Flower 1.42 serves its Control, Fleet and Runtime
  APIs over one HTTP port), insecure (nothing leaves the machine);
* with ``FLWR_HOME`` in a temporary folder (the connection ``hetbench`` of its ``config.toml``, the apps
  ``flwr-simulation`` installs), so ``~/.flwr`` is neither read nor written;
* with Flower's telemetry, update check and runtime dependency installation off: no network;
* with ``RAY_ADDRESS=local`` and Ray's single-node switch (:data:`hetbench.engines.ray_engine.SINGLE_NODE_VAR`)
  in the environment Flower's processes inherit, so the Ray instance ``flwr-simulation`` starts is one of its
  own, on 127.0.0.1 only (the federation config cannot carry Ray's ``address``);
* with Flower's own executables from this interpreter's folder first on ``PATH`` (the SuperLink starts
  ``flower-superexec``, which starts ``flwr-simulation``, by name).

The SuperLink starts ``flower-superexec`` detached (a session of its own), which starts ``flwr-simulation``,
which starts Ray (GCS, raylet, workers). On Linux this process becomes a child subreaper while the SuperLink
runs (``prctl(PR_SET_CHILD_SUBREAPER)``), so a process of that tree whose parent ends is re-parented here
rather than to init; every process ever seen below this one since the start (by pid and start time, so a
reused pid is never hit) is stopped by pid when the context ends, whatever happens: SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from hetbench.errors import HetbenchError

#: seconds to wait for the SuperLink to answer on its port
START_TIMEOUT_S = 60.0
#: seconds between SIGTERM and SIGKILL when stopping
STOP_GRACE_S = 5.0
#: the name of its temporary folders (in the system's temporary folder)
PREFIX = "hetbench-flower-"
#: seconds between two looks at the process tree while a run goes on
SCAN_S = 1.0
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 1, 36, 37


def flower_env(flwr_home: str | os.PathLike, verbose: bool = False) -> dict[str, str]:
    """The environment of Flower's processes (module notes).

    Parameters
    ----------
    flwr_home : path
        The temporary ``FLWR_HOME``.
    verbose : bool
        Keep Ray's and Flower's warnings.

    Returns
    -------
    dict
        ``os.environ`` with Flower's and Ray's settings.

    Examples
    --------
    >>> env = flower_env("/tmp/h")
    >>> env["FLWR_HOME"], env["RAY_ADDRESS"], env["FLWR_TELEMETRY_ENABLED"], env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"]
    ('/tmp/h', 'local', '0', '0')
    """
    from hetbench.engines.ray_engine import SINGLE_NODE_VAR

    env = dict(os.environ)
    env.update({
        "FLWR_HOME": str(flwr_home), "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
        "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1", "RAY_ADDRESS": "local", SINGLE_NODE_VAR: "0",
        "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
        "RAY_DEDUP_LOGS": "0", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    })
    if not verbose:
        env["PYTHONWARNINGS"] = "ignore"
    return env


def free_port() -> int:
    """An ephemeral TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of ``pid`` from /proc, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def _running(pid: int, start: int) -> bool:
    """Whether ``pid``, started at ``start``, still runs: a zombie thread-group leader whose other threads are
    still exiting (the SuperLink after SIGTERM: its gRPC threads) still runs."""
    st = _stat(pid)
    if st is None or st[2] != start:
        return False
    if st[0] != "Z":
        return True
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every live process below ``root`` (from /proc; empty where there is none).

    Examples
    --------
    >>> descendants(os.getpid()) == {} or all(isinstance(p, int) for p in descendants(os.getpid()))
    True
    """
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[str, int, int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            stats[int(entry)] = st
            children.setdefault(st[1], []).append(int(entry))
    found: dict[int, int] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found and stats[pid][0] != "Z":
            found[pid] = stats[pid][2]
            todo.extend(children.get(pid, []))
    return found


def _subreaper(on: bool | None = None) -> bool:
    """Whether this process is a child subreaper (Linux); with ``on``, set it first. False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if on is not None:
            libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
        value = ctypes.c_int(0)
        libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)
        return bool(value.value)
    except (OSError, AttributeError):
        return False


def _die_with_parent() -> None:
    """In a child before it runs (Linux): SIGTERM it when this process dies, even by SIGKILL, so a SuperLink
    never outlives hetbench (its SuperExec and ``flwr-simulation`` follow their parents: ``--parent-pid``)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass


class LocalSuperLink:
    """A SuperLink in simulation mode, child of this process, and everything it starts (module notes).

    Parameters
    ----------
    verbose : bool
        Show the SuperLink's and the runs' logs on stderr (otherwise they go to files in the temporary folder).

    Examples
    --------
    >>> with LocalSuperLink() as link:  # doctest: +SKIP
    ...     code = link.run("app_folder", ["num-supernodes=10"])
    """

    def __init__(self, verbose: bool = False) -> None:
        from hetbench.tempdirs import mark, remove_stale

        self.verbose = verbose
        remove_stale(tempfile.gettempdir(), PREFIX)  # those of runs that were killed (SIGKILL)
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX))  # mode 0700
        mark(self.root)
        self.home = self.root / "flwr-home"
        self.home.mkdir()
        self.env = flower_env(self.home, verbose)
        self.bin = Path(sys.executable).parent
        self.procs: list[subprocess.Popen] = []
        self.seen: dict[int, int] = {}
        self.before = descendants(os.getpid())
        self.was_subreaper = False
        self.port = 0
        self.scanned = 0.0

    def _start(self, name: str, args: list[str], log: IO | None = None) -> subprocess.Popen:
        """Start ``bin/<args[0]>`` as a child, its output to ``log`` (or to stderr when verbose)."""
        out = None if self.verbose else (log or open(self.root / f"{name}.log", "ab"))
        try:
            proc = subprocess.Popen([str(self.bin / args[0]), *args[1:]], env=self.env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT if out is not None else None,
                                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        finally:
            if out is not None and log is None:
                out.close()
        self.procs.append(proc)
        self.scan()
        return proc

    def scan(self, force: bool = True) -> None:
        """Record the processes below this one started since the SuperLink (called while waiting; without
        ``force``, at most every :data:`SCAN_S` seconds: reading /proc costs a few milliseconds)."""
        now = time.monotonic()
        if not force and now - self.scanned < SCAN_S:
            return
        self.scanned = now
        for pid, start in descendants(os.getpid()).items():
            if self.before.get(pid) != start:
                self.seen[pid] = start

    def __enter__(self) -> "LocalSuperLink":
        try:
            self.was_subreaper = _subreaper()
            _subreaper(True)
            for _attempt in range(3):  # the ephemeral port may be taken between the probe and the bind
                self.port = free_port()
                (self.home / "config.toml").write_text(
                    '[superlink]\ndefault = "hetbench"\n\n[superlink.hetbench]\n'
                    f'address = "127.0.0.1:{self.port}"\ninsecure = true\n')
                link = self._start("superlink", ["flower-superlink", "--insecure", "--simulation", "--host",
                                                 "127.0.0.1", "--port", str(self.port),
                                                 "--disable-runtime-dependency-installation"])
                if self._wait_ready(link):
                    return self
            raise HetbenchError("could not start Flower's SuperLink on 127.0.0.1 "
                                f"({self.log_tail('superlink') or 'it exited'})")
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _wait_ready(self, link: subprocess.Popen) -> bool:
        """True once the SuperLink accepts connections; False when it exited (port taken?)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if link.poll() is not None:
                return False
            with socket.socket() as s:
                s.settimeout(1.0)
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return True
            time.sleep(0.1)
        raise HetbenchError(f"Flower's SuperLink did not answer on 127.0.0.1:{self.port} within {START_TIMEOUT_S:g} s")

    def run(self, app: str | os.PathLike, federation_config: list[str], name: str = "run") -> subprocess.Popen:
        """Start ``flwr run <app> hetbench --stream`` (its output in ``<name>.log``); returns the process.

        Parameters
        ----------
        app : path
            The Flower app project folder.
        federation_config : list of str
            ``key=value`` settings of the simulation (``num-supernodes=10``, ``client-resources-num-cpus=1``).
        name : str
            The name of its log file.

        Returns
        -------
        subprocess.Popen
            ``flwr run``, streaming the run's logs until it ends.
        """
        return self._start(name, ["flwr", "run", str(app), "hetbench", "--stream", "--federation-config",
                                  " ".join(federation_config)])

    def log_tail(self, name: str) -> str:
        """The last line of ``<name>.log`` that says something (an error line if there is one), ``""`` if none."""
        try:
            lines = [ln.strip(" │╭╮╰╯─") for ln in (self.root / f"{name}.log").read_text(errors="replace").splitlines()]
        except OSError:
            return ""
        lines = [ln for ln in lines if ln.strip()]
        errors = [ln for ln in lines if "Error" in ln or "ERROR" in ln or "Exception" in ln]
        return " ".join((errors or lines or [""])[-1].split())[:300]

    def stop(self) -> list[int]:
        """Stop every process started here, by pid, whatever happens (SIGTERM, then SIGKILL after
        :data:`STOP_GRACE_S`); remove the temporary folder. Returns the pids still alive (should be none)."""
        try:
            self.scan()
            for proc in self.procs:
                self.seen.setdefault(proc.pid, (_stat(proc.pid) or ("", 0, -1))[2])
            for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
                for pid in self.alive():
                    try:
                        os.kill(pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
                deadline = time.monotonic() + grace
                while not (done := self._reap() and not self.alive()) and time.monotonic() < deadline:
                    time.sleep(0.05)
                if done:
                    break
            return self.alive()
        finally:
            if not self.was_subreaper:
                _subreaper(False)
            shutil.rmtree(self.root, ignore_errors=True)

    def alive(self) -> list[int]:
        """The processes started here that still run."""
        return [pid for pid, start in self.seen.items() if _running(pid, start)]

    def _reap(self) -> bool:
        """Collect the exit status of this process's children among them; True once none is left to collect.

        A multi-threaded process (the SuperLink's gRPC threads) shows its leader as a zombie while its other
        threads still exit, and cannot be collected before they have: "zombie" is not "gone" until reaped.
        """
        reaped = all([proc.poll() is not None for proc in self.procs])
        me = os.getpid()
        for pid, start in self.seen.items():
            st = _stat(pid)
            if st is not None and st[0] == "Z" and st[1] == me and st[2] == start:  # re-parented here, ended
                try:
                    reaped &= os.waitpid(pid, os.WNOHANG)[0] == pid
                except (ChildProcessError, OSError):
                    pass
        return reaped
