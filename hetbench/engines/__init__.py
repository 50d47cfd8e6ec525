"""Engines that run a build's independent jobs: an ordered, streaming map of a picklable function.

Two engines, chosen with ``--engine``:

* ``local`` (default) - a pool of ``num_proc`` worker processes on this machine, started by a
  forkserver that has imported the job's modules once (:mod:`hetbench.engines.local`);
* ``ray`` - one Ray task per job (``num_cpus=1``, retried by Ray when its worker dies), at most
  twice as many tasks in flight as the cluster has workers, results yielded in job order and their
  object references dropped as soon as they are consumed, so the driver's memory and the object
  store stay bounded whatever the corpus (:mod:`hetbench.engines.ray_engine`). Ray is optional
  (``pip install 'hetbench[ray]'``) and imported only when this engine is used.

Both yield the same results in the same order, so what a build publishes does not depend on the
engine or on the number of workers; the engine is never recorded in a manifest.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Sequence

from hetbench.engines.base import Engine, EngineSpec
from hetbench.errors import HetbenchError

ENGINES = ("local", "ray")
RAY_INPUTS = ("path", "object")


def engine_spec(name: str = "local", address: str | None = None, inputs: str = "path") -> EngineSpec:
    """A checked :class:`EngineSpec` from the command-line options; a clear error for a bad one.

    Parameters
    ----------
    name, address, inputs : str
        ``--engine``, ``--ray-address`` and ``--ray-inputs``.

    Examples
    --------
    >>> from hetbench.engines import engine_spec
    >>> engine_spec("ray", "127.0.0.1:6379").address
    '127.0.0.1:6379'
    >>> engine_spec("local", "auto")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: ray_address and ray_inputs object need engine ray
    """
    if name not in ENGINES:
        raise HetbenchError(f"unknown `engine` '{name}'; choose one of: {', '.join(ENGINES)}")
    if inputs not in RAY_INPUTS:
        raise HetbenchError(f"unknown `ray_inputs` '{inputs}'; choose one of: {', '.join(RAY_INPUTS)}")
    if name != "ray" and (address is not None or inputs != "path"):
        raise HetbenchError("`ray_address` and `ray_inputs` object need `engine` ray")
    if address is not None and not address.strip():
        raise HetbenchError("`ray_address` must not be empty (omit it to start a local Ray instance)")
    return EngineSpec(name, address.strip() if address else None, inputs)


@contextmanager
def open_engine(
    spec: EngineSpec | None,
    num_proc: int,
    num_jobs: int,
    *,
    preload: Sequence[str] = (),
    initializer: Callable[[], None] | None = None,
    quiet: bool = False,
) -> Iterator[Engine]:
    """The engine ``spec`` names, ready for :meth:`Engine.map`, closed when the block ends.

    Parameters
    ----------
    spec : EngineSpec, optional
        None is the local engine.
    num_proc : int
        ``local``: worker processes (capped at the cores and at ``num_jobs``); ``ray`` with no
        address: the CPUs of the local Ray instance.
    num_jobs : int
        How many jobs will be mapped (the local engine starts no more workers).
    preload : sequence of str
        Modules a worker imports once, before its first job (the forkserver imports them for all).
    initializer : callable, optional
        Run once in every worker before its first job.
    quiet : bool
        No notes on stderr.

    Examples
    --------
    >>> from hetbench.engines import open_engine
    >>> with open_engine(None, 1, 3) as engine:
    ...     list(engine.map(abs, [-1, 2, -3]))
    [1, 2, 3]
    """
    spec = spec or EngineSpec()
    if spec.name == "ray":
        from hetbench.engines.ray_engine import RayEngine

        engine: Engine = RayEngine(spec, num_proc, preload=preload, initializer=initializer)
    else:
        from hetbench.engines.local import LocalEngine

        engine = LocalEngine(num_proc, num_jobs, preload=preload, initializer=initializer, quiet=quiet)
    with engine:  # type: ignore[attr-defined]
        yield engine


def ordered_map(
    fn: Callable[[Any], Any], items: Sequence[Any], spec: EngineSpec | None = None, num_proc: int = 1, **kwargs: Any
) -> list[Any]:
    """``[fn(item) for item in items]`` on the engine ``spec`` names (as :func:`open_engine`).

    Examples
    --------
    >>> from hetbench.engines import ordered_map
    >>> ordered_map(len, ["a", "bcd", ""])
    [1, 3, 0]
    """
    map_kwargs = {k: kwargs.pop(k) for k in ("files", "with_files", "on_failure") if k in kwargs}
    with open_engine(spec, num_proc, len(items), **kwargs) as engine:
        return list(engine.map(fn, items, **map_kwargs))


def consume(results: Iterable[Any], bar: Any) -> list[Any]:
    """The results as a list, advancing a progress bar by one per result."""
    out = []
    for res in results:
        out.append(res)
        bar.update(1)
    return out


__all__ = ["ENGINES", "RAY_INPUTS", "Engine", "EngineSpec", "consume", "engine_spec", "open_engine", "ordered_map"]
