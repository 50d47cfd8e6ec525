"""How many CPUs this process may really use: its affinity mask, capped by a cgroup CPU quota.

``os.cpu_count()`` counts the machine's CPUs, not the ones a process gets: under ``taskset``, a SLURM
allocation or a container with a CPU quota (Docker ``--cpus``, Kubernetes limits, CI runners) it
overstates them, and every worker or intra-op thread sized by it oversubscribes the cores and spins
(``hetbench train --algo central`` took 74.6 s instead of 3.7 s on a loaded 2-core machine). The
quota is read as the kernel exposes it: cgroup v2 ``cpu.max`` (``"<quota> <period>"`` or ``"max ..."``),
else cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``; a fractional quota rounds up (1.5 CPUs
can keep 2 threads busy half the time each).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

#: where the kernel exposes this process's cgroup CPU quota (v2, then v1)
CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def quota_cpus(v2: Path = CGROUP_V2, v1: tuple[Path, Path] = CGROUP_V1) -> float | None:
    """The CPU quota of this process's cgroup in CPUs (None: no quota, or none readable).

    Parameters
    ----------
    v2 : Path
        cgroup v2's ``cpu.max``.
    v1 : (Path, Path)
        cgroup v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "cpu.max").write_text("150000 100000\\n")
    14
    >>> quota_cpus(folder / "cpu.max", (folder / "none", folder / "none"))
    1.5
    >>> (folder / "cpu.max").write_text("max 100000\\n")
    11
    >>> quota_cpus(folder / "cpu.max", (folder / "none", folder / "none")) is None
    True
    """
    try:
        quota, period = v2.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us, period_us = int(v1[0].read_text()), int(v1[1].read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def available_cores() -> int:
    """CPUs this process may run on: the affinity mask (``os.sched_getaffinity``; ``os.cpu_count`` where
    there is none), capped by the cgroup quota (:func:`quota_cpus`, rounded up); at least 1.

    Examples
    --------
    >>> 1 <= available_cores() <= (os.cpu_count() or 1)
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = quota_cpus()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


#: where live runs register (overridden by ``HETBENCH_RUNS_DIR``): per user, on the machine's local disk
RUNS_ENV = "HETBENCH_RUNS_DIR"


def runs_dir() -> Path:
    """The folder of this user's live-run files: ``$HETBENCH_RUNS_DIR``, else ``$XDG_RUNTIME_DIR/hetbench-runs``,
    else ``<temp dir>/hetbench-runs-<uid>``."""
    given = os.environ.get(RUNS_ENV)
    if given:
        return Path(given)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "hetbench-runs"
    import tempfile

    return Path(tempfile.gettempdir()) / f"hetbench-runs-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


class RunRegistration:
    """This process's entry among the training runs live on the machine, so concurrent runs share the cores.

    A run holds an exclusive ``flock`` on a file of its own in :func:`runs_dir` while it trains. Counting
    the live runs tries to lock every file: a file that cannot be locked belongs to a live run; one that can
    was left by a run that died (the kernel drops a dead process's locks) and is removed. Nothing depends on
    process ids, so a reused pid cannot fool it. A run's file is locked before it gets its visible name, so
    a count never takes a starting run for a dead one. Where this run cannot register (no ``fcntl``, a
    read-only folder) it counts the others that did, plus itself.

    Parameters
    ----------
    folder : Path, optional
        The registry folder (default :func:`runs_dir`).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with RunRegistration(folder) as a, RunRegistration(folder) as b:
    ...     a.live_runs(), share_of_cores(4, a.live_runs())
    (2, 2)
    >>> RunRegistration(folder).live_runs()  # not registered: the others (none now) and itself
    1
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else runs_dir()
        self._file = None
        self.path: Path | None = None

    def __enter__(self) -> "RunRegistration":
        try:
            import fcntl
            import uuid

            self.folder.mkdir(parents=True, exist_ok=True)
            name = f"{os.getpid()}-{uuid.uuid4().hex}"
            staging = self.folder / f".{name}.new"  # locked before it is visible, so no count takes it for stale
            f = open(staging, "w")
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path = self.folder / f"{name}.run"
            staging.rename(path)  # the lock belongs to the file, not its name
            self._file, self.path = f, path
        except (ImportError, OSError):
            self._file = self.path = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            try:
                self.path.unlink()
            except OSError:
                pass
            self._file.close()
            self._file = self.path = None

    def live_runs(self) -> int:
        """Runs training on this machine now, this one included when registered (at least 1 then)."""
        try:
            import fcntl

            names = list(self.folder.glob("*.run"))
        except (ImportError, OSError):
            return 1 if self._file is not None else 0
        live = 0
        for path in names:
            if self.path is not None and path == self.path:
                live += 1
                continue
            try:
                fd = os.open(path, os.O_RDONLY)  # flock needs no write access, and never recreates a removed file
            except OSError:
                continue  # removed meanwhile
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                live += 1  # locked: a live run
            else:
                try:
                    path.unlink()  # left by a run that ended without removing it
                except OSError:
                    pass
            finally:
                os.close(fd)
        return live if self._file is not None else live + 1


def share_of_cores(cores: int, runs: int) -> int:
    """Threads one of ``runs`` concurrent runs may keep busy on ``cores`` CPUs: an equal share, at least 1.

    Examples
    --------
    >>> share_of_cores(2, 1), share_of_cores(2, 2), share_of_cores(2, 3), share_of_cores(16, 3)
    (2, 1, 1, 5)
    """
    return max(1, int(cores) // max(1, int(runs)))
