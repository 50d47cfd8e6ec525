"""Entry point: ``hetbench <group> <name> [options]``.

Bad input of any kind (a :class:`HetbenchError`, or a click usage error) is one line on stderr and
exit code 2; never a traceback. Ctrl-C (exit 130) and SIGTERM (exit 143) take the same path: the
command's temporary folders are removed, its output locks released, and one line is printed.
"""

from __future__ import annotations

import errno
import gc
import os
import signal
import sys

import click

from hetbench.version import __version__
from hetbench.errors import HetbenchError, Terminated
from hetbench.sentences import first_sentence


class Interrupted(Exception):
    """A command stopped by Ctrl-C or SIGTERM, after its cleanups ran."""

    def __init__(self, terminated: bool) -> None:
        super().__init__("terminated" if terminated else "interrupted")
        self.exit_code = 143 if terminated else 130


_Terminated = Terminated  # SIGTERM, raised where the program is, so every cleanup runs as for Ctrl-C


#: command name -> (module, attribute): a command's module is imported when the command is used, so
#: ``hetbench partition ...`` does not import the trainer, the leaderboard or the claim runners
COMMANDS = {
    "partition": ("hetbench.cli.partition", "partition"),
    "build": ("hetbench.cli.build", "build"),
    "report": ("hetbench.cli.tools", "report"),
    "verify": ("hetbench.cli.tools", "verify"),
    "publish": ("hetbench.cli.tools", "publish"),
    "compare-clusterings": ("hetbench.cli.tools", "compare_clusterings"),
    "train": ("hetbench.cli.train", "train"),
    "leaderboard": ("hetbench.cli.leaderboard", "leaderboard"),
    "flower-app": ("hetbench.cli.flower_app", "flower_app"),
    "reproduce": ("hetbench.cli.reproduce", "reproduce"),
    "export": ("hetbench.cli.tools", "export"),
    "list": ("hetbench.cli.list_cmd", "list_cmd"),
}


#: the commands whose inputs (:data:`hetbench.outputs.INPUT_OPTIONS`) ``--out`` may not equal, lie inside
#: or contain (``leaderboard`` and ``export`` check their inputs themselves: their ``--split`` is no path)
WRITERS = ("partition", "build", "train", "flower-app", "reproduce")


def _declare_inputs(command: click.Command) -> None:
    """Wrap the callback of ``command`` (of every command under a group) so that the paths its options read
    are declared inputs while it runs: no output check then accepts an ``--out`` that overlaps one."""
    for sub in getattr(command, "commands", {}).values():
        _declare_inputs(sub)
    callback = command.callback
    if callback is None or getattr(callback, "_declares_inputs", False):
        return

    import functools

    @functools.wraps(callback)
    def declaring(*args, **kwargs):
        from hetbench.outputs import declared_inputs, input_paths

        with declared_inputs(input_paths(click.get_current_context().params)):
            return callback(*args, **kwargs)

    declaring._declares_inputs = True  # type: ignore[attr-defined]
    command.callback = declaring


#: the options whose value is a path a command writes (checked by :func:`hetbench.outnames.check_out_name`)
OUT_OPTIONS = ("out", "results")


def _check_outputs(command: click.Command) -> None:
    """Wrap the callback of ``command`` (of every command under a group) so that, before it runs, every
    ``--out`` it was given is a name the file system can hold (:func:`hetbench.outnames.check_out_name`:
    ``--out ''`` no longer means the default folder) and every ``--name`` one the card can hold
    (:func:`hetbench.outnames.check_split_name`)."""
    for sub in getattr(command, "commands", {}).values():
        _check_outputs(sub)
    callback = command.callback
    if callback is None or getattr(callback, "_checks_outputs", False):
        return

    import functools

    @functools.wraps(callback)
    def checking(*args, **kwargs):
        from hetbench.outnames import check_out_name, check_split_name

        ctx = click.get_current_context()
        try:
            for name in OUT_OPTIONS:
                if isinstance(ctx.params.get(name), (str, os.PathLike)):
                    check_out_name(ctx.params[name], f"`{name}`")
            if isinstance(ctx.params.get("name"), str):
                check_split_name(ctx.params["name"])
            return callback(*args, **kwargs)
        except HetbenchError as exc:
            exc.command = ctx.command  # whose flags name its parameters (hetbench.cli.flags)
            raise

    checking._checks_outputs = True  # type: ignore[attr-defined]
    command.callback = checking


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise Interrupted(isinstance(exc, _Terminated)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            import importlib

            module, attr = COMMANDS[name]
            command = getattr(importlib.import_module(module), attr)
            _whole_short_help(command)
            _check_outputs(command)
            if name in WRITERS:
                _declare_inputs(command)
            self.add_command(command, name)
        return self.commands.get(name)


_MAIN_PID = os.getpid()


def _on_sigterm(signum, frame) -> None:
    if os.getpid() != _MAIN_PID:  # a forked worker: die as SIGTERM would; the parent cleans up
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
    raise _Terminated()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="hetbench")
def cli() -> None:
    """hetbench: build, measure, publish and verify federated splits with real heterogeneity.

    \b
    Examples:
      hetbench partition dirichlet --alpha 0.1 --clients 20
      hetbench report hetbench_splits/digits-dirichlet-client-a0.1-n20-s0
      hetbench verify hetbench_splits/digits-dirichlet-client-a0.1-n20-s0
    """


