"""Atomic output folders: build in a hidden temporary sibling, then rename into place.

A failed or interrupted build never leaves a half-written ``--out``; replacing an existing folder
needs ``overwrite=True``.
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from hetbench.errors import HetbenchError


def check_out_dir(out: str | os.PathLike, overwrite: bool) -> Path:
    """Refuse an existing ``out`` unless ``overwrite``; refuse a file in its place always."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise HetbenchError(f"--out '{path}' exists and is not a folder")
        if not overwrite:
            raise HetbenchError(f"--out '{path}' already exists; pass --overwrite to replace it")
    return path


@contextmanager
def atomic_dir(out: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``out``, on failure it is removed."""
    out = check_out_dir(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:10]}"
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    trash = None
    if out.exists():
        trash = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:10]}"
        os.replace(out, trash)
    os.replace(tmp, out)
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)
