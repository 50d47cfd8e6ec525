"""The local engine: a pool of worker processes on this machine (``--engine local``, the default).

One worker runs the jobs in this process. More are started by a forkserver that has imported the
jobs' modules once (``preload``: the ISP's colour science, rawpy and OpenCV take seconds to import),
so every worker starts warm; never by plain fork (a parent that has run LibRaw's OpenMP or OpenCV
holds thread-pool locks that deadlock a forked child); by spawn where there is no forkserver.
Results come back in job order (``imap``, one job at a time per worker).
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from hetbench.engines.base import Engine
from hetbench.process_pool import worker_context


def _quiet_worker(initializer: Callable[[], None] | None = None) -> None:
    """Set up a worker: Ctrl-C is the parent's to handle (it stops the pool and prints one line; each
    worker printed its own KeyboardInterrupt traceback, 42 lines for two workers), then ``initializer``.

    Examples
    --------
    >>> import signal
    >>> saved = signal.getsignal(signal.SIGINT)
    >>> _quiet_worker(); signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    True
    >>> _ = signal.signal(signal.SIGINT, saved)
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer()


def _start_forkserver_deaf(ctx) -> None:
    """Start ``ctx``'s forkserver (if it is one, and not running yet) with Ctrl-C ignored: it inherits that, so a
    Ctrl-C while it imports ``preload`` (seconds) no longer prints its 40-line traceback; this process stays
    interruptible, the pool's workers ignore Ctrl-C (:func:`_quiet_worker`) and the parent stops them."""
    import threading

    if ctx.get_start_method() != "forkserver" or threading.current_thread() is not threading.main_thread():
        return
    from multiprocessing import forkserver

    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, saved)


@contextmanager
def _signals_held() -> Iterator[list[int]]:
    """Inside, Ctrl-C and SIGTERM are recorded, not acted on (the list yielded gets them); the handlers are put
    back on exit, and the caller raises what was held once it can stop cleanly."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    held: list[int] = []
    saved = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield held
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


class LocalEngine(Engine):
    """``num_proc`` worker processes here (no more than ``num_jobs``; 1 runs in this process).

    Parameters
    ----------
    num_proc : int
        Worker processes (the caller caps it at the machine's cores).
    num_jobs : int
        How many jobs will be mapped.
    preload : sequence of str
        Modules the forkserver imports once for every worker.
    initializer : callable, optional
        Run once in every worker process before its first job.
    quiet : bool
        Unused (the local engine prints nothing); kept for a uniform signature.

    Examples
    --------
    >>> from hetbench.engines.local import LocalEngine
    >>> with LocalEngine(1, 2) as engine:
    ...     list(engine.map(str, [1, 2]))
    ['1', '2']
    """

    def __init__(
        self, num_proc: int, num_jobs: int, preload: Sequence[str] = (), initializer: Callable[[], None] | None = None,
        quiet: bool = False,
    ) -> None:
        self.workers = max(1, min(int(num_proc), int(num_jobs)))
        self.preload = tuple(preload)
        self.initializer = initializer
        self._pool = None

    def __enter__(self) -> "LocalEngine":
        if self.workers > 1:
            ctx = worker_context(self.preload)
            _start_forkserver_deaf(ctx)
            with _signals_held() as held:  # a pool half made left workers that printed tracebacks
                self._pool = ctx.Pool(self.workers, initializer=_quiet_worker, initargs=(self.initializer,))
            if held:
                self.__exit__(None, None, None)  # every worker stopped before the signal acts
                signal.raise_signal(held[0])
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None:
            self._pool.__exit__(*exc)  # terminates the workers, as ``with Pool()`` does
            self._pool = None

    def map(self, fn, items, *, files=None, with_files=None, on_failure=None) -> Iterator[Any]:
        """``fn(item)`` for every item, in order (the local workers share this file system, so
        ``files`` and ``with_files`` are not needed; a worker that dies fails the build, as before)."""
        if self._pool is None or len(items) <= 1:
            for item in items:
                yield fn(item)
        else:
            yield from self._pool.imap(fn, items, chunksize=1)
