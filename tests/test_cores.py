"""The CPUs a process may use (hetbench.cores): the affinity mask and the cgroup quota, not the machine's
count, size every default pool of workers and threads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hetbench.cores import quota_cpus


def test_the_cgroup_quota_is_read_from_v2_then_v1(tmp_path):
    v2, quota, period = tmp_path / "cpu.max", tmp_path / "cfs_quota_us", tmp_path / "cfs_period_us"
    v2.write_text("250000 100000\n")
    assert quota_cpus(v2, (quota, period)) == 2.5
    v2.write_text("max 100000\n")
    assert quota_cpus(v2, (quota, period)) is None  # no quota
    v2.unlink()
    quota.write_text("50000\n")
    period.write_text("100000\n")
    assert quota_cpus(v2, (quota, period)) == 0.5
    quota.write_text("-1\n")  # v1's "no quota"
    assert quota_cpus(v2, (quota, period)) is None
    v2.write_text("garbage")
    assert quota_cpus(v2, (tmp_path / "none", period)) is None


def test_a_quota_below_the_affinity_caps_the_cores(monkeypatch):
    import hetbench.cores as cores

    monkeypatch.setattr(cores, "quota_cpus", lambda: 0.5)
    assert cores.available_cores() == 1  # rounded up, at least one
    monkeypatch.setattr(cores, "quota_cpus", lambda: None)
    assert cores.available_cores() == len(os.sched_getaffinity(0))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and two CPUs")
def test_a_process_pinned_to_one_cpu_gets_one_client_worker_and_one_decode_process():
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from hetbench.cores import available_cores; from hetbench.train.client_pool import default_workers; "
            "from hetbench.train.decode import default_processes; "
            "print(available_cores(), default_workers(), default_processes(), os.cpu_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["1", "1", "1"] and int(out[3]) >= 2  # the machine has more; the process may use one
