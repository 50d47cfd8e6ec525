"""Safe writes: --overwrite replaces only hetbench outputs, one build per folder at a time, no
temporary folder outlives its process, SIGTERM cleans up like Ctrl-C, unwritable places are one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hetbench.atomic import atomic_dir, check_out_dir, is_hetbench_output, release_lock
from child_signals import signals_as_in_a_shell

HETBENCH = [sys.executable, "-c", "from hetbench.cli.main import main; main()"]
ENV = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _stale(folder: Path, pid: int) -> Path:
    folder.mkdir()
    (folder / "half.parquet").write_bytes(b"PAR1")
    (folder / ".hetbench-pid").write_text(f"{pid} {socket.gethostname()}\n")
    return folder


def _wait_for(predicate, proc: subprocess.Popen, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def _kill(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


# ---- --overwrite -----------------------------------------------------------------------------
def test_overwrite_refuses_a_folder_that_is_not_a_hetbench_output(tmp_path, run_cli):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    code, _, err = run_cli("partition", "iid", "--out", out, "--overwrite", "-q")
    assert code == 2
    line = _one_line(err)
    assert str(out) in line and "not a hetbench build" in line
    assert (out / "thesis.tex").read_text() == "years of work"
    assert _hidden(tmp_path) == []


def test_overwrite_replaces_an_empty_folder_and_a_build(tmp_path, run_cli):
    out = tmp_path / "s"
    out.mkdir()
    assert run_cli("partition", "iid", "--out", out, "-q", "--overwrite")[0] == 0
    assert (out / "hetbench.json").is_file()
    assert run_cli("partition", "iid", "--clients", "3", "--out", out, "-q", "--overwrite")[0] == 0
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


MARKED = {  # kind -> (marker, text that parses as one, text merely named like one)
    "leaderboard": ("leaderboard.csv", "split,fingerprint,rank,algorithm,seeds,accuracy_mean\n", "|"),
    "claims": ("claims.json", '{"format": "hetbench-claims/1", "claims": []}', "{}"),
    "flower-app": ("pyproject.toml", '[tool.flwr.app]\npublisher = "hetbench"\n[tool.flwr.app.components]\n'
                   'serverapp = "hetbench.flower.server_app:app"\n', '[project]\nname = "mine"\n'),
    "split": ("hetbench.json", None, '{"recipe": {}}'),
}


@pytest.mark.parametrize("kind", sorted(MARKED))
def test_what_counts_as_a_hetbench_output(kind, tmp_path):
    marker, good, fake = MARKED[kind]
    (tmp_path / "empty").mkdir()
    assert is_hetbench_output(tmp_path / "empty", kind)
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / marker).write_text(fake)
    assert not is_hetbench_output(tmp_path / "fake", kind)
    if good is not None:
        (tmp_path / "good").mkdir()
        (tmp_path / "good" / marker).write_text(good)
        assert is_hetbench_output(tmp_path / "good", kind)
        others = [k for k in MARKED if k != kind]
        assert not any(is_hetbench_output(tmp_path / "good", k) for k in others)  # of its own kind only
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.csv").write_text("x")
    assert not is_hetbench_output(tmp_path / "other", kind)


@pytest.mark.parametrize("out", [".", "..", "./"])
def test_out_the_current_folder_or_an_ancestor_is_refused(out, tmp_path, run_cli, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    (here / "hetbench.json").write_text("{}")  # even a build folder: replacing it would pull the cwd away
    monkeypatch.chdir(here)
    code, _, err = run_cli("partition", "iid", "--out", out, "--overwrite", "-q")
    assert code == 2 and "current folder" in _one_line(err)
    assert sorted(p.name for p in here.iterdir()) == ["hetbench.json"]
    assert _hidden(tmp_path) == []


# ---- unwritable places -----------------------------------------------------------------------
@pytest.mark.parametrize("where", ["/proc/x", "/proc/x/y", "{file}/x"])
def test_unwritable_out_is_one_line(where, tmp_path, run_cli):
    (tmp_path / "file").write_text("x")
    code, _, err = run_cli("partition", "iid", "--out", where.format(file=tmp_path / "file"), "-q")
    assert code == 2 and "cannot write --out" in _one_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_failed_build_removes_the_parent_folders_it_made(tmp_path, run_cli):
    code, _, err = run_cli("partition", "dirichlet", "--alpha", "-1", "--out", tmp_path / "a" / "b" / "c", "-q")
    assert code == 2, err
    assert list(tmp_path.iterdir()) == []


# ---- the lock --------------------------------------------------------------------------------
def test_a_second_build_to_a_locked_folder_fails_at_once(tmp_path):
    out = tmp_path / "x"
    holder = textwrap.dedent(f"""
        import sys, time
        from hetbench.atomic import check_out_dir
        check_out_dir({str(out)!r}, overwrite=False)
        print("locked", flush=True)
        time.sleep(120)
    """)
    procs: list[subprocess.Popen] = []
    try:
        first = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True, env=ENV)
        procs.append(first)
        assert first.stdout.readline().strip() == "locked"
        start = time.monotonic()
        second = subprocess.run([*HETBENCH, "partition", "iid", "--out", str(out), "-q"], capture_output=True,
                                text=True, env=ENV, timeout=120)
        assert second.returncode == 2, second.stderr
        line = _one_line(second.stderr)
        assert "another hetbench process" in line and str(out) in line
        assert time.monotonic() - start < 60
        assert not out.exists()
        _kill(procs)  # SIGKILL: the lock file stays, but nobody holds it
        again = subprocess.run([*HETBENCH, "partition", "iid", "--out", str(out), "-q"], capture_output=True,
                               text=True, env=ENV, timeout=120)
        assert again.returncode == 0, again.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]
    finally:
        _kill(procs)


def test_the_lock_is_reentrant_in_one_process_and_released_by_atomic_dir(tmp_path):
    out = tmp_path / "o"
    check_out_dir(out, False)
    check_out_dir(out, False)
    assert (tmp_path / ".o.lock").is_file()
    with atomic_dir(out, kind="claims") as tmp:
        (tmp / "claims.json").write_text('{"format": "hetbench-claims/1"}')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]
    check_out_dir(out, True, "claims")
    release_lock(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


# ---- stale temporary folders -----------------------------------------------------------------
def test_stale_temporary_siblings_of_dead_processes_are_removed(tmp_path, run_cli):
    dead = _dead_pid()
    _stale(tmp_path / ".s.tmp-0123456789", dead)
    _stale(tmp_path / ".s.old-0123456789", dead)
    live = _stale(tmp_path / ".s.tmp-live", os.getppid())  # a running process: kept
    legacy = tmp_path / ".s.tmp-legacy"  # no pid recorded: not ours to judge
    legacy.mkdir()
    code, _, err = run_cli("partition", "iid", "--out", tmp_path / "s", "-q")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([".s.tmp-legacy", ".s.tmp-live", "s"])
    assert live.is_dir() and legacy.is_dir()
    assert not (tmp_path / "s" / ".hetbench-pid").exists()


def test_temp_dir_records_its_process_and_cleans_dead_ones(tmp_path):
    from hetbench.tempdirs import temp_dir

    _stale(tmp_path / ".report-old", _dead_pid())
    with temp_dir(tmp_path, ".report-") as tmp:
        pid, host = (tmp / ".hetbench-pid").read_text().split()
        assert int(pid) == os.getpid() and host == socket.gethostname()
        assert sorted(p.name for p in tmp_path.iterdir()) == [tmp.name]
    assert list(tmp_path.iterdir()) == []


# ---- SIGTERM ---------------------------------------------------------------------------------
STALLED_BUILD = """
import sys, time
import hetbench.publish as publish

