"""Sweeps: every algorithm x every seed on one split, one results file per run (what ``hetbench train`` does).

The path from a published split to the results::

    split --load_federated--> FederatedData --run_training (algorithm, seed)--> results document
          --write_result--> <out>/<split name>/<algorithm>[-<non-default params>]-s<seed>.json

:func:`sweep` checks every option and that no result file would be replaced before any training; within
a seed the centralised run goes first, so the others get their accuracy relative to it (and a default
target accuracy). The file format and names are in ``docs/output-contract.md``.

:func:`default_split` is the split ``hetbench train`` uses without ``--split``: the label-Dirichlet split
of the built-in digits that ``hetbench partition dirichlet`` writes by default, built on first use through
:func:`hetbench.pipeline.make_split`.

This module imports torch only when a sweep runs.
"""

from __future__ import annotations

import dataclasses
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

DEFAULT_SOURCE = "builtin:digits"
DEFAULT_TAG = "dirichlet-client-a0.5-n10"
DEFAULT_SPLIT = default_out_dir(DEFAULT_SOURCE, DEFAULT_TAG, 0)
"""Where ``hetbench partition dirichlet`` puts its default split (built-in digits, client scheme,
alpha 0.5, 10 clients, seed 0), relative to the working directory."""


@dataclass(frozen=True)
class RunResult:
    """One run of a sweep: the algorithm, the seed, where its results file is and what it holds."""

    algorithm: str
    seed: int
    path: Path
    doc: dict[str, Any]


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
        Options shared by every run (rounds, clients per round, local epochs, ...); its ``seed`` is replaced
        by each of ``seeds``. None: the defaults of :class:`~hetbench.train.algorithms.TrainConfig`.
    hyper : mapping, optional
        Algorithm hyper-parameters by name (``mu``, ``server_momentum``, ``pruning_ratios``, ...); None or
        missing: each paper's default. Each is range-checked; an algorithm ignores those it does not use.
    out : path
        Results folder: ``<out>/<split name>/<algorithm>[-<non-default params>]-s<seed>.json``.
    overwrite : bool
        Replace existing result files (else any existing one is refused before training starts).
    quiet : bool
        No progress bars.
    threads : int, optional
        Torch threads for the centralised run and evaluation (restored afterwards); None: torch's setting.

    Returns
    -------
    list of RunResult
        Seed by seed, the centralised run first, then the algorithms in the order given.

    Raises
    ------
    HetbenchError
        For an unknown algorithm, an option out of range, a split that cannot be read, or a result file
        that exists (without ``overwrite``); ``TrainingDiverged`` when a run's loss becomes NaN/inf.

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
    """
    from hetbench.train.algorithms import TrainConfig, make_algorithm

    names = algorithm_names(algorithms)
    if threads is not None and not (math.isfinite(threads) and threads > 0):
        raise HetbenchError(f"--threads must be a positive number (got {threads})")
    config = config if config is not None else TrainConfig()
    seeds = [config.seed] if seeds is None else [seeds] if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seeds:
        raise HetbenchError("--seed is empty")
    hyper = dict(hyper or {})
    algos = {a: make_algorithm(a, **hyper) for a in names}  # unknown names and bad values fail here
    for s in seeds:  # every seed is checked before any run writes a result
        dataclasses.replace(config, seed=s).check()
    if "central" in names:  # first, so the others get relative accuracy and a default target
        names = ["central"] + [a for a in names if a != "central"]

    import torch

    saved_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        return _run_all(split, names, seeds, config, hyper, algos, Path(out), overwrite, quiet)
    finally:
        torch.set_num_threads(saved_threads)


def _run_all(split, names, seeds, config, hyper, algos, out: Path, overwrite: bool, quiet: bool) -> list[RunResult]:
    from hetbench.train.algorithms import make_algorithm
    from hetbench.train.data import load_federated
    from hetbench.train.results import check_free, result_path, write_result

    split_path = str(split) if split is not None else str(default_split(quiet))
    data = load_federated(split_path, config.image_size, config.group_by, quiet=quiet)
    paths = {
        (a, s): result_path(out, data.name, a, algos[a].params, type(algos[a]).defaults, s)
        for a in names for s in seeds
    }
    check_free(list(paths.values()), overwrite)
    runs = []
    for s in seeds:
        central_acc = None
        for a in names:
            algorithm = make_algorithm(a, **hyper)  # fresh state per run
            doc = _run_one(data, algorithm, dataclasses.replace(config, seed=s), central_acc, quiet)
            if a == "central":
                central_acc = doc["final"]["accuracy"]
            write_result(doc, paths[(a, s)])
            runs.append(RunResult(a, s, paths[(a, s)], doc))
    return runs


def _run_one(data, algorithm, config, central_acc, quiet: bool) -> dict:
    from hetbench.progress import progress_bar
    from hetbench.train.simulation import run_training

    with progress_bar(f"{algorithm.name} s{config.seed}", config.rounds, quiet=quiet) as bar:
        return run_training(data, algorithm, config, central_accuracy=central_acc,
                            on_round=lambda r, s: bar.update(advance=1))
