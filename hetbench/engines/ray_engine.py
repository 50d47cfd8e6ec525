"""The Ray engine (``--engine ray``): every job one Ray task, results streamed back in job order.

* Connection: no ``--ray-address`` starts a local Ray instance for the build
  (``ray.init(address="local", num_cpus=num_proc)``: its own even where a cluster runs; shut down afterwards), every server of it
  (GCS, raylet, agents, workers) listening on 127.0.0.1 only (:func:`loopback_ray`: Ray has no
  authentication, so nothing of a local instance may be reachable from other hosts); ``auto`` joins
  the cluster this machine runs (``ray start``); ``host:port`` joins the cluster whose head listens
  there. The head is probed first with a bounded TCP connection, so an unreachable address is a
  one-line :class:`~hetbench.errors.HetbenchError`, never a hang (Ray itself retries for ever).
* Tasks: ``num_cpus=1``, ``max_retries`` re-runs when a worker dies (killed, out of memory, node
  lost); an exception raised by the job itself is not retried and is raised here as it was there.
  A job whose worker died on every try becomes ``on_failure(item, reason)`` (the ISP builders turn
  it into a skipped capture, as a RAW LibRaw cannot read is).
* Bounded: at most ``2 x workers`` tasks in flight; results are taken in job order and their object
  references dropped at once, so neither the driver nor the object store holds the whole corpus.
* Inputs: by path (``--ray-inputs path``: every node mounts the same file system), or the files'
  bytes put in the object store by the driver as each task is submitted (``--ray-inputs object``).
* Workers import ``preload`` and run ``initializer`` once, before their first job.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from hetbench.engines.base import Engine, EngineSpec
from hetbench.errors import HetbenchError

INSTALL = "pip install 'hetbench[ray]'"
#: seconds to wait for the head of a cluster to accept a connection
CONNECT_TIMEOUT_S = 5.0
#: tasks in flight per worker
IN_FLIGHT_PER_WORKER = 2
#: Ray's switch between a single-node instance on the loopback address ("0") and a node that other
#: hosts can join, on this machine's own address (Ray's default on Linux)
SINGLE_NODE_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

_REMOTE: Any = None
_READY = False


def import_ray():
    """The ``ray`` module, or a :class:`HetbenchError` naming the install command.

    Examples
    --------
    >>> from hetbench.engines.ray_engine import import_ray
    >>> import_ray().__name__
    'ray'
    """
    try:
        import ray
    except ImportError:
        raise HetbenchError(f"`engine` ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


@contextmanager
def loopback_ray() -> Iterator[None]:
    """While inside, a Ray instance this process starts (``ray.init`` without an address, as hetbench's
    ``--engine ray`` and Flower's simulation do) listens on the loopback address only.

    On Linux Ray puts a new node on the machine's own address and its servers (GCS, raylet, the
    agents, every worker) on every interface, even with ``_node_ip_address="127.0.0.1"`` (which it
    replaces by the machine's address). Ray has no authentication, so anyone who can reach the
    machine could submit tasks. Ray's single-node mode (its :data:`SINGLE_NODE_VAR` set to ``0``, the
    default on macOS and Windows) uses 127.0.0.1 for the node, so every server binds 127.0.0.1. This
    sets it in the environment that Ray's processes inherit and in Ray's constants if Ray is already
    imported, and puts both back on exit. A cluster on other hosts takes an explicit ``--ray-address``.

    Examples
    --------
    >>> import os
    >>> from hetbench.engines.ray_engine import SINGLE_NODE_VAR, loopback_ray
    >>> before = os.environ.get(SINGLE_NODE_VAR)
    >>> with loopback_ray():
    ...     os.environ[SINGLE_NODE_VAR]
    '0'
    >>> os.environ.get(SINGLE_NODE_VAR) == before
    True
    """
    saved_env = os.environ.get(SINGLE_NODE_VAR)
    os.environ[SINGLE_NODE_VAR] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    saved_flag = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if constants is not None:  # Ray read the variable when it was imported
        constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if saved_env is None:
            os.environ.pop(SINGLE_NODE_VAR, None)
        else:
            os.environ[SINGLE_NODE_VAR] = saved_env
        constants = sys.modules.get("ray._private.ray_constants")
        if constants is not None:  # as Ray would have read it (imported inside: from the restored environment)
            default = not getattr(constants, "IS_WINDOWS_OR_OSX", False)
            value = os.environ.get(SINGLE_NODE_VAR)
            constants.ENABLE_RAY_CLUSTER = (saved_flag if saved_flag is not None
                                            else default if value is None else value.lower() in ("1", "true"))


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` of a Ray head as (host, port); a clear error for anything else.

    Parameters
    ----------
    address : str
        ``host:port`` (optionally ``ray://`` is refused: Ray Client is not supported).

    Examples
    --------
    >>> from hetbench.engines.ray_engine import split_address
    >>> split_address("127.0.0.1:6379")
    ('127.0.0.1', 6379)
    >>> split_address("head")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: ray_address 'head' is not auto or host:port
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "://" in host:
        raise HetbenchError(f"`ray_address` '{address}' is not auto or host:port")
    return host.strip("[]"), int(port)


def probe(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise a one-line :class:`HetbenchError` unless something accepts TCP at ``address`` within
    ``timeout`` seconds (the head's GCS port).

    Examples
    --------
    >>> from hetbench.engines.ray_engine import probe
    >>> probe("127.0.0.1:1", timeout=1.0)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: ray_address 127.0.0.1:1: no Ray cluster answers there (Connection refused)
    """
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except socket.timeout:
        raise HetbenchError(f"`ray_address` {address}: no Ray cluster answers there (timed out after {timeout:g} s)") from None
    except OSError as exc:
        raise HetbenchError(f"`ray_address` {address}: no Ray cluster answers there ({exc.strerror or exc})") from None


