"""Declared input roots hold: a file found under a folder the user named (``--raw-dir``, ``--data-dir``,
``--image-root``) is read only if, once every symbolic link is resolved, it is still inside that folder.

A link that stays inside the root is followed; one that leads out of it (to ``/etc``, a home folder, another
user's data) is never read: the builders skip that file, count it and list it in the report's ``skipped``
entries with :func:`outside_reason`, as they do an unreadable one, and the build goes on. A build folder's
own shards are held to the same rule by :func:`hetbench.publish.manifest.safe_path`.
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


__all__ = ["inside_root", "outside_reason", "real_root"]
