"""Declared input roots hold: a file found under a folder the user named (``--raw-dir``, ``--data-dir``,
``--image-root``) is read only if, once every symbolic link is resolved, it is still inside that folder.

A link that stays inside the root is followed; one that leads out of it (to ``/etc``, a home folder, another
user's data) is never read: the builders skip that file, count it and list it in the report's ``skipped``
entries with :func:`outside_reason`, as they do an unreadable one, and the build goes on. A build folder's
own shards are held to the same rule: by :func:`hetbench.publish.manifest.safe_path` wherever hetbench
reads them by the manifest (verify, reports, a built folder as a source), and by :func:`check_no_links_leaving`
where ``datasets.load_dataset`` reads the folder (``hetbench train``, Flower, ``ClientPartitions.from_folder``):
a link leading out of a split folder is one line (exit 2), never read.
"""

from __future__ import annotations

import os
from pathlib import Path


def real_root(root: str | os.PathLike) -> Path:
    """``root`` with every symbolic link resolved (the folder itself may be a link: its target is the root).

    Parameters
    ----------
    root : path
        The folder the user named.

    Examples
    --------
    >>> from hetbench.roots import real_root
    >>> real_root(".") == real_root(real_root("."))
    True
    """
    return Path(os.path.realpath(os.path.expanduser(os.fspath(root))))


def inside_root(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """Whether ``path``, every symbolic link resolved, is ``root`` or lies under it (``root`` resolved too). A
    link loop or a dangling link resolves to where it points, so one pointing out is outside too.

    Parameters
    ----------
    path : path
        A file found under ``root`` (absolute, or relative to the working folder).
    root : path
        The declared folder.

    Examples
    --------
    >>> import os, pathlib
    >>> from hetbench.roots import inside_root
    >>> root = pathlib.Path("roots_example")
    >>> (root / "sub").mkdir(parents=True)
    >>> _ = (root / "sub" / "a.png").write_bytes(b"x")
    >>> os.symlink(os.path.abspath(root / "sub" / "a.png"), root / "in.png")
    >>> os.symlink("/etc/hostname", root / "out.png")
    >>> inside_root(root / "in.png", root), inside_root(root / "out.png", root), inside_root(root / "../x", root)
    (True, False, False)
    """
    real = Path(os.path.realpath(os.fspath(path)))
    return real.is_relative_to(real_root(root))


def links_leaving(folder: str | os.PathLike) -> list[str]:
    """Paths under ``folder`` (relative, ``/``-separated, sorted) that are symbolic links resolving outside it.
    Linked folders are not walked into (one leading out is itself listed; one staying inside is walked where it
    really is); ``.git`` is not walked.

    Parameters
    ----------
    folder : path
        A split folder.

    Examples
    --------
    >>> import os, pathlib
    >>> from hetbench.roots import links_leaving
    >>> split = pathlib.Path("links_example")
    >>> (split / "data").mkdir(parents=True)
    >>> _ = (split / "data" / "a.parquet").write_bytes(b"x")
    >>> os.symlink(os.path.abspath(split / "data" / "a.parquet"), split / "data" / "b.parquet")
    >>> os.symlink("/etc/hostname", split / "data" / "c.parquet")
    >>> links_leaving(split)
    ['data/c.parquet']
    """
    root = real_root(folder)
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):  # never follows a linked folder
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) and not inside_root(path, root):
                found.append(Path(os.path.relpath(path, folder)).as_posix())
    return sorted(found)


def check_no_links_leaving(folder: str | os.PathLike, what: str = "split") -> None:
    """A one-line :class:`~hetbench.errors.HetbenchError` when ``folder`` holds a symbolic link leading out of it
    (:func:`links_leaving`), before anything in it is read.

    Parameters
    ----------
    folder : path
        The folder about to be read.
    what : str
        What it is, for the message.

    Examples
    --------
    >>> from hetbench.roots import check_no_links_leaving
    >>> check_no_links_leaving(".")
    """
    from hetbench.errors import HetbenchError

    bad = links_leaving(folder)
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise HetbenchError(f"{what} '{folder}' holds a link leading outside it: '{bad[0]}'{more}; refusing to read it")


def outside_reason(flag: str) -> str:
    """The reason a file is skipped when it resolves outside the folder of ``flag``.

    Parameters
    ----------
    flag : str
        The option that names the folder (``--raw-dir``, ``--data-dir``).

    Examples
    --------
    >>> from hetbench.roots import outside_reason
    >>> outside_reason("--raw-dir")
    'a link leading outside --raw-dir (not read)'
    """
    return f"a link leading outside {flag} (not read)"


__all__ = ["check_no_links_leaving", "inside_root", "links_leaving", "outside_reason", "real_root"]
