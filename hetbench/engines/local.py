"""The local engine: a pool of worker processes on this machine (``--engine local``, the default).

One worker runs the jobs in this process. More are started by a forkserver that has imported the
jobs' modules once (``preload``: the ISP's colour science, rawpy and OpenCV take seconds to import),
so every worker starts warm; never by plain fork (a parent that has run LibRaw's OpenMP or OpenCV
holds thread-pool locks that deadlock a forked child); by spawn where there is no forkserver.
Results come back in job order (``imap``, one job at a time per worker).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from hetbench.engines.base import Engine


def worker_context(preload: Sequence[str] = ()):
    """The multiprocessing context of the pool: a forkserver that preloads ``preload``, else spawn.

    Examples
    --------
    >>> from hetbench.engines.local import worker_context
    >>> worker_context(["json"]).get_start_method() in ("forkserver", "spawn")
    True
    """
    import multiprocessing as mp

    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))
    return ctx


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
            self._pool = worker_context(self.preload).Pool(self.workers, initializer=self.initializer)
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
