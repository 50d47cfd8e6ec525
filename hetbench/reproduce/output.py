"""The output folder of ``hetbench reproduce``: reports written atomically beside a run store that grows.

``--out`` holds ``claims.json``, ``claims.md``, ``claims.html``, ``plots/`` and, unless ``--store`` names
another folder, the run store ``runs/`` (:mod:`hetbench.reproduce.store`). The store is written as runs
finish, so it must outlive an interrupted command: the folder is made at the start (checked and locked
first), the store fills in place, and the reports are built in a scratch folder inside it and moved into
place at the end, ``claims.json`` last (:func:`publish_reports`). A folder whose store exists and whose
``claims.json`` does not is an interrupted run: the same command continues it without ``--overwrite``
(:func:`interrupted`). ``--overwrite`` replaces a finished output's reports and keeps its store, whose runs
are reused.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from hetbench.reproduce.output import interrupted
>>> out = Path(tempfile.mkdtemp()) / "claims"
>>> interrupted(out)
False
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Callable

from hetbench.errors import HetbenchError
from hetbench.reproduce.store import MARKER

#: the report files, moved into ``--out`` in this order (``claims.json`` last: it marks a finished output)
REPORTS = ("plots", "claims.md", "claims.html", "claims.json")
#: the file that marks an output being written (removed once its reports are in place)
IN_PROGRESS = ".hetbench-reproduce"
#: name prefixes of the scratch folders inside ``--out`` (each marked with its process: a dead one's is removed)
SCRATCH = (".work-", ".reports-")


def interrupted(out: str | os.PathLike) -> bool:
    """Whether ``out`` is a reproduce output the same command continues without ``--overwrite``: one that
    was interrupted (its in-progress mark or run store is there, its ``claims.json`` is not), or one whose
    ``claims.json`` has a claim still missing runs (``--budget`` ran out).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = (out / "claims.json").write_text(json.dumps({"claims": [{"runs": {"done": 3, "needed": 10}}]}))
    >>> interrupted(out)
    True
    """
    out = Path(out)
    if not (out / "claims.json").exists():
        return (out / IN_PROGRESS).is_file() or (out / "runs" / MARKER).is_file()
    try:
        doc = json.loads((out / "claims.json").read_text())
        return any(c.get("runs", {}).get("done", 0) < c.get("runs", {}).get("needed", 0) for c in doc["claims"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def begin(out: Path) -> Path:
    """Make ``out`` (locked by the caller), mark it as being written, remove the scratch folders of dead
    processes, and return a new scratch folder for this process's work."""
    from hetbench.tempdirs import mark, remove_stale

    out.mkdir(parents=True, exist_ok=True)
    if not (out / "claims.json").exists():
        (out / IN_PROGRESS).write_text('{"format": "hetbench-claims-in-progress/1"}\n')
    for prefix in SCRATCH:
        remove_stale(out, prefix)
    work = out / f"{SCRATCH[0]}{uuid.uuid4().hex[:10]}"
    work.mkdir()
    mark(work)
    return work


def check_store_dir(store: str | os.PathLike | None, out: str | os.PathLike) -> None:
    """Refuse, before anything is written, a ``--store`` that exists and is not a run store, or that is the
    output folder itself or inside its reports (one line, HetbenchError)."""
    if store is None:
        return
    from hetbench.reproduce.store import RunStore

    path, target = Path(store).resolve(), Path(out).resolve()
    if path == target or (target in path.parents and path != target / "runs"):
        raise HetbenchError(f"`store` '{store}' is the `out` folder or inside it, where reports are replaced; give "
                            "a folder outside it (or leave `store` out: the store is then `out`'s runs/)")
    if path.exists() and path.is_dir() and any(path.iterdir()) or path.is_file():
        RunStore.check(path)


def publish_reports(out: Path, write: Callable[[Path], None]) -> None:
    """``write(folder)`` into a scratch folder inside ``out``, then move each report into ``out``
    (:data:`REPORTS`, ``claims.json`` last), replacing the old ones; the scratch folder is always removed.

    Raises
    ------
    HetbenchError
        When a report cannot be moved into place (one line).
    """
    from hetbench.tempdirs import mark

    scratch = out / f"{SCRATCH[1]}{uuid.uuid4().hex[:10]}"
    scratch.mkdir()
    mark(scratch)
    try:
        write(scratch)
        for name in REPORTS:
            new, old = scratch / name, out / name
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            elif name == "plots" and old.exists():
                old.unlink()
            if new.exists():
                os.replace(new, old)
        (out / IN_PROGRESS).unlink(missing_ok=True)
    except OSError as exc:
        raise HetbenchError(f"cannot write the reports into `out` '{out}': {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
