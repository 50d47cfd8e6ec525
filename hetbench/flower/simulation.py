"""``hetbench train --engine flower``: one run through Flower's Simulation Runtime (Ray backend) on this
machine, started the way Flower supports: ``flwr run`` against a SuperLink in simulation mode.

The run's Flower app project (:func:`hetbench.flower.project.pyproject_text`, what ``hetbench flower-app``
writes) goes to a temporary folder; a SuperLink in simulation mode that this process owns
(:class:`hetbench.flower.superlink.LocalSuperLink`: 127.0.0.1 on an ephemeral port, a temporary
``FLWR_HOME``, no network, every process it starts stopped by pid at the end) runs it with ``flwr run``:
``flwr-simulation`` starts one virtual SuperNode per hetbench client (node K gets ``partition-id = K``),
the ClientApps in ``actors`` Ray actors of ``cpus_per_actor`` CPUs each (a Ray instance of its own on
127.0.0.1), and the ServerApp, which sends every round's summary, then the results document or the error,
back through an event folder (:mod:`hetbench.flower.events`): the progress bar and the ``--log`` sinks get
what ``--engine local`` gives them, the results document is the same bit for bit.

A sweep (``--algo fedavg,scaffold --seed 0,1``) pays that start-up once: :class:`FlowerSession` keeps the
SuperLink, the run, its Ray instance and ClientApp actors, and hands the ServerApp one job after another
(:func:`hetbench.flower.events.write_job`); :func:`run_flower_simulation` is a session of one job.

Flower 1.42 deprecates ``flwr.simulation.run_simulation``, which earlier versions of hetbench called here.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from hetbench.cores import available_cores
from hetbench.errors import HetbenchError
from hetbench.flower.job import FlowerJob, require_flower

#: seconds to wait, once the ServerApp is done, for ``flwr run`` to see the run end (Ray shut down)
END_WAIT_S = 60.0
#: seconds between looks at the event folder
POLL_S = 0.1


def default_actors(clients_per_round: int) -> int:
    """Ray actors when ``--flower-actors`` is not given: one per core, at most one per client of a round.

    Examples
    --------
    >>> default_actors(1)
    1
    """
    return max(1, min(available_cores(), int(clients_per_round)))


def federation_config(num_clients: int, actors: int, cpus_per_actor: int, verbose: bool = False) -> list[str]:
    """The ``flwr run --federation-config`` settings of a run: one virtual SuperNode per client, ClientApp
    actors of ``cpus_per_actor`` CPUs in a Ray instance of ``actors * cpus_per_actor`` CPUs, no GPU.

    Parameters
    ----------
    num_clients : int
        Virtual SuperNodes.
    actors : int
        Ray actors running ClientApps.
    cpus_per_actor : int
        CPUs of each (Flower 1.42 takes whole CPUs here).
    verbose : bool
        Ray's logs at INFO, on the driver.

    Returns
    -------
    list of str
        ``key=value`` items.

    Examples
    --------
    >>> federation_config(10, 2, 1)
    ['num-supernodes=10', 'backend="ray"', 'client-resources-num-cpus=1', 'client-resources-num-gpus=0.0', \
'init-args-num-cpus=2', 'init-args-num-gpus=0', 'init-args-logging-level="ERROR"', 'init-args-log-to-driver=false', \
'verbose=false']
    """
    flag = "true" if verbose else "false"
    return [f"num-supernodes={int(num_clients)}", 'backend="ray"', f"client-resources-num-cpus={int(cpus_per_actor)}",
            "client-resources-num-gpus=0.0", f"init-args-num-cpus={int(actors) * int(cpus_per_actor)}",
            "init-args-num-gpus=0", f'init-args-logging-level="{"INFO" if verbose else "ERROR"}"',
            f"init-args-log-to-driver={flag}", f"verbose={flag}"]


class FlowerSession:
    """One Flower simulation that runs many jobs of one split, one after the other: one SuperLink, one ``flwr run``,
    one Ray instance and its ClientApp actors for a whole ``hetbench train --engine flower`` sweep, instead of
    one of each per (algorithm, seed).

    The ServerApp (:func:`hetbench.flower.server_app.main`, run config ``jobs``) waits for job files in a
    private folder (:func:`write_job`: the job, its central accuracy and workers), runs each with the one round
    loop and sends its round summaries and results (or its error) through the event folder; a ``stop`` file
    ends it. Each job is tagged with its place in the session (``session-run``), so a ClientApp keeps no state of
    one job into the next (SCAFFOLD's ``c_i``: :mod:`hetbench.flower.client_app`).

    Parameters
    ----------
    first : FlowerJob
        A job of the session (names the app project; every job must have the same number of clients).
    num_clients : int
        Virtual SuperNodes: one per client of the split's view.
    actors, cpus_per_actor, verbose
        As for :func:`run_flower_simulation`.

    Examples
    --------
    >>> with FlowerSession(job, data.num_clients, actors=2) as session:  # doctest: +SKIP
    ...     docs = [session.train(j, data) for j in jobs]
    """

    def __init__(self, first: FlowerJob, num_clients: int, actors: int, cpus_per_actor: int = 1,
                 verbose: bool = False) -> None:
        require_flower(simulation=True)
        if float(cpus_per_actor) != int(cpus_per_actor) or int(cpus_per_actor) < 1:
            raise HetbenchError(f"Flower's simulation takes whole CPUs per ClientApp actor (got {cpus_per_actor})")
        self.first, self.num_clients, self.actors = first, int(num_clients), int(actors)
        self.cpus, self.verbose = int(cpus_per_actor), verbose
        self.link: Any = None
        self.run: Any = None
        self.jobs = 0

    def __enter__(self) -> "FlowerSession":
        from hetbench.flower.events import EventReader
        from hetbench.flower.project import pyproject_text
        from hetbench.flower.superlink import LocalSuperLink

        self.link = LocalSuperLink(self.verbose).__enter__()
        try:
            root = self.link.root
            for name in ("events", "jobs", "app"):
                (root / name).mkdir()
            extra = {"events": str(root / "events"), "jobs": str(root / "jobs")}
            (root / "app" / "pyproject.toml").write_text(pyproject_text(self.first, extra=extra))
            self.reader = EventReader(root / "events")
            self.run = self.link.run(root / "app", federation_config(self.num_clients, self.actors, self.cpus,
                                                                       self.verbose))
        except BaseException:
            self.link.__exit__(None, None, None)
            raise
        return self

    def train(self, job: FlowerJob, data: Any = None, central_accuracy: float | None = None,
              on_round: Callable[[int, dict], None] | None = None, workers: int | None = None) -> dict[str, Any]:
        """Run ``job`` in this session and return its results document (``engine: flower``); its errors are
        raised here, as :func:`run_flower_simulation` raises them, and the session stays usable."""
        from hetbench.flower.events import write_job

        job.algorithm()  # central and bad hyper-parameters are refused before anything is sent
        if data is not None and data.num_clients != self.num_clients:
            raise HetbenchError(f"this Flower session serves {self.num_clients} clients; the job's split has "
                                f"{data.num_clients}")
        self.jobs += 1
        write_job(self.link.root / "jobs", self.jobs, (job.to_config(), central_accuracy, int(workers or 0)))
        outcome = None
        while outcome is None:
            ended = self.run.poll() is not None  # before reading: an event written before the end is seen
            for kind, payload in self.reader.new():
                if kind == "round":
                    if on_round is not None:
                        on_round(*payload)
                else:
                    outcome = (kind, payload)
                    break
            if outcome is None and ended:
                said = self.link.log_tail("run")  # the last error line of flwr run's output (the run's logs)
                raise RuntimeError("the Flower simulation ended without a result" + (f": {said}" if said else ""))
            self.link.scan(force=False)
            time.sleep(POLL_S if outcome is None else 0)
        kind, payload = outcome
        if kind == "error":
            raise payload
        if data is not None and isinstance(payload.get("split"), dict) and "path" in payload["split"]:
            # the ServerApp read the split by the job's (absolute) path; the document names it as the caller's
            # view does, as --engine local writes it
            payload["split"]["path"] = data.path
        return payload

    def __exit__(self, *exc: Any) -> None:
        from hetbench.flower.events import write_job

        if self.link is None:  # closed already (a sweep closes a session before its ExitStack does)
            return
        try:
            # ended normally: the stop file, and the run shuts its Ray down; an error or a signal: no waiting for a
            # ServerApp in the middle of a job, every process is stopped by pid at once (LocalSuperLink.stop)
            if exc[0] is None and self.run is not None and self.run.poll() is None:
                write_job(self.link.root / "jobs", self.jobs + 1, None)  # the stop file: the ServerApp returns
                deadline = time.monotonic() + END_WAIT_S
                while self.run.poll() is None and time.monotonic() < deadline:  # flwr-simulation shuts Ray down
                    self.link.scan(force=False)
                    time.sleep(POLL_S)
        finally:
            link, self.link = self.link, None
            link.__exit__(*exc)


def run_flower_simulation(
    job: FlowerJob,
    data: Any = None,
    actors: int | None = None,
    cpus_per_actor: int = 1,
    central_accuracy: float | None = None,
    on_round: Callable[[int, dict], None] | None = None,
    workers: int | None = None,
    verbose: bool = False,
) -> dict[str, Any]:
    """Run ``job`` in Flower's Simulation Runtime (``flwr run`` on a SuperLink of its own: a
    :class:`FlowerSession` of one job) and return its results document (``engine: flower``).

    Parameters
    ----------
    job : FlowerJob
        The split, algorithm and options (:meth:`FlowerJob.make`).
    data : FederatedData, optional
        The job's data view, already loaded (for its number of clients; the ServerApp loads its own).
    actors : int, optional
        Ray actors running ClientApps (default :func:`default_actors`).
    cpus_per_actor : int
        CPUs of each actor (a whole number, as Flower's federation config takes it).
    central_accuracy : float, optional
        The centralised run's final accuracy (``relative_accuracy``).
    on_round : callable, optional
        ``on_round(round, summary)`` after every round (the summaries ``--engine local`` gives).
    workers : int, optional
        Threads of the ServerApp's central evaluation (``--workers``).
    verbose : bool
        Show the logs of Flower's processes and of Ray.

    Returns
    -------
    dict
        The results document of ``--engine local`` plus ``engine: flower``.

    Raises
    ------
    HetbenchError
        Flower missing (exit 2), bad options, every client of a round failing (exit 3), ...

    Examples
    --------
    >>> job = FlowerJob("hetbench_splits/digits-dirichlet-client-a0.5-n10-s0", "fedavg", {"rounds": 2})
    >>> doc = run_flower_simulation(job, actors=2)  # doctest: +SKIP
    >>> doc["engine"], len(doc["curves"]["rounds"])  # doctest: +SKIP
    ('flower', 2)
    """
    require_flower(simulation=True)
    job.algorithm()  # central and bad hyper-parameters are refused before anything starts
    view = data if data is not None else job.data()
    actors = int(actors) if actors else default_actors(int(job.options.get("clients_per_round", 10)))
    with FlowerSession(job, view.num_clients, actors, cpus_per_actor, verbose) as session:
        return session.train(job, data, central_accuracy, on_round, workers)
