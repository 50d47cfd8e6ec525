"""Safe output folders: locked, built in a hidden temporary sibling, then renamed into place.

* A failed or interrupted build never leaves a half-written ``--out``: the build is written in
  ``.<name>.tmp-<random>`` beside it and renamed into place at the end.
* ``--overwrite`` replaces only an empty folder or an output of the same kind that a hetbench command
  wrote: its marker must parse as one (:mod:`hetbench.outputs`: a build's ``hetbench.json`` is a
  manifest ``read_manifest`` accepts, a leaderboard's ``leaderboard.csv`` has its header, ...); never
  the current folder or one of its ancestors, nor a folder equal to, inside or containing an input.
* The old output is moved aside only once the new one is complete, and put back if the rename fails.
* An exclusive lock (``fcntl.flock`` on ``.<name>.lock`` beside ``--out``) is taken by the first
  check of ``--out`` and held until the folder is in place (or the command ends), so a second build
  to the same folder fails at once.
* A single file is written the same way (:func:`atomic_file`, :func:`write_atomic`): into a hidden
  sibling, renamed over the file at the end, so a reader sees the old file or the whole new one.
* Every temporary folder records the pid and host of its process (:mod:`hetbench.tempdirs`); the
  next run removes those whose process is dead (left by SIGKILL or a crash).
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

from hetbench.errors import HetbenchError
from hetbench.out_lock import absolute_path, acquire_lock, release_lock
from hetbench.outnames import check_out_name
from hetbench.outputs import KINDS, check_inputs, marker_problem
from hetbench.tempdirs import PID_FILE, mark as _mark, remove_stale as _remove_stale

#: the marker file of each kind of output folder (:data:`hetbench.outputs.KINDS` says how each must parse)
MARKERS = {kind: marker for kind, (marker, _, _) in KINDS.items()}


def is_hetbench_output(folder: str | os.PathLike, kind: str = "split") -> bool:
    """Whether ``--overwrite`` may replace ``folder`` as an output of ``kind``: it is empty or its marker
    parses as one (:func:`hetbench.outputs.marker_problem`).

    Parameters
    ----------
    folder : path
        An existing folder.
    kind : str
        ``split`` (a build), ``leaderboard``, ``claims`` or ``flower-app``.

    Returns
    -------
    bool
        True for an empty folder or one whose marker parses as ``kind`` (a file merely named
        ``hetbench.json`` is not enough).

    Examples
    --------
    >>> import pathlib
    >>> from hetbench.atomic import is_hetbench_output
    >>> d = pathlib.Path("atomic_marker_example")
    >>> d.mkdir()
    >>> is_hetbench_output(d)
    True
    >>> _ = (d / "notes.txt").write_text("mine")
    >>> _ = (d / "hetbench.json").write_text("{}")
    >>> is_hetbench_output(d)
    False
    """
    return marker_problem(folder, kind) is None




def _contains_cwd(target: Path) -> bool:
    try:
        return Path.cwd().resolve().is_relative_to(target.resolve())
    except OSError:
        return False


def check_out_dir(out: str | os.PathLike, overwrite: bool, kind: str = "split",
                  inputs: Mapping[str, str | os.PathLike | None] | None = None) -> Path:
    """Check ``out`` before any work and lock it for this process (released by :func:`atomic_dir`).

    Parameters
    ----------
    out : path
        The output folder.
    overwrite : bool
        Whether an existing hetbench output of ``kind`` (or empty folder) may be replaced.
    kind : str
        What the command writes: ``split``, ``leaderboard``, ``claims`` or ``flower-app``
        (:data:`hetbench.outputs.KINDS`).
    inputs : mapping, optional
        Option name -> path the command reads: ``out`` equal to, inside or containing one is refused
        (besides those the CLI declared, :func:`hetbench.outputs.declared_inputs`).

    Returns
    -------
    Path
        ``out`` as a Path.

    Raises
    ------
    HetbenchError
        ``out`` is empty or has a name the file system cannot hold, overlaps an input, is a file, exists without ``overwrite``, is not a hetbench output of
        ``kind``, holds the current folder, cannot be written, or is locked by another process.

    Examples
    --------
    >>> from hetbench.atomic import check_out_dir, release_lock
    >>> check_out_dir("atomic_check_example", overwrite=False).name
    'atomic_check_example'
    >>> release_lock("atomic_check_example")
    >>> check_out_dir(".", overwrite=True)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out '.' is the current folder or contains it; choose another folder
    >>> check_out_dir("src/copy", overwrite=False, inputs={"`dataset`": "."})
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out 'src/copy' is inside the input dataset '.'; choose a folder outside it
    """
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}")
    check_out_name(out)  # not empty (the current folder), names the file system can hold
    path = Path(out)
    target = absolute_path(out)
    check_inputs(out, inputs)
    if target.parent == target:
        raise HetbenchError(f"`out` '{path}' is the root of the file system; choose another folder")
    if target.exists():
        if not target.is_dir():
            raise HetbenchError(f"`out` '{path}' exists and is not a folder")
        if not overwrite:
            raise HetbenchError(f"`out` '{path}' already exists; pass `overwrite` to replace it")
    if target.exists() and _contains_cwd(target):
        raise HetbenchError(f"`out` '{path}' is the current folder or contains it; choose another folder")
    acquire_lock(target, str(path))
    try:
        problem = marker_problem(target, kind) if target.is_dir() else None
        if problem is not None:
            raise HetbenchError(f"`out` '{path}' {problem}; `overwrite` replaces only a {KINDS[kind][1]} "
                                "(or an empty folder)")
        for kind in ("tmp", "old"):
            _remove_stale(target.parent, f".{target.name}.{kind}-")
    except BaseException:
        release_lock(target)
        raise
    return path


@contextmanager
def locked_out(out: str | os.PathLike, overwrite: bool, kind: str = "split",
               inputs: Mapping[str, str | os.PathLike | None] | None = None) -> Iterator[Path]:
    """:func:`check_out_dir` for the length of a block: the lock is released when it ends, even on
    failure (a library caller that fails between the check and :func:`atomic_dir` keeps no lock).

    Parameters
    ----------
    out : path
        The output folder.
    overwrite, kind, inputs
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
    path = check_out_dir(out, overwrite, kind, inputs)
    try:
        yield path
    finally:
        release_lock(out)


