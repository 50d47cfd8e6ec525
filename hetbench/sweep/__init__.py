"""Sweeps: every algorithm x every seed (x every group restriction) on one split, one results file per run
(what ``hetbench train`` does).

The path from a published split to the results::

    split --load_federated--> FederatedData --groups.restrict_groups--> the run's clients and test groups
          --run_training (algorithm, seed, checkpoint)--> results document
          --write_result--> <out>/<split name>-<fingerprint[:12]>/<algorithm>[-<non-default params>][-<groups>]-s<seed>.json

:func:`sweep` checks every option, the group names, the result files that exist and every checkpoint it
would resume before any training; within a seed and group restriction the centralised run goes first, so
the others get their accuracy relative to it (and a default target accuracy). Existing results are
refused, replaced (``overwrite``) or kept (``skip_existing``, ``resume``: only when they were written with
the same options); a run's checkpoint sits beside its result and is deleted once the result is written.
The file format and names are in ``docs/output-contract.md``.

:func:`default_split` is the split ``hetbench train`` uses without ``--split``: the label-Dirichlet split
of the built-in digits that ``hetbench partition dirichlet`` writes by default, built on first use through
:func:`hetbench.pipeline.make_split`.

The sweep sits above the trainer (:mod:`hetbench.train`) and the Flower engine (:mod:`hetbench.flower`),
the one layer that knows both: :mod:`hetbench.sweep.plan` plans and runs the jobs,
:mod:`hetbench.sweep.default_split` builds the embedded default split. This package imports torch only
when a sweep runs.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetbench.cores import available_cores
from hetbench.errors import HetbenchError
from hetbench.sweep.default_split import DEFAULT_SPLIT, default_split
from hetbench.sweep.plan import RunResult

if TYPE_CHECKING:
    from hetbench.train.algorithms import TrainConfig

__all__ = ["DEFAULT_SPLIT", "ENGINES", "RunResult", "algorithm_names", "default_split", "sweep"]

ENGINES = ("local", "flower")
"""``--engine`` values: this process, or Flower's Simulation Runtime (Ray backend)."""

def algorithm_names(algorithms: str | Sequence[str]) -> list[str]:
    """The algorithm names of a comma list or sequence, stripped and lower-cased, each at most once; a
    ``package.module:Class`` item is imported and registered as a plugin and stands for its class's name
    (:func:`hetbench.train.algorithms.plugins.load_algorithm`).

    Examples
    --------
    >>> from hetbench.sweep import algorithm_names
    >>> algorithm_names("FedAvg, fedprox")
    ['fedavg', 'fedprox']
    >>> algorithm_names("fedavg, hetbench.train.algorithms.scaffold:Scaffold")
    ['fedavg', 'scaffold']
    """
    text = algorithms if isinstance(algorithms, str) else ",".join(algorithms)
    names = [_plugin_name(a.strip()) if ":" in a else a.strip().lower() for a in text.split(",") if a.strip()]
    if not names:
        raise HetbenchError("`algo` is empty")
    if len(set(names)) != len(names):
        raise HetbenchError(f"`algo` names an algorithm twice ('{text}')")
    return names


def _plugin_name(spec: str) -> str:
    from hetbench.train.algorithms import load_algorithm

    return load_algorithm(spec)


