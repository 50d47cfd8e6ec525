"""Sweeps: every algorithm x every seed (x every group restriction) on one split, one results file per run
(what ``hetbench train`` does).

The path from a published split to the results::

    split --load_federated--> FederatedData --groups.restrict_groups--> the run's clients and test groups
          --run_training (algorithm, seed, checkpoint)--> results document
          --write_result--> <out>/<split name>/<algorithm>[-<non-default params>][-<groups>]-s<seed>.json

:func:`sweep` checks every option, the group names, the result files that exist and every checkpoint it
would resume before any training; within a seed and group restriction the centralised run goes first, so
the others get their accuracy relative to it (and a default target accuracy). Existing results are
refused, replaced (``overwrite``) or kept (``skip_existing``, ``resume``: only when they were written with
the same options); a run's checkpoint sits beside its result and is deleted once the result is written.
The file format and names are in ``docs/output-contract.md``.

:func:`default_split` is the split ``hetbench train`` uses without ``--split``: the label-Dirichlet split
of the built-in digits that ``hetbench partition dirichlet`` writes by default, built on first use through
:func:`hetbench.pipeline.make_split`.

This module imports torch only when a sweep runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetbench.errors import HetbenchError
from hetbench.naming import default_out_dir

if TYPE_CHECKING:
    from hetbench.train.algorithms import TrainConfig
    from hetbench.train.groups import GroupRun

ENGINES = ("local", "flower")
"""``--engine`` values: this process, or Flower's Simulation Runtime (Ray backend)."""

DEFAULT_SOURCE = "builtin:digits"
DEFAULT_TAG = "dirichlet-client-a0.5-n10"
DEFAULT_SPLIT = default_out_dir(DEFAULT_SOURCE, DEFAULT_TAG, 0)
"""Where ``hetbench partition dirichlet`` puts its default split (built-in digits, client scheme,
alpha 0.5, 10 clients, seed 0), relative to the working directory."""


@dataclass(frozen=True)
class RunResult:
    """One run of a sweep: the algorithm, the seed, where its results file is and what it holds.

    ``groups`` is the run's group tag (``train_baseline``, ``logo_usps``; None: the whole split),
    ``skipped`` says the result existed and was kept, ``resumed`` that the run continued from a checkpoint.
    """

    algorithm: str
    seed: int
    path: Path
    doc: dict[str, Any]
    groups: str | None = None
    skipped: bool = False
    resumed: bool = False


def default_split(quiet: bool = False) -> Path:
    """The embedded default split, :data:`DEFAULT_SPLIT`, built (once) if it is missing.

    Parameters
    ----------
    quiet : bool
        No progress bars and no note on stderr when it is built.

    Returns
    -------
    Path
        The split folder (relative to the working directory).

    Examples
    --------
    >>> from hetbench.train.runs import default_split
    >>> path = default_split(quiet=True)
    >>> path.as_posix(), (path / "hetbench.json").is_file()
    ('hetbench_splits/digits-dirichlet-client-a0.5-n10-s0', True)
    """
    if (DEFAULT_SPLIT / "hetbench.json").is_file():
        return DEFAULT_SPLIT
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    partitioner = DirichletPartitioner(10, 0.5, "client", None, 0)
    make_split(DEFAULT_SOURCE, partitioner, DEFAULT_SPLIT, seed=0, test_fraction=0.2, quiet=quiet)
    if not quiet:
        print(f"no --split given: built the embedded default {DEFAULT_SPLIT}", file=sys.stderr)
    return DEFAULT_SPLIT