@contextmanager
def atomic_dir(out: str | os.PathLike, overwrite: bool = False, kind: str = "split",
               inputs: Mapping[str, str | os.PathLike | None] | None = None) -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``out``, on failure it is removed.

    Parameters
    ----------
    out : path
        The output folder (checked and locked by :func:`check_out_dir`).
    overwrite : bool
        Replace an existing hetbench output of ``kind`` (checked again here, as by :func:`check_out_dir`).
    kind, inputs
        As for :func:`check_out_dir`.

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
    check_out_dir(out, overwrite, kind, inputs)
    target = absolute_path(out)
    try:
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:10]}"
        try:
            tmp.mkdir()
            _mark(tmp)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise HetbenchError(f"cannot write `out` '{out}': {exc.strerror or exc}") from None
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
                os.replace(trash, target)  # put the old output back, as it was
                (target / PID_FILE).unlink(missing_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
    finally:
        release_lock(target)


@contextmanager
def atomic_file(path: str | os.PathLike, tmp: Path | None = None, fsync: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of ``path`` to write; when the block ends without an error it is renamed
    onto ``path`` (one ``os.replace``: a reader sees the old file or the whole new one), otherwise removed,
    leaving ``path`` as it was.

    Parameters
    ----------
    path : path
        The file to write; its folder must exist.
    tmp : Path, optional
        The temporary file (default ``.<name>.tmp-<10 hex>`` beside ``path``); a fixed name lets a later
        run remove what a killed write left (a checkpoint's ``.<name>.partial``).
    fsync : bool
        Flush the temporary file to the disk before the rename (a checkpoint that must survive a power cut).

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.atomic import atomic_file
    >>> with atomic_file("atomic_file_example.txt") as tmp:
    ...     _ = tmp.write_text("whole")
    >>> Path("atomic_file_example.txt").read_text(), tmp.exists()
    ('whole', False)
    >>> try:
    ...     with atomic_file("atomic_file_example.txt") as tmp:
    ...         _ = tmp.write_text("half")
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> Path("atomic_file_example.txt").read_text(), tmp.exists()
    ('whole', False)
    """
    target = Path(path)
    tmp = tmp if tmp is not None else target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:10]}"
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through :func:`atomic_file`.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.atomic import write_atomic
    >>> write_atomic("write_atomic_example.json", "{}\\n"); Path("write_atomic_example.json").read_text()
    '{}\\n'
    """
    with atomic_file(path) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
