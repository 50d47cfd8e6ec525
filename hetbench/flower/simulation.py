"""``hetbench train --engine flower``: one run through Flower's Simulation Runtime (``run_simulation``, Ray
backend) on this machine.

One virtual SuperNode per hetbench client (node K gets ``partition-id = K``); the ClientApps run in
``actors`` Ray actors of ``cpus_per_actor`` CPUs each; the ServerApp runs in this process and gets the job,
and the data view already loaded, through :data:`hetbench.flower.server_app.LOCAL`. The Ray instance the
simulation starts listens on 127.0.0.1 only (:func:`hetbench.engines.ray_engine.loopback_ray`).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from hetbench.cores import available_cores
from hetbench.engines.ray_engine import loopback_ray
from hetbench.errors import Terminated
from hetbench.flower.job import FlowerJob, require_flower


def quiet_flower(verbose: bool) -> None:
    """Flower logs every round at INFO, a traceback for every failed ClientApp at ERROR and warns that
    ``run_simulation`` is deprecated: nothing below CRITICAL unless ``verbose`` (hetbench reports failed
    clients itself, one line each round)."""
    logging.getLogger("flwr").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    if not verbose:
        warnings.filterwarnings("ignore", module="flwr")
        warnings.filterwarnings("ignore", module="ray")


def default_actors(clients_per_round: int) -> int:
    """Ray actors when ``--flower-actors`` is not given: one per core, at most one per client of a round.

    Examples
    --------
    >>> default_actors(1)
    1
    """
    return max(1, min(available_cores(), int(clients_per_round)))


def run_flower_simulation(
    job: FlowerJob,
    data: Any = None,
    actors: int | None = None,
    cpus_per_actor: float = 1.0,
    central_accuracy: float | None = None,
    on_round: Callable[[int, dict], None] | None = None,
    workers: int | None = None,
    verbose: bool = False,
) -> dict[str, Any]:
    """Run ``job`` in Flower's Simulation Runtime and return its results document (``engine: flower``).

    Parameters
    ----------
    job : FlowerJob
        The split, algorithm and options (:meth:`FlowerJob.make`).
    data : FederatedData, optional
        The job's data view, already loaded (the ServerApp loads it otherwise).
    actors : int, optional
        Ray actors running ClientApps (default :func:`default_actors`).
    cpus_per_actor : float
        Ray ``num_cpus`` of each actor.
    central_accuracy : float, optional
        The centralised run's final accuracy (``relative_accuracy``).
    on_round : callable, optional
        ``on_round(round, summary)`` after every round.
    workers : int, optional
        Threads of the ServerApp's central evaluation (``--workers``).
    verbose : bool
        Show Flower's and Ray's logs.

    Returns
    -------
    dict
        The results document of ``--engine local`` plus ``engine: flower``.

    Raises
    ------
    HetbenchError
        Flower missing (exit 2), bad options, every client of a round failing (exit 3), ...
    """
    require_flower(simulation=True)
    from hetbench.flower import server_app
    from hetbench.flower.client_app import app as client_app

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    from flwr.simulation import run_simulation

    job.algorithm()  # central and bad hyper-parameters are refused before Ray starts
    if data is None:
        data = job.data()
    per_round = int(job.options.get("clients_per_round", 10))
    actors = int(actors) if actors else default_actors(per_round)
    quiet_flower(verbose)
    backend_config = {
        "client_resources": {"num_cpus": float(cpus_per_actor), "num_gpus": 0.0},
        # address "local": Ray instance of its own, never a cluster this machine happens to run (ray start)
        "init_args": {"address": "local", "num_cpus": max(1, int(round(actors * float(cpus_per_actor)))),
                      "logging_level": logging.INFO if verbose else logging.ERROR,
                      "log_to_driver": bool(verbose)},
    }
    local = server_app.LOCAL
    local.clear()
    stop = threading.Event()  # set when this thread is interrupted: the ServerApp's thread then ends at once
    local.update(job=job.to_config(), data=data, workers=workers, central_accuracy=central_accuracy,
                 on_round=on_round, result=None, error=None, stop=stop)
    try:
        with loopback_ray(), _sigterm_kept():  # never reachable from other hosts (Ray has no authentication)
            run_simulation(server_app=server_app.app, client_app=client_app, num_supernodes=data.num_clients,
                           backend_name="ray", backend_config=backend_config, verbose_logging=verbose)
        if local["error"] is not None:
            raise local["error"]
        if local["result"] is None:
            raise RuntimeError("the Flower simulation ended without a result (run with --verbose to see its logs)")
        return local["result"]
    except BaseException:
        stop.set()
        raise
    finally:
        local.clear()


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """Inside, SIGTERM ends the run as hetbench's own handler does (:class:`~hetbench.errors.Terminated`,
    every cleanup runs, one line): ``ray.init`` replaces the handler by one calling ``sys.exit(15)``, which
    skipped hetbench's message and left Flower's ServerApp thread running; the handler is put back on exit.
    """
    main = threading.current_thread() is threading.main_thread()
    saved = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    except SystemExit as exc:
        if exc.code != signal.SIGTERM:
            raise
        raise Terminated() from None
    finally:
        if main and saved is not None:
            signal.signal(signal.SIGTERM, saved)
