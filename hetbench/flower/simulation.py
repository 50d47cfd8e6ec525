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
    """Run ``job`` in Flower's Simulation Runtime (``flwr run`` on a SuperLink of its own) and return its
    results document (``engine: flower``).

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
    from hetbench.flower.events import EventReader
    from hetbench.flower.project import pyproject_text
    from hetbench.flower.superlink import LocalSuperLink

    job.algorithm()  # central and bad hyper-parameters are refused before anything starts
    if float(cpus_per_actor) != int(cpus_per_actor) or int(cpus_per_actor) < 1:
        raise HetbenchError(f"Flower's simulation takes whole CPUs per ClientApp actor (got {cpus_per_actor})")
    given = data is not None
    if data is None:
        data = job.data()
    per_round = int(job.options.get("clients_per_round", 10))
    actors = int(actors) if actors else default_actors(per_round)
    with LocalSuperLink(verbose) as link:
        events = link.root / "events"
        events.mkdir()
        app = link.root / "app"
        app.mkdir()
        extra = {"events": str(events), "workers": int(workers or 0),
                 "central-accuracy": "" if central_accuracy is None else float(central_accuracy)}
        (app / "pyproject.toml").write_text(pyproject_text(job, extra=extra))
        run = link.run(app, federation_config(data.num_clients, actors, int(cpus_per_actor), verbose))
        reader, outcome = EventReader(events), None
        while outcome is None:
            ended = run.poll() is not None  # before reading: an event written before the end is seen
            for kind, payload in reader.new():
                if kind == "round":
                    if on_round is not None:
                        on_round(*payload)
                else:
                    outcome = (kind, payload)
            if outcome is None and ended:
                said = link.log_tail("run")  # the last error line of flwr run's output (the run's logs)
                raise RuntimeError("the Flower simulation ended without a result" + (f": {said}" if said else ""))
            link.scan(force=False)
            time.sleep(POLL_S if outcome is None else 0)
        deadline = time.monotonic() + END_WAIT_S
        while run.poll() is None and time.monotonic() < deadline:  # flwr-simulation shuts its Ray down
            link.scan(force=False)
            time.sleep(POLL_S)
    kind, payload = outcome
    if kind == "error":
        raise payload
    if given and isinstance(payload.get("split"), dict) and "path" in payload["split"]:
        # the ServerApp read the split by the job's (absolute) path; the document names it as the caller's
        # view does, as --engine local writes it
        payload["split"]["path"] = data.path
    return payload
