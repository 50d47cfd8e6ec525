"""The one place the command line maps the library's parameter names to its flags.

Library errors name parameters in Python terms (``hetbench.errors``: `` `num_clients` must be at least 1``);
a command prints them with the flag that sets each one (``--clients must be at least 1``). A command's own
options come first (click knows every option's Python name and flags), then the few library names whose flag
is not the name with dashes (:data:`RENAMED`), then the name with dashes, which is click's default flag for
an option of that name.
"""

from __future__ import annotations

from typing import Callable

import click

#: library parameter -> the flag that sets it, where the flag is not ``--`` + the name with dashes
RENAMED = {
    "num_clients": "--clients",
    "source": "--dataset",
    "classes_per_client": "--classes",
    "kmeans_method": "--kmeans",
    "references": "--reference",
}


def command_flags(command: click.Command | None) -> dict[str, str]:
    """Python name -> the first long flag of every option ``command`` declares.

    Examples
    --------
    >>> import click
    >>> @click.command()
    ... @click.option("--classes", "-k", "classes_per_client", type=int)
    ... def cmd(classes_per_client): ...
    >>> command_flags(cmd)
    {'classes_per_client': '--classes'}
    """
    out: dict[str, str] = {}
    for param in getattr(command, "params", ()):
        longs = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
        if isinstance(param, click.Option) and longs and param.name:
            out[param.name] = longs[0]
    return out


def flag_namer(command: click.Command | None = None) -> Callable[[str], str]:
    """``name -> flag`` for the messages of ``command`` (None: a command not known, e.g. while parsing).

    Examples
    --------
    >>> namer = flag_namer()
    >>> namer("num_clients"), namer("test_fraction")
    ('--clients', '--test-fraction')
    """
    own = command_flags(command)

    def flag(name: str) -> str:
        return own.get(name) or RENAMED.get(name) or "--" + name.replace("_", "-")

    return flag


def cli_message(exc: BaseException, command: click.Command | None = None) -> str:
    """The message of ``exc`` as the command line prints it: a :class:`~hetbench.errors.HetbenchError`'s
    parameters named by their flags, any other exception as it reads."""
    naming = getattr(exc, "naming", None)
    return naming(flag_namer(command)) if callable(naming) else str(exc)
