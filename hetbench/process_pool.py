"""The start method of every process pool hetbench runs: the ISP's render workers (:mod:`hetbench.isp.jobs`),
the local build engine's (:mod:`hetbench.engines.local`) and the trainer's decode workers
(:mod:`hetbench.train.decode`).

Never plain fork: a parent that has run LibRaw (OpenMP), OpenCV or torch holds thread-pool locks that
deadlock a forked child. A forkserver where the platform has one (Linux), which imports the modules the
workers need once, so that each worker starts warm; spawn elsewhere.
"""

from __future__ import annotations

from typing import Sequence


def worker_context(preload: Sequence[str] | None = ()):
    """The multiprocessing context of a pool: a forkserver that preloads ``preload`` (None: the preload
    as it is), else spawn.

    The forkserver is one per process and starts with the first pool: the preload set when it starts is
    the one it keeps.

    Examples
    --------
    >>> from hetbench.process_pool import worker_context
    >>> worker_context(["json"]).get_start_method() in ("forkserver", "spawn")
    True
    """
    import multiprocessing as mp

    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    if preload is not None:
        ctx.set_forkserver_preload(list(preload))
    return ctx
