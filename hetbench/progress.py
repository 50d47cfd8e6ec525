"""Progress bars (rich) with the elapsed time and an ETA, silent with ``quiet=True``."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class _Silent:
    def update(self, *_args, **_kwargs) -> None:
        return None


@contextmanager
def progress_bar(description: str, total: int | None, quiet: bool = False) -> Iterator:
    """Yield an object with ``update(advance=k)``; a rich bar on stderr unless ``quiet``."""
    if quiet:
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as prog:
        task = prog.add_task(description, total=total)

        class _Bar:
            def update(self, advance: int = 1) -> None:
                prog.update(task, advance=advance)

        yield _Bar()
