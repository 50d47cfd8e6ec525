"""The exclusive lock on an output folder: ``fcntl.flock`` on ``.<name>.lock`` beside it.

:func:`hetbench.atomic.check_out_dir` takes it with the first check of an ``--out`` and
:func:`hetbench.atomic.atomic_dir` releases it once the folder is in place, so a second command writing the
same folder fails at once (one line naming the lock) instead of racing the first. A lock is per process
(a forked child does not inherit the right to release it); every lock still held is released when the
process ends (:func:`release_all`, also called by the CLI when a command ends).
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

from hetbench.errors import HetbenchError

try:  # pragma: no cover - always there on POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking
    fcntl = None  # type: ignore[assignment]


@dataclass
class _Held:
    fd: int
    path: Path
    pid: int
    created: list[Path] = field(default_factory=list)


_HELD: dict[str, _Held] = {}
_GUARD = threading.RLock()


def absolute_path(out: str | os.PathLike) -> Path:
    """``out`` made absolute without resolving links (the key a lock is held under)."""
    return Path(os.path.abspath(os.fspath(out)))


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
        raise HetbenchError(f"cannot write `out` '{shown}': {exc.strerror or exc}") from None
    return list(reversed(missing))


def _remove_dirs(created: list[Path]) -> None:
    for d in reversed(created):
        try:
            d.rmdir()
        except FileNotFoundError:
            continue
        except OSError:
            break


def acquire_lock(target: Path, shown: str) -> None:
    """Take the exclusive lock ``.<name>.lock`` beside ``target`` (its parents made first, and removed again
    if nothing is written); held until :func:`release_lock`. Another process holding it: one line naming
    ``shown``, the ``--out`` as given."""
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
                raise HetbenchError(f"cannot write `out` '{shown}': {exc.strerror or exc}") from None
            if fcntl is None:  # pragma: no cover
                break
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise HetbenchError(
                    f"`out` '{shown}' is being written by another hetbench process (lock {lock_path}); "
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
    >>> from hetbench.out_lock import release_lock
    >>> release_lock("not-locked")
    """
    target = absolute_path(out)
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
    >>> from hetbench.out_lock import release_all; release_all()
    """
    for key in list(_HELD):
        release_lock(key)
