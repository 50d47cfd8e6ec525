"""Temporary folders that name their process, so the next run can remove those of dead processes.

A temporary folder (the ``.<name>.tmp-*`` sibling of an output being built, the ``.report-*`` folder
of ``hetbench report``) holds ``.hetbench-pid`` with its process id and host; a run that finds such a
folder of a dead process on this host (left by SIGKILL or a crash) removes it.
"""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: the file inside a temporary folder naming the process that owns it ("<pid> <host>")
PID_FILE = ".hetbench-pid"


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2:][:1] != "Z"
    except (OSError, ValueError):
        return True


def mark(folder: Path) -> None:
    """Record this process (``<pid> <host>``) in ``folder/.hetbench-pid``.

    Parameters
    ----------
    folder : Path
        A temporary folder of this process.

    Returns
    -------
    None

    Examples
    --------
    >>> import os, pathlib
    >>> from hetbench.tempdirs import mark
    >>> d = pathlib.Path("mark_example"); d.mkdir()
    >>> mark(d); (d / ".hetbench-pid").read_text().split()[0] == str(os.getpid())
    True
    """
    (folder / PID_FILE).write_text(f"{os.getpid()} {socket.gethostname()}\n")


def _is_stale(folder: Path) -> bool:
    try:
        pid, host = (folder / PID_FILE).read_text().split()[:2]
        return host == socket.gethostname() and not _process_alive(int(pid))
    except (OSError, ValueError):
        return False  # no readable pid: not ours to judge (an older hetbench, or being created)


def remove_stale(parent: str | os.PathLike, prefix: str) -> list[Path]:
    """Remove the folders ``parent/<prefix>*`` whose recorded process is dead.

    Kept: folders without a pid file (an older hetbench, or one being created), of a live process,
    or of another host.

    Parameters
    ----------
    parent : path
        The folder to clean.
    prefix : str
        The name prefix of the temporary folders, e.g. ``.out.tmp-`` or ``.report-``.

    Returns
    -------
    list of Path
        The folders removed.

    Examples
    --------
    >>> import pathlib, socket
    >>> from hetbench.tempdirs import remove_stale
    >>> d = pathlib.Path(".stale-example.tmp-1")
    >>> d.mkdir()
    >>> _ = (d / ".hetbench-pid").write_text(f"999999999 {socket.gethostname()}")
    >>> [p.name for p in remove_stale(".", ".stale-example.tmp-")]
    ['.stale-example.tmp-1']
    """
    parent = Path(parent)
    removed = []
    try:
        entries = [p for p in parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return removed
    for p in sorted(entries):
        if p.is_dir() and not p.is_symlink() and _is_stale(p):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


@contextmanager
def temp_dir(parent: str | os.PathLike, prefix: str) -> Iterator[Path]:
    """A temporary folder ``parent/<prefix><random>`` that records its process and is removed on exit.

    Stale folders with the same prefix from dead processes are removed first .

    Parameters
    ----------
    parent : path
        Where to create it (an existing folder).
    prefix : str
        Its name prefix, e.g. ``.report-``.

    Returns
    -------
    contextmanager of Path
        The folder, removed with its contents when the block ends.

    Examples
    --------
    >>> from hetbench.tempdirs import temp_dir
    >>> with temp_dir(".", ".example-") as tmp:
    ...     tmp.name.startswith(".example-"), tmp.is_dir()
    (True, True)
    >>> tmp.exists()
    False
    """
    parent = Path(parent)
    remove_stale(parent, prefix)
    tmp = parent / f"{prefix}{uuid.uuid4().hex[:10]}"
    tmp.mkdir()
    try:
        mark(tmp)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
