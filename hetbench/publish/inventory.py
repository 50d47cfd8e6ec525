"""The manifest's ``files``: the sha256 of every report file and plot a build publishes.

Kept apart from :mod:`hetbench.publish.published_files` (which checks them and needs the report
code) so that ``hetbench report``, which rewrites the report, can record the new digests.

Examples
--------
>>> import pathlib
>>> d = pathlib.Path("inventory-doc")
>>> (d / "report").mkdir(parents=True)
>>> _ = (d / "report.json").write_text("{}")
>>> sorted(file_inventory(d))
['report.json']
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: folders and files of a build whose every file the manifest's ``files`` digests
INVENTORIED = ("report.json", "report", "plots")


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def file_inventory(folder: str | Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under :data:`INVENTORIED` (the manifest's ``files``)."""
    folder = Path(folder)
    out = {}
    for name in INVENTORIED:
        path = folder / name
        paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
        for p in paths:
            out[p.relative_to(folder).as_posix()] = file_sha256(p)
    return dict(sorted(out.items()))


__all__ = ["INVENTORIED", "file_inventory", "file_sha256"]
