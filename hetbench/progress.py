"""Progress bars (rich, on stderr) with the elapsed time, an ETA and a status text; silent when quiet.

A bar reads ``description  ━━━━━━━━  [unit] done/total  status  elapsed  eta H:MM:SS``, e.g.::

    fedavg s0 ━━━━━━━━━━━━━━━━ round 12/50  loss 0.412  acc 81.3%  0:00:06  eta 0:00:20

``quiet=True`` shows nothing; ``quiet=None`` follows the nearest :func:`show_progress` block (shown
inside ``show_progress(True)``, silent outside any), so a library step deep in a call (an embedder, a
K-means fit) shows its bar when the command that runs it does, without a ``quiet`` argument threaded
through every layer in between. A bar opened while another is open is a second line of the same
display (removed when it closes). On a terminal the display updates in place; written to a file or a
pipe (nohup, SLURM, CI), a bar that has run for :data:`LOG_AFTER` seconds prints a plain progress line
whenever another tenth of its steps is done or :data:`LOG_EVERY` seconds have passed (step, count, share,
rate, elapsed, ETA), and each top-level bar its final line once. Bars never touch stdout or an output file.

This module imports nothing of hetbench (it is infrastructure) and imports rich only when a bar shows.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Mapping

_SHOWN: ContextVar[bool] = ContextVar("hetbench_progress_shown", default=False)
_ACTIVE: list[Any] = []  # the open rich Progress (at most one; nested bars are tasks of it)
BAR_WIDTH = 24  # characters at most; narrower on a terminal under 104 columns, so the texts keep their room
LOG_WIDTH = 160  # the line width when stderr is not a terminal
LOG_EVERY = 30.0  # seconds between progress lines when stderr is not a terminal (and at every tenth of the steps)
LOG_AFTER = 5.0  # a step shorter than this prints no progress line (its final line says it all)


@contextmanager
def show_progress(show: bool = True) -> Iterator[None]:
    """Within the block, bars opened with ``quiet=None`` are shown (``show=True``) or not.

    Examples
    --------
    >>> from hetbench.progress import is_quiet, show_progress
    >>> is_quiet(None), is_quiet(False)
    (True, False)
    >>> with show_progress():
    ...     is_quiet(None), is_quiet(True)
    (False, True)
    """
    token = _SHOWN.set(bool(show))
    try:
        yield
    finally:
        _SHOWN.reset(token)


def is_quiet(quiet: bool | None) -> bool:
    """``quiet`` itself, or for None whether the enclosing :func:`show_progress` hides bars (the default)."""
    return (not _SHOWN.get()) if quiet is None else bool(quiet)


def format_duration(seconds: float | None) -> str:
    """``H:MM:SS`` (rounded up to the second), ``-:--:--`` when unknown.

    Examples
    --------
    >>> from hetbench.progress import format_duration
    >>> format_duration(20.2), format_duration(3725), format_duration(None)
    ('0:00:21', '1:02:05', '-:--:--')
    """
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-:--:--"
    s = int(math.ceil(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def eta_seconds(total: float | None, completed: float, elapsed: float | None,
                speed: float | None = None) -> float | None:
    """Seconds left: the steps left over ``speed`` (steps per second, recent), else over the average speed so far.

    Parameters
    ----------
    total : float or None
        Steps in all; None (unknown) gives None.
    completed : float
        Steps done.
    elapsed : float or None
        Seconds since the bar started.
    speed : float, optional
        Recent steps per second (rich's windowed estimate); None falls back to ``completed / elapsed``,
        so a step slower than rich's window still gets an ETA.

    Examples
    --------
    >>> from hetbench.progress import eta_seconds
    >>> eta_seconds(50, 10, 20.0), eta_seconds(50, 10, 20.0, speed=1.0), eta_seconds(50, 0, 3.0)
    (80.0, 40.0, None)
    >>> eta_seconds(50, 50, 9.0), eta_seconds(None, 3, 9.0)
    (0.0, None)
    """
    if total is None:
        return None
    left = max(float(total) - float(completed), 0.0)
    if left == 0:
        return 0.0
    if speed is None or speed <= 0:
        if not completed or not elapsed:
            return None
        speed = completed / elapsed
    return left / speed


def train_status(latest: Mapping[str, Any]) -> str:
    """A training bar's status: the latest training loss and test accuracy (a percentage), those known.

    Parameters
    ----------
    latest : mapping
        ``train_loss`` (mean client loss of the last round) and ``accuracy`` (test accuracy, %, of the
        last evaluation); a missing or None value is left out.

    Examples
    --------
    >>> from hetbench.progress import train_status
    >>> train_status({"train_loss": 0.41234, "accuracy": 81.25})
    'loss 0.412  acc 81.2%'
    >>> train_status({"train_loss": 2.302}), train_status({})
    ('loss 2.302', '')
    """
    parts = []
    loss, acc = latest.get("train_loss"), latest.get("accuracy")
    if loss is not None:
        parts.append(f"loss {loss:.3g}" if abs(loss) >= 1000 else f"loss {loss:.3f}")
    if acc is not None:
        parts.append(f"acc {acc:.1f}%")
    return "  ".join(parts)


def count_text(completed: float, total: float | None, unit: str = "") -> str:
    """``[unit ]done/total`` with thousands separators; ``?`` for an unknown total.

    Examples
    --------
    >>> from hetbench.progress import count_text
    >>> count_text(12, 50, "round"), count_text(1200, 1797), count_text(3, None, "step")
    ('round 12/50', '1,200/1,797', 'step 3/?')
    """
    tot = "?" if total is None else f"{int(total):,}"
    text = f"{int(completed):,}/{tot}"
    return f"{unit} {text}" if unit else text


class _Silent:
    def update(self, *_args, **_kwargs) -> None:
        return None

    def status(self, _text: str) -> None:
        return None

    def finish(self) -> None:
        return None


def log_line(description: str, completed: float, total: float | None, unit: str, status: str, elapsed: float,
             speed: float | None) -> str:
    """The plain progress line of a bar written to a file or a pipe.

    Examples
    --------
    >>> from hetbench.progress import log_line
    >>> log_line("fedavg s0", 10, 50, "round", "loss 0.412", 20.0, None)
    'fedavg s0: round 10/50 (20%)  loss 0.412  elapsed 0:00:20  0.5/s  eta 0:01:20'
    """
    share = f" ({100 * completed / total:.0f}%)" if total else ""
    rate = speed if speed else (completed / elapsed if elapsed else None)
    parts = [f"{description}: {count_text(completed, total, unit)}{share}", status, f"elapsed {format_duration(elapsed)}",
             f"{rate:.3g}/s" if rate else "", f"eta {format_duration(eta_seconds(total, completed, elapsed, speed))}"]
    return "  ".join(p for p in parts if p)


class _Bar:
    """One task of a rich Progress: ``update(advance, status=...)``, ``status(text)``, ``finish()``."""

    def __init__(self, prog, task, description: str = "") -> None:
        import time

        self._prog, self._task, self._description = prog, task, description
        self._log = not prog.console.is_terminal  # a file or a pipe: plain lines at a steady pace
        self._last, self._tenth = time.monotonic(), 0

    def update(self, advance: int = 1, status: str | None = None) -> None:
        if status is None:
            self._prog.update(self._task, advance=advance)
        else:
            self._prog.update(self._task, advance=advance, status=status)
        if self._log:
            self._maybe_log()

    def _maybe_log(self) -> None:
        import time

        task = self._prog.tasks[self._prog.task_ids.index(self._task)]
        now = time.monotonic()
        tenth = int(10 * task.completed / task.total) if task.total else 0
        if (task.elapsed or 0.0) < LOG_AFTER:
            self._tenth = tenth  # a short step stays silent: the tenths it passes are not owed later
            return
        if (tenth > self._tenth and tenth < 10) or now - self._last >= LOG_EVERY:
            self._last, self._tenth = now, max(tenth, self._tenth)
            self._prog.console.print(log_line(self._description, task.completed, task.total, task.fields.get("unit", ""),
                                              task.fields.get("status", ""), task.elapsed or 0.0, task.speed),
                                     markup=False, highlight=False, soft_wrap=True)

    def status(self, text: str) -> None:
        self._prog.update(self._task, status=text)

    def finish(self) -> None:
        """End the bar full at the steps done (a fit that converged before its cap)."""
        done = self._prog.tasks[self._prog.task_ids.index(self._task)].completed
        self._prog.update(self._task, total=done)


def _progress():
    """A rich Progress with hetbench's columns, drawing on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn
    from rich.table import Column
    from rich.text import Text

    def fixed() -> Column:  # never wrapped: a narrow console shortens the texts instead
        return Column(no_wrap=True)

    def shrinks() -> Column:
        return Column(no_wrap=True, overflow="ellipsis")

    console = Console(stderr=True)
    if not console.is_terminal:  # a log file or a pipe gets each bar's final line, whole
        console = Console(stderr=True, width=LOG_WIDTH)
    gap = "" if console.width < 100 else " "  # with the table's own space: two spaces between the texts when room

    class Count(ProgressColumn):
        def render(self, task) -> Text:
            return Text(gap + count_text(task.completed, task.total, task.fields.get("unit", "")),
                        style="progress.download")

    class Status(ProgressColumn):
        def render(self, task) -> Text:
            status = task.fields.get("status", "")
            return Text(gap + status if status else "")

    class Elapsed(ProgressColumn):
        def render(self, task) -> Text:
            return Text(gap + format_duration(int(task.elapsed or 0)), style="progress.elapsed")

    class Eta(ProgressColumn):
        max_refresh = 0.5  # a steady ETA, not one that flickers with every step

        def render(self, task) -> Text:
            if task.finished:
                return Text("")
            left = eta_seconds(task.total, task.completed, task.elapsed, task.speed)
            return Text(f"{gap}eta {format_duration(left)}", style="progress.remaining")

    return Progress(
        TextColumn("[bold]{task.description}", table_column=shrinks()),
        BarColumn(bar_width=max(8, min(BAR_WIDTH, console.width - 80))),
        Count(table_column=fixed()),
        Status(table_column=shrinks()),
        Elapsed(table_column=fixed()),
        Eta(table_column=fixed()),
        console=console,
        transient=False,
    )


@contextmanager
def progress_bar(description: str, total: int | None, quiet: bool | None = None, unit: str = "",
                 status: str = "") -> Iterator:
    """A progress bar on stderr for the block; yields an object with ``update(advance=1, status=None)``.

    Parameters
    ----------
    description : str
        The bar's label (plain text, not rich markup).
    total : int or None
        Steps in all; None for unknown (no ETA).
    quiet : bool or None
        True: nothing is shown (the object's methods do nothing); None: as the enclosing
        :func:`show_progress` says (silent outside one).
    unit : str
        Named before the count (``round 12/50``).
    status : str
        Text after the count (``loss 0.412  acc 81.3%``), changed with ``update(status=...)`` or
        ``status(text)``.

    Examples
    --------
    >>> from hetbench.progress import progress_bar
    >>> with progress_bar("demo", 3, quiet=True) as bar:
    ...     bar.update(advance=1, status="loss 0.5")
    """
    if is_quiet(quiet):
        yield _Silent()
        return
    from rich.markup import escape

    if _ACTIVE:  # a bar inside a bar: a second line of the same display, gone when it closes
        prog = _ACTIVE[-1]
        task = prog.add_task(escape(description), total=total, unit=unit, status=status)
        try:
            yield _Bar(prog, task, description)
        finally:
            prog.remove_task(task)
        return
    prog = _progress()
    prog.start()
    _ACTIVE.append(prog)
    try:
        task = prog.add_task(escape(description), total=total, unit=unit, status=status)
        yield _Bar(prog, task, description)
    except BaseException:
        # a failed step leaves no bar behind (nor rich's closing newline on a log): the error is
        # the one line the user reads
        _ACTIVE.pop()
        prog.live.transient = True
        prog.live.stop()
        raise
    _ACTIVE.pop()
    prog.stop()
