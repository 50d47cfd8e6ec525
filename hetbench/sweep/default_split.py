"""The split ``hetbench train`` uses without ``--split``: the label-Dirichlet split of the built-in digits
that ``hetbench partition dirichlet`` writes by default, built on first use through
:func:`hetbench.pipeline.make_split`."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from hetbench.naming import default_out_dir

DEFAULT_SOURCE = "builtin:digits"
DEFAULT_TAG = "dirichlet-client-a0.5-n10"
DEFAULT_SPLIT = default_out_dir(DEFAULT_SOURCE, DEFAULT_TAG, 0)
"""Where ``hetbench partition dirichlet`` puts its default split (built-in digits, client scheme,
alpha 0.5, 10 clients, seed 0), relative to the working directory."""


@contextmanager
def _one_builder(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (the folder itself, so no file is left behind): a second
    process that wants the default split waits here while the first builds it, then reuses it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no locking
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def default_split(quiet: bool = False) -> Path:
    """The embedded default split, :data:`DEFAULT_SPLIT`, built (once) if it is missing.

    Parameters
    ----------
    quiet : bool
        No progress bars and no note on stderr when it is built.

    Returns
    -------
    Path
        The split folder (relative to the working directory).

    Notes
    -----
    Processes that start together in a fresh folder (parallel test workers, two ``hetbench train``
    runs) take turns: the first builds the split, the others wait and reuse it.

    Examples
    --------
    >>> from hetbench.sweep import default_split
    >>> path = default_split(quiet=True)
    >>> path.as_posix(), (path / "hetbench.json").is_file()
    ('hetbench_splits/digits-dirichlet-client-a0.5-n10-s0', True)
    """
    from hetbench.contract import MANIFEST_NAME

    if (DEFAULT_SPLIT / MANIFEST_NAME).is_file():
        return DEFAULT_SPLIT
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    with _one_builder(DEFAULT_SPLIT.parent):
        if (DEFAULT_SPLIT / MANIFEST_NAME).is_file():
            return DEFAULT_SPLIT
        partitioner = DirichletPartitioner(10, 0.5, "client", None, 0)
        make_split(DEFAULT_SOURCE, partitioner, DEFAULT_SPLIT, seed=0, test_fraction=0.2, quiet=quiet)
    if not quiet:
        print(f"no --split given: built the embedded default {DEFAULT_SPLIT}", file=sys.stderr)
    return DEFAULT_SPLIT