def stall(*args, **kwargs):  # the build stops half-way through writing its temporary folder
    print("writing", flush=True)
    time.sleep(120)

publish.write_report = stall
from hetbench.cli.main import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("sig, code, word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_sigterm_cleans_up_like_ctrl_c(sig, code, word, tmp_path):
    out = tmp_path / "s"
    procs: list[subprocess.Popen] = []
    try:
        proc = subprocess.Popen([sys.executable, "-c", STALLED_BUILD, "partition", "iid", "--out", str(out), "-q"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                                preexec_fn=signals_as_in_a_shell)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "writing"
        tmps = [p for p in tmp_path.iterdir() if p.name.startswith(".s.tmp-")]
        assert len(tmps) == 1 and (tmps[0] / ".hetbench-pid").read_text().split()[0] == str(proc.pid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert _one_line(err) == f"hetbench: {word}"
        assert list(tmp_path.iterdir()) == []
    finally:
        _kill(procs)


def test_a_build_killed_with_sigkill_is_cleaned_by_the_next_run(tmp_path, run_cli):
    out = tmp_path / "s"
    procs: list[subprocess.Popen] = []
    try:
        proc = subprocess.Popen([sys.executable, "-c", STALLED_BUILD, "partition", "iid", "--out", str(out), "-q"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                                preexec_fn=signals_as_in_a_shell)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "writing"
        _kill(procs)
        assert any(p.name.startswith(".s.tmp-") for p in tmp_path.iterdir())
        code, _, err = run_cli("partition", "iid", "--out", out, "-q")
        assert code == 0, err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]
    finally:
        _kill(procs)


def test_a_failing_library_build_keeps_no_lock(tmp_path):
    from hetbench.builders.geo import build_geo
    from hetbench.errors import HetbenchError

    with pytest.raises(HetbenchError, match="nope"):
        build_geo(tmp_path / "g", lat_col="nope", quiet=True)
    assert list(tmp_path.iterdir()) == []
