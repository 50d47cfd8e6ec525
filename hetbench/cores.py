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
