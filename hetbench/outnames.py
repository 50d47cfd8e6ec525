"""What an ``--out`` and a ``--name`` may be, checked before any work: each refusal is one line, exit code 2.

* **--out** is not empty (``--out ''`` used to write the default folder, or the current one), holds no
  control character, and its last name fits the file system with room for the hidden siblings hetbench
  writes beside it (``.<name>.tmp-<10 hex>``, ``.<name>.lock``, ``.<name>.hetbench-export.json``): at most
  :data:`MAX_OUT_NAME_BYTES` bytes (every other name at most the file system's 255).
* A folder is **writable** (:func:`check_writable`) when a folder can be made in its nearest existing
  ancestor: ``/proc/x`` and a read-only file system are refused before training starts, not after.
* **--name** (the card's ``pretty_name``, the manifest's ``name``, the folder ``hetbench train`` writes
  results under) is 1 to :data:`MAX_NAME_CHARS` characters, without control characters or line breaks and
  without ``---`` (the card's front-matter fence).
* A split of more than :data:`MANY_CLASSES` classes gets one warning line (:func:`many_classes_warning`): the
  card and the manifest list every class name (a million classes made a 28.9 MB card and a 14 MB manifest; the report keeps them in report/classes.parquet).
"""

from __future__ import annotations

import os
import tempfile
import unicodedata
from pathlib import Path

from hetbench.errors import HetbenchError

#: the longest last name of an ``--out``, in bytes: 255 (the usual file-system limit) less room for the
#: hidden siblings (``.<name>.tmp-<10 hex>``: 16 more bytes, ``.<name>.hetbench-export.json``: 24)
MAX_OUT_NAME_BYTES = 200
#: the longest other name of a path, in bytes (``NAME_MAX`` of ext4, XFS, tmpfs, btrfs, APFS)
NAME_MAX = 255
#: the longest path, in bytes (``PATH_MAX`` of Linux, less room for what hetbench writes inside the folder)
MAX_PATH_BYTES = 3800
#: the longest ``--name``, in characters (it names the folder ``hetbench train`` writes results under)
MAX_NAME_CHARS = 200
#: above this many classes, partition and build print one warning line (the card and the manifest list them all)
MANY_CLASSES = 10_000


def _shown(text: str, width: int = 60) -> str:
    """``text`` for a one-line message: control characters escaped, the middle of a long one elided."""
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= width else f"{text[: width // 2]}...{text[-width // 2:]}"


def check_out_name(out: str | os.PathLike, option: str = "`out`") -> None:
    """Refuse an ``out`` that is empty, holds a control character or has a name the file system cannot hold.

    Parameters
    ----------
    out : path
        The folder or file a command writes.
    option : str
        How the message names it.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        One line saying what is wrong.

    Examples
    --------
    >>> check_out_name("hetbench_splits/digits-iid")
    >>> check_out_name("")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out is empty; name a folder or file (or leave out out for the default)
    >>> check_out_name("x" * 300)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' has a name of 300 bytes; at most 200 (the file system's 255, less room for the hidden files hetbench writes beside it)
    """
    text = os.fspath(out)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise HetbenchError(f"{option} is empty; name a folder or file (or leave {option} out for the default)")
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise HetbenchError(f"{option} '{_shown(text)}' holds a control character (a line break, a tab, ...); "
                            "choose a plain name")
    parts = Path(text).parts
    for i, part in enumerate(parts):
        size = len(os.fsencode(part))
        limit = MAX_OUT_NAME_BYTES if i == len(parts) - 1 else NAME_MAX
        if size > limit:
            why = ("the file system's 255, less room for the hidden files hetbench writes beside it"
                   if limit == MAX_OUT_NAME_BYTES else "the file system's limit")
            raise HetbenchError(f"{option} '{_shown(text)}' has a name of {size} bytes; at most {limit} ({why})")
    size = len(os.fsencode(os.path.abspath(text)))
    if size > MAX_PATH_BYTES:
        raise HetbenchError(f"{option} '{_shown(text)}' is a path of {size:,} bytes; at most {MAX_PATH_BYTES:,}")


def check_split_name(name: str, option: str = "`name`") -> None:
    """Refuse a data-set name that the card, the manifest or a results folder cannot hold as given.

    Parameters
    ----------
    name : str
        The ``--name`` of a split.
    option : str
        How the message names it.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        Empty, longer than :data:`MAX_NAME_CHARS`, a control character or line break, or ``---``.

    Examples
    --------
    >>> check_split_name('my "digits" split')
    >>> check_split_name("a\\nb")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: name 'a\\nb' holds a line break or control character; give a name on one line
    >>> check_split_name("---")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: name '---' holds '---' (the card's front-matter fence); choose another name
    """
    if not name.strip():
        raise HetbenchError(f"{option} is empty; give a name, or leave {option} out for the default")
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name):
        raise HetbenchError(f"{option} '{_shown(name)}' holds a line break or control character; give a name on one line")
    if "---" in name:
        raise HetbenchError(f"{option} '{_shown(name)}' holds '---' (the card's front-matter fence); choose another name")
    if len(name) > MAX_NAME_CHARS:
        raise HetbenchError(f"{option} '{_shown(name)}' has {len(name)} characters; at most {MAX_NAME_CHARS}")


def check_writable(out: str | os.PathLike, option: str = "`out`") -> None:
    """Refuse an ``out`` that cannot be written: a folder is made (and removed) in its nearest existing ancestor.

    Parameters
    ----------
    out : path
        A folder to write (it need not exist).
    option : str
        How the message names it.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        The nearest existing ancestor (or ``out`` itself) is not a folder, or no folder can be made there
        (``/proc``, a read-only file system, no permission).

    Examples
    --------
    >>> check_writable("results/new")
    >>> _ = open("notes.txt", "w").write("mine")
    >>> check_writable("notes.txt/results")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: cannot write out 'notes.txt/results': '.../notes.txt' is not a folder
    """
    check_out_name(out, option)
    path = Path(os.path.abspath(os.fspath(out)))
    base = next((p for p in (path, *path.parents) if os.path.lexists(p)), Path(path.anchor))
    if not base.is_dir():
        raise HetbenchError(f"cannot write {option} '{out}': '{base}' is not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".hetbench-probe-", dir=base))
    except OSError as exc:
        raise HetbenchError(f"cannot write {option} '{out}': '{base}' does not accept new folders "
                            f"({exc.strerror or exc})") from None


def many_classes_warning(num_classes: int, label_col: str | None = None) -> str | None:
    """The warning line for a split of more than :data:`MANY_CLASSES` classes (None for fewer).

    Parameters
    ----------
    num_classes : int
        Distinct labels of the table.
    label_col : str, optional
        The label column, named in the warning.

    Returns
    -------
    str or None

    Examples
    --------
    >>> many_classes_warning(10) is None
    True
    >>> many_classes_warning(1_000_000, "x")
    "1,000,000 distinct labels in column 'x' (more than 10,000): the card and the manifest list every class, so they will be large (tens of MB); check the label column"
    """
    if num_classes <= MANY_CLASSES:
        return None
    column = f" in column '{label_col}'" if label_col else ""
    size = "tens of MB" if num_classes >= 500_000 else "MBs"
    # report.json does not: above 1,000 classes its per-class lists are in report/classes.parquet
    return (f"{num_classes:,} distinct labels{column} (more than {MANY_CLASSES:,}): the card and the manifest list "
            f"every class, so they will be large ({size}); check the label column")
