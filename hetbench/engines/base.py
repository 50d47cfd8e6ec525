"""What every engine shares: :class:`EngineSpec` (which engine, from the command line) and the
:class:`Engine` interface (an ordered, streaming map). See :mod:`hetbench.engines`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence


@dataclass(frozen=True)
class EngineSpec:
    """Which engine runs a build's jobs (``--engine``, ``--ray-address``, ``--ray-inputs``).

    Parameters
    ----------
    name : {"local", "ray"}
        The engine.
    address : str, optional
        ``ray``: None starts a local Ray instance for the build; ``auto`` joins the running cluster
        this machine knows of; ``host:port`` joins the cluster whose head (GCS) listens there.
    inputs : {"path", "object"}
        ``ray``: how input files reach the workers: by path (every node sees the same file system)
        or as their bytes in Ray's object store (``ray.put``).
    max_retries : int
        ``ray``: how many times Ray re-runs a task whose worker died before the job is given up.

    Examples
    --------
    >>> from hetbench.engines import EngineSpec
    >>> EngineSpec().name, EngineSpec("ray", "auto").inputs
    ('local', 'path')
    """

    name: str = "local"
    address: str | None = None
    inputs: str = "path"
    max_retries: int = 3


class Engine(ABC):
    """What every engine offers: ``workers`` and an ordered, streaming :meth:`map`."""

    workers: int = 1

    @abstractmethod
    def map(
        self,
        fn: Callable[[Any], Any],
        items: Sequence[Any],
        *,
        files: Callable[[Any], Sequence[str]] | None = None,
        with_files: Callable[[Any, Sequence[bytes]], Any] | None = None,
        on_failure: Callable[[Any, str], Any] | None = None,
    ) -> Iterator[Any]:
        """``fn(item)`` for every item, yielded in the items' order.

        Parameters
        ----------
        fn : callable
            A module-level (picklable) function of one item.
        items : sequence
            The jobs (picklable).
        files, with_files : callable, optional
            ``files(item)``: the input files an item reads; ``with_files(item, contents)``: the item
            reading ``contents`` (their bytes, in the same order) instead. Used by engines whose
            workers do not share this machine's file system (``--ray-inputs object``).
        on_failure : callable, optional
            ``on_failure(item, reason)``: the result of an item whose worker died on every try (the
            engine raises a :class:`HetbenchError` without it).
        """