def sweep(
    split: str | os.PathLike | None = None,
    algorithms: str | Sequence[str] = "fedavg",
    seeds: int | Sequence[int] | None = None,
    config: "TrainConfig | None" = None,
    *,
    hyper: Mapping[str, Any] | None = None,
    out: str | os.PathLike = "hetbench_results",
    overwrite: bool = False,
    quiet: bool = False,
    threads: int | None = None,
    protocol: str | None = None,
    skip_existing: bool = False,
    resume: bool = False,
    engine: str = "local",
    flower_actors: int | None = None,
    log: str | Sequence[str] | None = None,
    store: Any = None,
) -> list[RunResult]:
    """Train every algorithm with every seed on ``split`` and write one results JSON per run.

    Parameters
    ----------
    split : path or str, optional
        A built split folder or hub id; None: :func:`default_split` (built on first use).
    algorithms : str or sequence of str
        Names of :data:`hetbench.train.algorithms.ALGORITHMS`, or a comma list of them (``"fedavg,central"``).
    seeds : int or sequence of int, optional
        One run per seed and algorithm; None: ``config.seed``.
    config : TrainConfig, optional
        Options shared by every run (rounds, clients per round, local epochs, device, ``train_groups`` /
        ``test_groups``, ``checkpoint_every``, ...); its ``seed`` is replaced by each of ``seeds``. None: the
        defaults of :class:`~hetbench.train.algorithms.TrainConfig`.
    hyper : mapping, optional
        Algorithm hyper-parameters by name (``mu``, ``server_momentum``, ``pruning_ratios``, ...); None or
        missing: each paper's default. Each is range-checked; each algorithm gets those it takes, and an
        option that no algorithm of the sweep takes is refused.
    out : path
        Results folder: ``<out>/<split name>-<fingerprint[:12]>/<algorithm>[-<non-default params>][-<groups>]-s<seed>.json``,
        where ``<groups>`` is ``train_<g1+g2>`` / ``test_<g1+g2>`` for restricted runs and ``logo_<held out>``
        for leave-one-group-out (:class:`hetbench.train.groups.GroupRun`).
    overwrite : bool
        Replace existing result files (else any existing one is refused before training starts).
    quiet : bool
        No progress bars and no notes on stderr.
    threads : int, optional
        Intra-op torch threads of the runs that train serially (the centralised run, models with dropout)
        and of their evaluation (restored afterwards); None: one on a CPU, so that their results do not
        depend on the thread count (federated runs train their clients on one thread per worker, and share
        the cores with other live runs: :class:`hetbench.cores.RunRegistration`).
    protocol : str, optional
        ``leave-one-group-out``: one training per group of the split, on every other group, tested on all
        (:func:`hetbench.train.groups.plan_group_runs`). None: one run on ``config.train_groups``.
    skip_existing : bool
        Keep the results that exist (when they were written with the same options) and run the others.
    resume : bool
        As ``skip_existing``, and runs that left a checkpoint (``config.checkpoint_every``) continue from it;
        the others start afresh (announced, and marked ``afresh`` in the returned RunResult), so a scheduler can re-run
        the same command line. Only a checkpoint written with other options is refused.
    engine : str
        ``local`` (this process, :func:`hetbench.train.simulation.run_training`) or ``flower`` (Flower's
        Simulation Runtime with the Ray backend, :func:`hetbench.flower.simulation.run_flower_simulation`: same
        results document plus ``engine: flower``; no checkpoints, no ``central``).
    flower_actors : int, optional
        Ray actors running Flower ClientApps (``engine="flower"``; default one per core, at most K).
    log : str or sequence of str, optional
        Per-round metrics of every run, as the rounds happen (``--log``): ``csv`` (``<result
        stem>.rounds.csv`` beside the result), ``tensorboard`` (``<out>/tensorboard/<split folder>/<result
        stem>/``), ``wandb`` (offline unless ``WANDB_MODE`` is set); :mod:`hetbench.train.round_log`. None: none.
    store : RunStore, optional
        ``hetbench reproduce``'s run store (:class:`hetbench.reproduce.store.RunStore`): a run it holds is
        taken from it (and its results file written as if trained), a run it lacks is trained only while
        its budget lasts (``store.check_budget()``) and kept in it as soon as it finishes. None: none.

    Returns
    -------
    list of RunResult
        Seed by seed, group restriction by restriction, the centralised run first, then the algorithms in
        the order given; kept results are in the list with ``skipped=True``.

    Raises
    ------
    HetbenchError
        For an unknown algorithm, an option out of range, a device this machine lacks, a split that cannot
        be read, group names the split lacks, a result file that exists (without ``overwrite``,
        ``skip_existing`` or ``resume``), or a checkpoint that cannot be resumed, all before any training;
        ``TrainingDiverged`` when a run's loss becomes NaN/inf.

    Examples
    --------
    >>> from hetbench.sweep import sweep
    >>> from hetbench.train.algorithms import TrainConfig
    >>> runs = sweep(None, "fedavg,central", seeds=[0], config=TrainConfig(rounds=1, clients_per_round=2),
    ...              out="results", quiet=True, threads=1)
    >>> [(r.algorithm, r.seed, r.path.name) for r in runs]
    [('central', 0, 'central-s0.json'), ('fedavg', 0, 'fedavg-s0.json')]
    >>> runs[1].doc["final"]["relative_accuracy"] > 0
    True
    >>> again = sweep(None, "fedavg,fedprox", seeds=[0], config=TrainConfig(rounds=1, clients_per_round=2),
    ...               out="results", quiet=True, threads=1, skip_existing=True)
    >>> [(r.path.name, r.skipped) for r in again]
    [('fedavg-s0.json', True), ('fedprox-s0.json', False)]
    """
    from hetbench.sweep.plan import Plan, check_flower
    from hetbench.train.algorithms import TrainConfig, check_hyper_parameters, check_models, make_algorithm, options_for
    from hetbench.train.groups import PROTOCOLS
    from hetbench.train.round_log import check_sinks, parse_sinks

    names = algorithm_names(algorithms)
    sinks = parse_sinks(log)
    check_sinks(sinks)  # a sink's package missing: refused before anything is read
    if engine not in ENGINES:
        raise HetbenchError(f"`engine` '{engine}' is not one of {', '.join(ENGINES)}")
    if flower_actors is not None and (engine != "flower" or not flower_actors > 0):
        raise HetbenchError("`flower_actors` needs `engine` flower" if engine != "flower" else
                            f"`flower_actors` must be a positive number (got {flower_actors})")
    if engine == "flower":
        from hetbench.train.algorithms.plugins import LOADED_HERE

        here = [n for n in names if n in LOADED_HERE]
        if here:
            raise HetbenchError(f"algorithm '{here[0]}' was imported as MODULE:CLASS for this process only, and Flower's "
                                "ClientApps run in others: install it with an entry point in the group "
                                "hetbench.algorithms to train it on the Flower engine")
        check_flower(names, config, resume)
    if threads is not None and not (math.isfinite(threads) and threads > 0):
        raise HetbenchError(f"`threads` must be a positive number (got {threads})")
    if resume and overwrite:
        raise HetbenchError("`resume` keeps existing results and continues checkpointed runs; it cannot be "
                            "combined with `overwrite`")
    if skip_existing and overwrite:
        raise HetbenchError("`skip_existing` keeps existing results; it cannot be combined with `overwrite`")
    if protocol is not None and protocol not in PROTOCOLS:
        raise HetbenchError(f"`protocol` '{protocol}' is not one of {', '.join(PROTOCOLS)}")
    config = config if config is not None else TrainConfig()
    seeds = [config.seed] if seeds is None else [seeds] if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seeds:
        raise HetbenchError("`seed` is empty")
    hyper = dict(hyper or {})
    algos = {a: make_algorithm(a, **options_for(a, hyper)) for a in names}  # unknown names fail here
    check_hyper_parameters(names, hyper)  # options no algorithm of the sweep takes, values out of range
    if config is not None and config.model not in ("auto", "", None):  # before the split is read or built
        check_models(names, config.model, config.norm)
    for s in seeds:  # every seed is checked before any run writes a result
        dataclasses.replace(config, seed=s).check()
    if "central" in names:  # first, so the others get relative accuracy and a default target
        names = ["central"] + [a for a in names if a != "central"]

    import torch

    from hetbench.train.device import check_amp, resolve_device

    check_amp(resolve_device(config.device), config.amp)  # refused before the split is read
    saved_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
        config = dataclasses.replace(config, threads=int(threads))  # a serial run's (central's) thread count
    elif saved_threads > available_cores():  # torch counts the machine's cores, not the affinity or cgroup quota
        torch.set_num_threads(available_cores())
    try:
        plan = Plan(split, names, seeds, config, hyper, algos, Path(out), protocol, quiet)
        plan.engine, plan.flower_actors, plan.log, plan.store = engine, flower_actors, sinks, store
        plan.check_existing(overwrite, skip_existing or resume, resume)
        return plan.run()
    finally:
        torch.set_num_threads(saved_threads)