def resolve_address(address: str) -> str:
    """``auto`` as the address of the cluster this machine runs (what ``ray start`` recorded), or
    a one-line error when there is none; any other address unchanged."""
    if address != "auto":
        return address
    from ray._private.services import canonicalize_bootstrap_address

    try:
        found = canonicalize_bootstrap_address("auto")
    except (ConnectionError, ValueError) as exc:
        raise HetbenchError(f"`ray_address` auto: no running Ray cluster found on this machine ({str(exc).splitlines()[0]})") from None
    if not found:
        raise HetbenchError("`ray_address` auto: no running Ray cluster found on this machine")
    return found


def _run_remote(fn: Callable[[Any], Any], item: Any, preload: Sequence[str], initializer, with_files, *contents: bytes) -> Any:
    """What a Ray task runs: warm the worker once, hand the item its files' bytes, call ``fn``."""
    global _READY
    if not _READY:
        import importlib

        for module in preload:
            importlib.import_module(module)
        if initializer is not None:
            initializer()
        _READY = True
    if with_files is not None:
        item = with_files(item, contents)
    return fn(item)


class RayEngine(Engine):
    """Jobs as Ray tasks (see the module docstring).

    Parameters
    ----------
    spec : EngineSpec
        ``address``, ``inputs`` and ``max_retries``.
    num_proc : int
        CPUs of the local Ray instance started when ``spec.address`` is None.
    preload, initializer
        As for :func:`hetbench.engines.open_engine`.

    Examples
    --------
    >>> from hetbench.engines import EngineSpec
    >>> from hetbench.engines.ray_engine import RayEngine
    >>> RayEngine(EngineSpec("ray", "auto"), 2).workers
    1
    """

    def __init__(self, spec: EngineSpec, num_proc: int, preload: Sequence[str] = (), initializer=None) -> None:
        self.spec = spec
        self.num_proc = max(1, int(num_proc))
        self.preload = tuple(preload)
        self.initializer = initializer
        self.workers = 1
        self._ray: Any = None
        self._connected = False

    def __enter__(self) -> "RayEngine":
        import warnings

        with warnings.catch_warnings():  # Ray's tips about its future defaults are not for hetbench's users
            warnings.simplefilter("ignore", FutureWarning)
            return self._connect()

    def _connect(self) -> "RayEngine":
        ray = import_ray()
        quiet = dict(logging_level=logging.ERROR, log_to_driver=False)
        if ray.is_initialized():  # a caller's own connection: used, and left open
            self._ray = ray
        elif self.spec.address is None:
            try:
                with loopback_ray():  # never reachable from other hosts: Ray has no authentication
                    # address "local": a new instance even when this machine runs a cluster (ray start), which
                    # ray.init() would otherwise join (and then refuse num_cpus)
                    ray.init(address="local", num_cpus=self.num_proc, include_dashboard=False, **quiet)
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; one line for all
                raise HetbenchError(f"`engine` ray: could not start a local Ray instance ({_first_line(exc)})") from None
            self._connected = True
        else:
            address = resolve_address(self.spec.address)
            probe(address)
            try:
                ray.init(address=address, **quiet)
            except Exception as exc:  # noqa: BLE001
                raise HetbenchError(f"`ray_address` {self.spec.address}: could not join the Ray cluster ({_first_line(exc)})") from None
            self._connected = True
        self._ray = ray
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._connected:
            self._ray.shutdown()
            self._connected = False

    def _remote(self):
        global _REMOTE
        if _REMOTE is None:
            _REMOTE = self._ray.remote(_run_remote)
        return _REMOTE.options(num_cpus=1, max_retries=self.spec.max_retries, retry_exceptions=False, name="hetbench-job")

    def map(self, fn, items, *, files=None, with_files=None, on_failure=None) -> Iterator[Any]:
        """``fn(item)`` for every item as Ray tasks, yielded in order (see the module docstring)."""
        ray = self._ray
        remote = self._remote()
        by_object = self.spec.inputs == "object" and files is not None and with_files is not None
        window = IN_FLIGHT_PER_WORKER * self.workers
        pending: deque = deque()
        it = iter(items)

        def submit(item: Any) -> None:
            contents = [ray.put(_read(path)) for path in files(item)] if by_object else []
            pending.append((item, remote.remote(fn, item, self.preload, self.initializer, with_files if by_object else None, *contents)))

        for item in it:
            submit(item)
            if len(pending) >= window:
                break
        while pending:
            item, ref = pending.popleft()
            result = self._take(ref, item, on_failure)
            del ref  # the result leaves the object store as soon as it is here
            nxt = next(it, _END)
            if nxt is not _END:
                submit(nxt)
            yield result

    def _take(self, ref, item, on_failure):
        ray = self._ray
        from ray.exceptions import RayError, RayTaskError

        try:
            return ray.get(ref)
        except RayTaskError as exc:  # the job itself raised: as it would locally
            cause = getattr(exc, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None
            raise
        except RayError as exc:  # the worker (or its node) died on every try
            reason = f"its Ray worker died on each of {self.spec.max_retries + 1} tries ({type(exc).__name__})"
            if on_failure is None:
                raise HetbenchError(f"`engine` ray: a job failed: {reason}") from None
            return on_failure(item, reason)


_END = object()


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
