"""The channel from a simulated ServerApp back to ``hetbench train --engine flower``: a private folder of
numbered event files.

Flower runs the ServerApp of a simulation in its own process (``flwr-simulation``, started by the
SuperLink's SuperExec), so the round callback, the results document and the error of a run cannot be
handed over in memory. The ServerApp writes each as one pickle file, atomically (a temporary name renamed
into place: a reader never sees half a file), numbered in order: ``000001.round``, ..., then one
``.result`` or ``.error``. The parent reads the files as they appear (:class:`EventReader`) and calls the
progress bar and the ``--log`` sinks with exactly the round summaries ``--engine local`` gives them (pickle
keeps numpy scalars and tuples as they are), then takes the results document or raises the error. The
folder is created by the parent (``mkdtemp``, mode 0700) and read by it alone.

A session (:class:`hetbench.flower.simulation.FlowerSession`) also sends jobs the other way, the same way: the
parent writes ``000001.job``, ``000002.job``, ... (:func:`write_job`) into a second private folder, ending with
one ``.stop``; the ServerApp takes them in order (:func:`next_job`).
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path
from typing import Any, Iterator

from hetbench.atomic import write_atomic

KINDS = ("round", "result", "error")


class EventWriter:
    """The ServerApp's side: write events to ``folder`` in order.

    Parameters
    ----------
    folder : path
        The event folder the parent created.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> w = EventWriter(folder); w.write("round", (1, {"accuracy": 0.5})); w.write("result", {"final": {}})
    >>> [kind for kind, _ in EventReader(folder).new()]
    ['round', 'result']
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.count = 0

    def write(self, kind: str, payload: Any) -> None:
        """Write one event (``kind`` one of :data:`KINDS`) atomically."""
        assert kind in KINDS, kind
        self.count += 1
        write_atomic(self.folder / f"{self.count:06d}.{kind}", pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))

    def error(self, exc: BaseException) -> None:
        """Write ``exc`` as the run's error (its type kept where it pickles; otherwise a RuntimeError with its
        message)."""
        exc = exc.with_traceback(None)
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # an exception type that does not pickle: its message is what matters
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        exc.__cause__ = exc.__context__ = None
        self.write("error", exc)


class EventReader:
    """The parent's side: the events of ``folder`` not read yet, in order.

    Parameters
    ----------
    folder : path
        The event folder.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.next = 1

    def new(self) -> Iterator[tuple[str, Any]]:
        """Yield ``(kind, payload)`` of every event written since the last call, in order."""
        while True:
            found = [p for p in (self.folder / f"{self.next:06d}.{kind}" for kind in KINDS) if p.exists()]
            if not found:
                return
            self.next += 1
            yield found[0].suffix[1:], pickle.loads(found[0].read_bytes())


#: how long a session's ServerApp waits for the parent's next job before it ends the run (the parent writes
#: the next one as soon as it has written the last one's results)
JOB_WAIT_S = 3600.0


def write_job(folder: str | os.PathLike, index: int, payload: Any) -> None:
    """Write job ``index`` (1, 2, ...) of a session atomically; ``payload`` None is the stop file.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_job(folder, 1, {"algo": "fedavg"}); write_job(folder, 2, None)
    >>> next_job(folder, 1), next_job(folder, 2)
    ({'algo': 'fedavg'}, None)
    """
    write_atomic(Path(folder) / f"{index:06d}.{'job' if payload is not None else 'stop'}",
                 pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))


def next_job(folder: str | os.PathLike, index: int, wait_s: float = JOB_WAIT_S, poll_s: float = 0.05) -> Any:
    """Job ``index`` of a session once the parent has written it; None for the stop file, or when none comes
    within ``wait_s`` seconds (the parent is gone: the run ends)."""
    folder = Path(folder)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        job, stop = folder / f"{index:06d}.job", folder / f"{index:06d}.stop"
        if job.exists():
            return pickle.loads(job.read_bytes())
        if stop.exists():
            return None
        time.sleep(poll_s)
    return None
