"""SIGTERM and Ctrl-C while a command runs (issue 25): the process and every process it started end promptly,
with one line on stderr, and leave no output behind.

Each test starts ``hetbench`` in a session of its own, records every process under it, signals it, waits a
bounded time, and in a ``finally`` kills by pid whatever is left. Ray binds 127.0.0.1 only (its single-node
mode, set for every subprocess in tests/conftest.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from child_signals import signals_as_in_a_shell

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process tree from /proc")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _interrupt(args: list[str], cwd: Path, ready, sig: int, to_group: bool, start_s: float, end_s: float):
    """Run ``hetbench args``; once ``ready(descendant command lines)`` holds (within ``start_s`` seconds) send
    ``sig`` (to its process group, as a terminal's Ctrl-C does, or to it alone); return (exit code, stderr,
    seconds it took to end, the processes under it that outlived it)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "hetbench.cli.main", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=signals_as_in_a_shell)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + start_s
        while True:
            seen |= _descendants(proc.pid)
            if ready([_cmdline(p) for p in seen if _alive(p)]):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"not ready within {start_s} s (exit code {proc.poll()}): {proc.stderr.read()[-2000:]}")
            time.sleep(0.2)
        seen |= _descendants(proc.pid)
        t0 = time.monotonic()
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        try:
            err = proc.communicate(timeout=end_s)[1]
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {end_s} s after the signal")
        took = time.monotonic() - t0
        end = time.monotonic() + 20  # the children: Ray's servers take a few seconds to go
        while time.monotonic() < end and any(_alive(p) for p in seen):
            time.sleep(0.2)
        return proc.returncode, err, took, [(p, _cmdline(p)) for p in seen if _alive(p)]
    finally:
        seen |= _descendants(proc.pid) if proc.poll() is None else set()
        _kill([proc.pid])
        _kill(seen)
        try:
            proc.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ValueError):
            pass


#: when Ctrl-C comes: while the forkserver imports the ISP (it printed a 40-line traceback), or once it has
#: forked the two workers (each printed its own)
MOMENTS = {"while the workers start": 1, "while they render": 3}


@pytest.mark.parametrize("moment", sorted(MOMENTS))
def test_ctrl_c_during_a_two_process_build_is_one_line(moment, tmp_path):
    out = tmp_path / "out"
    code, err, took, left = _interrupt(
        ["build", "iso-isp", "--stages", "all", "--size", "32", "--crops-per-photo", "40", "--crop-size", "96",
         "--num-proc", "2", "-q", "--out", str(out)], tmp_path,
        ready=lambda cmds: sum("forkserver" in c for c in cmds) >= MOMENTS[moment],
        sig=signal.SIGINT, to_group=True, start_s=120, end_s=60)
    assert code == 130, err
    assert err.strip().splitlines() == ["hetbench: interrupted"], err
    assert not left, left
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no temporary sibling, no lock


@pytest.mark.slow
def test_sigterm_during_a_flower_training_ends_it_and_its_processes(tmp_path):
    pytest.importorskip("flwr")
    pytest.importorskip("ray")
    from hetbench.partitioners import IIDPartitioner
    from hetbench.pipeline import make_split

    split = tmp_path / "split"
    make_split("builtin:digits", IIDPartitioner(4), split, seed=0, quiet=True)
    out = tmp_path / "results"
    code, err, took, left = _interrupt(
        ["train", "--split", str(split), "--engine", "flower", "--rounds", "500", "--clients-per-round", "2",
         "--flower-actors", "1", "--threads", "1", "-q", "--out", str(out)], tmp_path,
        ready=lambda cmds: any("ClientAppActor" in c for c in cmds),
        sig=signal.SIGTERM, to_group=False, start_s=240, end_s=60)
    assert code == 143, err
    assert err.strip().splitlines() == ["hetbench: terminated"], err  # no Ray stack dump, no traceback
    assert took < 30, took
    assert not left, left
    assert not out.exists()
