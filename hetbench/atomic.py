"""Safe output folders: locked, built in a hidden temporary sibling, then renamed into place.

* A failed or interrupted build never leaves a half-written ``--out``: the build is written in
  ``.<name>.tmp-<random>`` beside it and renamed into place at the end.
* ``--overwrite`` replaces only a folder that a hetbench command wrote (it holds ``hetbench.json``,
  or ``leaderboard.md`` / ``leaderboard.csv``) or an empty folder; never the current folder or one
  of its ancestors.
* An exclusive lock (``fcntl.flock`` on ``.<name>.lock`` beside ``--out``) is taken by the first
  check of ``--out`` and held until the folder is in place (or the command ends), so a second build
  to the same folder fails at once.
* Every temporary folder records the pid and host of its process (:mod:`hetbench.tempdirs`); the
  next run removes those whose process is dead (left by SIGKILL or a crash).
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from hetbench.errors import HetbenchError
from hetbench.tempdirs import PID_FILE, mark as _mark, remove_stale as _remove_stale

try:  # pragma: no cover - always there on POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking
    fcntl = None  # type: ignore[assignment]

#: files that mark a folder a hetbench command wrote (a build's manifest, a leaderboard)
MARKERS = ("hetbench.json", "leaderboard.md", "leaderboard.csv", "claims.json")


@dataclass
class _Held:
    fd: int
    path: Path
    pid: int
    created: list[Path] = field(default_factory=list)


_HELD: dict[str, _Held] = {}
_GUARD = threading.RLock()


def _absolute(out: str | os.PathLike) -> Path:
    return Path(os.path.abspath(os.fspath(out)))


def is_hetbench_output(folder: str | os.PathLike) -> bool:
    """Whether ``--overwrite`` may replace ``folder``: it is empty or holds a hetbench marker file.

    Parameters
    ----------
    folder : path
        An existing folder.

    Returns
    -------
    bool
        True for an empty folder or one holding ``hetbench.json``, ``leaderboard.md`` or
        ``leaderboard.csv``.

    Examples
    --------
    >>> import pathlib
    >>> from hetbench.atomic import is_hetbench_output
    >>> d = pathlib.Path("atomic_marker_example")
    >>> d.mkdir()
    >>> is_hetbench_output(d)
    True
    >>> _ = (d / "notes.txt").write_text("mine")
    >>> is_hetbench_output(d)
    False
    """
    folder = Path(folder)
    if any((folder / m).is_file() for m in MARKERS):
        return True
    return next(iter(folder.iterdir()), None) is None


def _make_parents(parent: Path, shown: str) -> list[Path]:
    """Create ``parent`` and its missing ancestors; returns those created, deepest last."""
    missing = []
    p = parent
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_dirs(list(reversed(missing)))
        raise HetbenchError(f"cannot write --out '{shown}': {exc.strerror or exc}") from None
    return list(reversed(missing))


def _remove_dirs(created: list[Path]) -> None:
    for d in reversed(created):
        try:
            d.rmdir()
        except FileNotFoundError:
            continue
        except OSError:
            break


def _acquire(target: Path, shown: str) -> None:
    key = str(target)
    with _GUARD:
        held = _HELD.get(key)
        if held is not None and held.pid == os.getpid():
            return
        created = _make_parents(target.parent, shown)
        lock_path = target.parent / f".{target.name}.lock"
        while True:
            try:
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            except OSError as exc:
                _remove_dirs(created)
                raise HetbenchError(f"cannot write --out '{shown}': {exc.strerror or exc}") from None
            if fcntl is None:  # pragma: no cover
                break
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise HetbenchError(
                    f"--out '{shown}' is being written by another hetbench process (lock {lock_path}); "
                    "wait for it to finish or choose another folder"
                ) from None
            try:  # the holder before us may have removed the file it locked: lock the current one
                if os.fstat(fd).st_ino == os.stat(lock_path).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        _HELD[key] = _Held(fd, lock_path, os.getpid(), created)


def release_lock(out: str | os.PathLike) -> None:
    """Release this process's lock on ``out`` and remove its lock file (nothing if none is held);
    parent folders created for the lock go too when ``out`` was not written.

    Parameters
    ----------
    out : path
        The output folder given to :func:`check_out_dir`.

    Returns
    -------
    None

    Examples
    --------
    >>> from hetbench.atomic import release_lock
    >>> release_lock("not-locked")
    """
    target = _absolute(out)
    with _GUARD:
        held = _HELD.get(str(target))
        if held is None or held.pid != os.getpid():
            return
        del _HELD[str(target)]
        try:
            if os.fstat(held.fd).st_ino == os.stat(held.path).st_ino:
                held.path.unlink()
        except OSError:
            pass
        os.close(held.fd)
        if not target.exists():
            _remove_dirs(held.created)


@atexit.register
def release_all() -> None:
    """Release every output lock this process holds (the CLI calls it when a command ends).

    Returns
    -------
    None

    Examples
    --------
    >>> from hetbench.atomic import release_all; release_all()
    """
    for key in list(_HELD):
        release_lock(key)


def _contains_cwd(target: Path) -> bool:
    try:
        return Path.cwd().resolve().is_relative_to(target.resolve())
    except OSError:
        return False


def check_out_dir(out: str | os.PathLike, overwrite: bool) -> Path:
    """Check ``out`` before any work and lock it for this process (released by :func:`atomic_dir`).

    Parameters
    ----------
    out : path
        The output folder.
    overwrite : bool
        Whether an existing hetbench output (or empty folder) may be replaced.

    Returns
    -------
    Path
        ``out`` as a Path.

    Raises
    ------
    HetbenchError
        ``out`` is a file, exists without ``overwrite``, is not a hetbench output, holds the current
        folder, cannot be written, or is locked by another process.

    Examples
    --------
    >>> from hetbench.atomic import check_out_dir, release_lock
    >>> check_out_dir("atomic_check_example", overwrite=False).name
    'atomic_check_example'
    >>> release_lock("atomic_check_example")
    >>> check_out_dir(".", overwrite=True)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: --out '.' is the current folder or contains it; choose another folder
    """
    path = Path(out)
    target = _absolute(out)
    if target.parent == target:
        raise HetbenchError(f"--out '{path}' is the root of the file system; choose another folder")
    if target.exists():
        if not target.is_dir():
            raise HetbenchError(f"--out '{path}' exists and is not a folder")
        if not overwrite:
            raise HetbenchError(f"--out '{path}' already exists; pass --overwrite to replace it")
    if target.exists() and _contains_cwd(target):
        raise HetbenchError(f"--out '{path}' is the current folder or contains it; choose another folder")
    _acquire(target, str(path))
    try:
        if target.is_dir() and not is_hetbench_output(target):
            raise HetbenchError(
                f"--out '{path}' is not a hetbench build (no {MARKERS[0]}) and not empty; "
                "--overwrite replaces only hetbench outputs"
            )
        for kind in ("tmp", "old"):
            _remove_stale(target.parent, f".{target.name}.{kind}-")
    except BaseException:
        release_lock(target)
        raise
    return path


@contextmanager
def locked_out(out: str | os.PathLike, overwrite: bool) -> Iterator[Path]:
    """:func:`check_out_dir` for the length of a block: the lock is released when it ends, even on
    failure (a library caller that fails between the check and :func:`atomic_dir` keeps no lock).

    Parameters
    ----------
    out : path
        The output folder.
    overwrite : bool
        As for :func:`check_out_dir`.

    Returns
    -------
    contextmanager of Path
        ``out`` as a Path, checked and locked inside the block.

    Examples
    --------
    >>> import pathlib
    >>> from hetbench.atomic import locked_out
    >>> with locked_out("atomic_locked_example", overwrite=False) as out:
    ...     pathlib.Path(".atomic_locked_example.lock").exists()
    True
    >>> pathlib.Path(".atomic_locked_example.lock").exists()
    False
    """
    path = check_out_dir(out, overwrite)
    try:
        yield path
    finally:
        release_lock(out)


@contextmanager
def atomic_dir(out: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``out``, on failure it is removed.

    Parameters
    ----------
    out : path
        The output folder (checked and locked by :func:`check_out_dir`).
    overwrite : bool
        Replace an existing hetbench output.

    Returns
    -------
    contextmanager of Path
        The temporary sibling ``.<name>.tmp-<random>`` to write into.

    Examples
    --------
    >>> from hetbench.atomic import atomic_dir
    >>> with atomic_dir("atomic_dir_example") as tmp:
    ...     _ = (tmp / "hetbench.json").write_text("{}")
    >>> import pathlib; sorted(p.name for p in pathlib.Path("atomic_dir_example").iterdir())
    ['hetbench.json']
    """
    check_out_dir(out, overwrite)
    target = _absolute(out)
    try:
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:10]}"
        try:
            tmp.mkdir()
            _mark(tmp)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise HetbenchError(f"cannot write --out '{out}': {exc.strerror or exc}") from None
        try:
            yield tmp
            (tmp / PID_FILE).unlink()
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        trash = None
        try:
            if target.exists():
                trash = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:10]}"
                os.replace(target, trash)
                _mark(trash)
            os.replace(tmp, target)
        except BaseException:
            if trash is not None and not target.exists():
                os.replace(trash, target)  # put the old output back
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
    finally:
        release_lock(target)