def algorithm_names(algorithms: str | Sequence[str]) -> list[str]:
    """The algorithm names of a comma list or sequence, stripped and lower-cased, each at most once.

    Examples
    --------
    >>> from hetbench.train.runs import algorithm_names
    >>> algorithm_names("FedAvg, fedprox")
    ['fedavg', 'fedprox']
    """
    text = algorithms if isinstance(algorithms, str) else ",".join(algorithms)
    names = [a.strip().lower() for a in text.split(",") if a.strip()]
    if not names:
        raise HetbenchError("--algo is empty")
    if len(set(names)) != len(names):
        raise HetbenchError(f"--algo names an algorithm twice ('{text}')")
    return names


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
        Results folder: ``<out>/<split name>/<algorithm>[-<non-default params>][-<groups>]-s<seed>.json``,
        where ``<groups>`` is ``train_<g1+g2>`` / ``test_<g1+g2>`` for restricted runs and ``logo_<held out>``
        for leave-one-group-out (:class:`hetbench.train.groups.GroupRun`).
    overwrite : bool
        Replace existing result files (else any existing one is refused before training starts).
    quiet : bool
        No progress bars and no notes on stderr.
    threads : int, optional
        Torch threads for the centralised run and evaluation (restored afterwards); None: torch's setting.
    protocol : str, optional
        ``leave-one-group-out``: one training per group of the split, on every other group, tested on all
        (:func:`hetbench.train.groups.plan_group_runs`). None: one run on ``config.train_groups``.
    skip_existing : bool
        Keep the results that exist (when they were written with the same options) and run the others.
    resume : bool
        As ``skip_existing``, and runs that left a checkpoint (``config.checkpoint_every``) continue from it;
        the others start afresh. Refused when no run of the sweep has a checkpoint.
    engine : str
        ``local`` (this process, :func:`hetbench.train.simulation.run_training`) or ``flower`` (Flower's
        Simulation Runtime with the Ray backend, :func:`hetbench.flower.simulation.run_flower_simulation`: same
        results document plus ``engine: flower``; no checkpoints, no ``central``).
    flower_actors : int, optional
        Ray actors running Flower ClientApps (``engine="flower"``; default one per core, at most K).

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
    >>> from hetbench.train import sweep
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
    from hetbench.train.algorithms import TrainConfig, check_hyper_parameters, make_algorithm, options_for
    from hetbench.train.groups import PROTOCOLS

    names = algorithm_names(algorithms)
    if engine not in ENGINES:
        raise HetbenchError(f"--engine '{engine}' is not one of {', '.join(ENGINES)}")
    if flower_actors is not None and (engine != "flower" or not flower_actors > 0):
        raise HetbenchError("--flower-actors needs --engine flower" if engine != "flower" else
                            f"--flower-actors must be a positive number (got {flower_actors})")
    if engine == "flower":
        _check_flower(names, config, resume)
    if threads is not None and not (math.isfinite(threads) and threads > 0):
        raise HetbenchError(f"--threads must be a positive number (got {threads})")
    if resume and overwrite:
        raise HetbenchError("--resume keeps existing results and continues checkpointed runs; it cannot be "
                            "combined with --overwrite")
    if skip_existing and overwrite:
        raise HetbenchError("--skip-existing keeps existing results; it cannot be combined with --overwrite")
    if protocol is not None and protocol not in PROTOCOLS:
        raise HetbenchError(f"--protocol '{protocol}' is not one of {', '.join(PROTOCOLS)}")
    config = config if config is not None else TrainConfig()
    seeds = [config.seed] if seeds is None else [seeds] if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seeds:
        raise HetbenchError("--seed is empty")
    hyper = dict(hyper or {})
    algos = {a: make_algorithm(a, **options_for(a, hyper)) for a in names}  # unknown names fail here
    check_hyper_parameters(names, hyper)  # options no algorithm of the sweep takes, values out of range
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
    try:
        plan = _Plan(split, names, seeds, config, hyper, algos, Path(out), protocol, quiet)
        plan.engine, plan.flower_actors = engine, flower_actors
        plan.check_existing(overwrite, skip_existing or resume, resume)
        return plan.run()
    finally:
        torch.set_num_threads(saved_threads)


@dataclass
class _Job:
    """One run of a sweep, planned before any training."""

    algorithm: str
    seed: int
    groups: "GroupRun"
    config: "TrainConfig"
    path: Path
    checkpoint: Path
    kept: dict[str, Any] | None = None  # the existing result that is kept
    resume: bool = False


def _check_flower(names: list[str], config: "TrainConfig | None", resume: bool) -> None:
    """Refuse what ``--engine flower`` cannot run, before anything is read (Flower missing: exit 2)."""
    from hetbench.flower.job import require_flower

    if "central" in names:
        raise HetbenchError("--engine flower runs federated algorithms; 'central' trains one model on the union of "
                            "the clients' data: run it with --engine local")
    if resume or (config is not None and config.checkpoint_every):
        raise HetbenchError("--engine flower does not write checkpoints: drop --checkpoint-every / --resume")
    require_flower(simulation=True)