def _whole_short_help(command: click.Command) -> None:
    """Every command of the tree gets a short help that is a whole sentence (its own, or the help's first)."""
    if not command.short_help:
        command.short_help = first_sentence(command.help)
    for sub in getattr(command, "commands", {}).values():
        _whole_short_help(sub)


def _register() -> None:
    """Import and register every command now (what walks the whole tree needs); the CLI itself
    imports a command's module only when it is used (:data:`COMMANDS`)."""
    for name in COMMANDS:
        cli.get_command(click.Context(cli), name)
    _whole_short_help(cli)


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    """``hetbench: warning: <message>``: what the CLI prints for a warning (no file, line or source)."""
    return f"hetbench: warning: {str(message).splitlines()[0] if str(message) else category.__name__}\n"


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: runs the click group and turns bad input into exit code 2."""
    global _MAIN_PID
    # Arrow's memory through the system allocator: what a step frees goes back to the OS (its default
    # mimalloc keeps it, about 40 MB more at the peak of a million-row partition); set before
    # pyarrow allocates, overridable from the environment
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    import warnings

    from hetbench.out_lock import release_all

    warnings.formatwarning = _one_line_warning  # a warning is one line, like an error

    _MAIN_PID = os.getpid()
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        _run(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # no interruption while releasing
        release_all()
        _join_background()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


#: how long the CLI waits, at its end, for hetbench's own background threads (a report's plots being drawn)
BACKGROUND_JOIN_S = 10.0


def _join_background(timeout: float = BACKGROUND_JOIN_S) -> None:
    """Wait (at most ``timeout`` seconds in all) for hetbench's daemon threads (named ``hetbench-...``) that
    a failed or interrupted command left running: killed at the interpreter's exit inside C++ code (matplotlib
    drawing the report's plots while a full disk failed the shards), one aborted the process with
    ``terminate called without an active exception`` and exit code 134 after the one-line error."""
    import threading
    import time

    end = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.daemon and thread.name.startswith("hetbench-") and thread is not threading.current_thread():
            thread.join(max(0.0, end - time.monotonic()))


def _run(argv: list[str] | None) -> None:
    try:
        code = cli.main(args=argv, prog_name="hetbench", standalone_mode=False)
    except Interrupted as exc:
        click.echo(f"hetbench: {exc}", err=True)
        sys.exit(exc.exit_code)
    except HetbenchError as exc:
        from hetbench.cli.flags import cli_message

        click.echo(f"hetbench: error: {_one_line(cli_message(exc, getattr(exc, 'command', None)))}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:
        problem = environment_problem(exc)
        if problem is None:
            raise
        click.echo(f"hetbench: error: {problem}", err=True)
        sys.exit(2)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0)
    except click.ClickException as exc:
        click.echo(f"hetbench: error: {exc.format_message()}".replace("\n", " "), err=True)
        sys.exit(2)
    except click.exceptions.Abort as exc:
        terminated = isinstance(exc.__cause__, _Terminated)
        click.echo(f"hetbench: {'terminated' if terminated else 'aborted'}", err=True)
        sys.exit(143 if terminated else 130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _one_line(text: str) -> str:
    """``text`` on one line: line breaks (a quoted ``--out`` or value may hold some) shown as ``\\n``."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


#: errno values that say the machine cannot hold the output (not a bug of hetbench): one line, exit code 2
ENVIRONMENT_ERRNOS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                      errno.EROFS: "the file system is read-only", errno.EFBIG: "a file is too large for the file system",
                      errno.ENAMETOOLONG: "a file name is too long for the file system"}


def environment_problem(exc: BaseException) -> str | None:
    """The one line for an error the machine caused (a full or read-only disk, a name too long), found in
    ``exc`` or the exceptions it was raised from; None for any other error.

    Parameters
    ----------
    exc : BaseException
        What a command raised.

    Returns
    -------
    str or None
        ``cannot write '<file>': <what happened> (<strerror>)``, or None.

    Examples
    --------
    >>> import errno
    >>> environment_problem(OSError(errno.ENOSPC, "No space left on device", "out/data/train.parquet"))
    "cannot write 'out/data/train.parquet': the disk is full (No space left on device)"
    >>> environment_problem(OSError("[Errno 30] Read-only file system"))
    'cannot write: the file system is read-only ([Errno 30] Read-only file system)'
    >>> environment_problem(OSError(errno.ENOENT, "No such file or directory")) is None
    True
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError):
            code = exc.errno
            if code not in ENVIRONMENT_ERRNOS:  # pyarrow and others put the errno in the message only
                code = next((c for c in ENVIRONMENT_ERRNOS if f"[Errno {c}]" in str(exc)
                             or (os.strerror(c) in str(exc))), None)
            if code is not None:
                where = f" '{_one_line(os.fsdecode(exc.filename))}'" if getattr(exc, "filename", None) else ""
                why = _one_line(exc.strerror or str(exc))
                return f"cannot write{where}: {ENVIRONMENT_ERRNOS[code]} ({why})"
        exc = exc.__cause__ or exc.__context__
    return None


def console_main() -> None:
    """The ``hetbench`` console script: :func:`main` in a process that ends right after it.

    After the command has finished (outputs renamed into place, locks released, streams flushed by the
    normal exit), the garbage collector is frozen: the interpreter's teardown then skips the cyclic
    collections over every object torch, datasets and pyarrow created, which took about half a second
    at each exit of a command that had imported torch. Finalizers, ``atexit`` handlers and buffered
    files still run and close as usual. In-process callers (tests, notebooks) use :func:`main`, which
    leaves the collector alone.
    """
    try:
        main()
    finally:
        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    console_main()