class _Plan:
    """Every run of a sweep with its data, options and files; checks all of them before any training."""

    engine = "local"
    flower_actors: int | None = None

    def __init__(self, split, names, seeds, config, hyper, algos, out: Path, protocol, quiet: bool) -> None:
        from hetbench.train.checkpoint import checkpoint_path
        from hetbench.train.data import load_federated
        from hetbench.train.groups import plan_group_runs
        from hetbench.train.checks import check_out, check_run
        from hetbench.train.results import result_path

        split_path = str(split) if split is not None else str(default_split(quiet))
        # the Flower engine's ClientApps read the split in their own processes: an absolute path where it is one
        self.split_path = os.path.abspath(split_path) if os.path.exists(split_path) else split_path
        check_out(out, split_path)  # a name the file system holds, not inside the split (verify would see it)
        self.data = load_federated(split_path, config.image_size, config.group_by, quiet=quiet,
                                   cache_dir=config.cache_dir)
        check_run(self.data, split_path, out)  # labels in range, a results folder that can be written
        group_runs = plan_group_runs(self.data, config.train_groups, config.test_groups, protocol)
        self._views: dict = {}
        self.hyper, self.algos, self.quiet = hyper, algos, quiet
        self.jobs: list[_Job] = []
        for s in seeds:
            for g in group_runs:
                cfg = dataclasses.replace(config, seed=s, train_groups=g.train_groups, test_groups=g.test_groups)
                for a in names:
                    path = _tagged(result_path(out, self.data.name, a, algos[a].params, type(algos[a]).defaults, s),
                                   g.tag, s)
                    self.jobs.append(_Job(a, s, g, cfg.for_algorithm(algos[a]), path, checkpoint_path(path)))

    def view(self, groups: "GroupRun"):
        """The split restricted to ``groups`` (made on first use: it computes the training rows' statistics)."""
        from hetbench.train.groups import restrict_groups

        if groups not in self._views:
            self._views[groups] = restrict_groups(self.data, groups.train_groups, groups.test_groups)
        return self._views[groups]

    def check_existing(self, overwrite: bool, keep: bool, resume: bool) -> None:
        """Refuse, keep or replace the results that exist; with ``resume``, check every checkpoint."""
        from hetbench.train.algorithms import make_algorithm, options_for
        from hetbench.train.checkpoint import check_resumable
        from hetbench.train.results import existing_result

        taken = [j for j in self.jobs if existing_result(j.path, overwrite)]
        if taken and not (overwrite or keep):
            more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
            raise HetbenchError(
                f"result file '{taken[0].path}' already exists{more}; pass --skip-existing to keep existing results "
                "and run the rest, or --overwrite to replace them"
            )
        if keep:
            for job in taken:
                job.kept = self._kept(job)
        if resume:
            todo = [j for j in self.jobs if j.kept is None and j.checkpoint.is_file()]
            if not todo:
                folder, left = self.jobs[0].path.parent, len(self.jobs) - len(taken)
                raise HetbenchError(
                    f"--resume: no checkpoint to resume in '{folder}': all {len(taken)} results of this sweep exist"
                    if not left else
                    f"--resume: no checkpoint of this sweep's {left} unfinished run{'s' if left > 1 else ''} in "
                    f"'{folder}' (a run writes one with --checkpoint-every K); run without --resume to start afresh"
                )
            for job in todo:
                fresh = make_algorithm(job.algorithm, **options_for(job.algorithm, self.hyper))
                check_resumable(job.checkpoint, self.view(job.groups), fresh,
                                job.config)
                job.resume = True

    def _kept(self, job: _Job) -> dict[str, Any]:
        """The existing result of ``job``, refused when it is unreadable or was written with other options."""
        try:
            doc = json.loads(job.path.read_text())
            accuracy = float(doc["final"]["accuracy"])
        except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
            raise HetbenchError(
                f"existing result '{job.path}' cannot be read ({type(exc).__name__}); delete it or pass --overwrite"
            ) from None
        want = _jsonable({**job.config.result_options(), "algorithm": self.algos[job.algorithm].params,
                          "fingerprint": self.data.fingerprint})
        have = {**doc.get("config", {}), "algorithm": doc.get("algorithm", {}).get("params"),
                "fingerprint": doc.get("split", {}).get("fingerprint"), "engine": doc.get("engine", "local")}
        want["engine"] = self.engine
        if want.get("model") == "auto":
            want.pop("model")
        diff = next((k for k in sorted(want) if have.get(k) != want[k]), None)
        if diff is not None or not math.isfinite(accuracy):
            what = "split" if diff == "fingerprint" else f"{diff} {have.get(diff)!r}, not {want.get(diff)!r}" if diff else \
                "a non-finite accuracy"
            raise HetbenchError(
                f"existing result '{job.path}' was written with other options ({what}); pass --overwrite to replace "
                "it or choose another --out"
            )
        return doc

    def run(self) -> list[RunResult]:
        from hetbench.train.algorithms import make_algorithm, options_for
        from hetbench.train.checkpoint import remove_checkpoint
        from hetbench.train.results import write_result

        self._announce()
        runs = []
        central: dict[tuple, float] = {}
        for job in self.jobs:
            key = (job.seed, job.groups)
            if job.kept is not None:
                doc = job.kept
            else:
                algorithm = make_algorithm(job.algorithm, **options_for(job.algorithm, self.hyper))  # fresh state per run
                doc = self._train(job, algorithm, central.get(key))
                write_result(doc, job.path)
                remove_checkpoint(job.checkpoint)  # the result is safe: the checkpoint has done its job
            if job.algorithm == "central":
                central[key] = doc["final"]["accuracy"]
            runs.append(RunResult(job.algorithm, job.seed, job.path, doc, job.groups.tag, job.kept is not None,
                                  job.resume))
        return runs

    def _announce(self) -> None:
        if self.quiet:
            return
        for label, jobs in (("skipped {n} existing result{s}", [j for j in self.jobs if j.kept is not None]),
                            ("resuming {n} run{s} from {its} checkpoint{s}", [j for j in self.jobs if j.resume])):
            if jobs:
                head = label.format(n=len(jobs), s="" if len(jobs) == 1 else "s", its="its" if len(jobs) == 1 else "their")
                shown = ", ".join(j.path.name for j in jobs[:8]) + (", ..." if len(jobs) > 8 else "")
                print(f"{head}: {shown}", file=sys.stderr)

    def _train(self, job: _Job, algorithm, central_acc: float | None) -> dict:
        from hetbench.progress import progress_bar, train_status
        from hetbench.train.simulation import run_training

        label = " ".join(x for x in (algorithm.name, job.groups.tag, f"s{job.seed}") if x)
        done = [0]
        latest: dict = {}  # the last training loss and the last evaluation's accuracy, for the bar's text

        def advance(r: int, summary: dict) -> None:
            latest.update((k, summary[k]) for k in ("train_loss", "accuracy") if summary.get(k) is not None)
            bar.update(advance=r - done[0], status=train_status(latest))  # a resumed run starts past round 1
            done[0] = r

        with progress_bar(label, job.config.rounds, quiet=self.quiet, unit="round") as bar:
            if self.engine == "flower":
                from hetbench.flower.job import FlowerJob
                from hetbench.flower.simulation import run_flower_simulation

                from hetbench.train.algorithms import options_for

                flower_job = FlowerJob.make(self.split_path, job.algorithm, job.config,
                                            options_for(job.algorithm, self.hyper))
                return run_flower_simulation(flower_job, self.view(job.groups), actors=self.flower_actors,
                                             central_accuracy=central_acc, on_round=advance,
                                             workers=job.config.workers)
            checkpoint = job.checkpoint if (job.config.checkpoint_every or job.resume) else None
            return run_training(self.view(job.groups), algorithm, job.config, central_accuracy=central_acc,
                                on_round=advance, checkpoint=checkpoint, resume=job.resume)


def _tagged(path: Path, tag: str | None, seed: int) -> Path:
    """``path`` (``<stem>-s<seed>.json``) with the group tag before the seed; unchanged without one."""
    if tag is None:
        return path
    suffix = f"-s{seed}.json"
    assert path.name.endswith(suffix), path
    return path.with_name(f"{path.name[: -len(suffix)]}-{tag}{suffix}")


def _jsonable(value: Any) -> Any:
    """``value`` as it reads back from a results JSON (tuples become lists, numpy scalars numbers)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
