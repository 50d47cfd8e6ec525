"""``hetbench reproduce``: run the chosen claims and write their verdicts.

Every claim definition is loaded and validated, the seeds and the device checked, and the output folder
checked and locked before anything runs. Each claim's runner measures (building the splits it needs in a
scratch folder and training through :func:`hetbench.sweep.sweep`, every run kept in and taken from the run
store: :mod:`hetbench.reproduce.store`); each check's declared criterion turns its measurement into a
verdict; the claim's verdict combines its checks' (:func:`hetbench.reproduce.criteria.combine`;
:mod:`hetbench.reproduce.claim_run`). The folder (:mod:`hetbench.reproduce.output`):

    <out>/claims.json, claims.md, claims.html    the verdicts (claims.html is self-contained), moved in at the end
    <out>/plots/<id>.png                         one plot per claim that measured something
    <out>/runs/<id>/<key>.json                   the run store (unless --store names another folder): each
                                                 training run's identity, machine and results, as it finished

A runner that meets missing data (iNaturalist files, a ``--metadata`` table that cannot be read) reports
the check or the claim as ``not run`` with the reason; it is never counted as passed or failed.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import (ALL_MODES, SMOKE, Claim, check_seed_count, claim_ids, load_claim,
                                      replicated_seeds, select_claims)
from hetbench.reproduce.runners import RUNNERS
from hetbench.reproduce.write import coverage

DEFAULT_OUT = "hetbench_claims"
FULL_SEEDS = (0, 1, 2, 3, 4)
"""The seeds of ``--full`` when ``--seeds`` is not given (``--quick`` uses each claim's quick seeds)."""


@dataclass
class Reproduced:
    """What :func:`reproduce` wrote: the folder, the claims.json document and each claim's wall time."""

    out: Path
    doc: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> list[str]:
        """One line per claim (id, verdict, seconds) and the folder."""
        width = max(len(c["id"]) for c in self.doc["claims"])
        lines = [f"{c['id']:<{width}}  {c['verdict'] + coverage(c):<20}  {self.seconds.get(c['id'], 0):.1f} s"
                 for c in self.doc["claims"]]
        return lines + [f"wrote {self.out}/claims.md, claims.html, claims.json"]


@dataclass
class ClaimCost:
    """A claim's estimated training cost in one mode on one device (:mod:`hetbench.reproduce.cost`)."""

    id: str
    seconds: float
    runs: int
    examples: int

    def line(self, width: int) -> str:
        from hetbench.reproduce.cost import format_duration

        if not self.runs:
            return f"{self.id:<{width}}  no federated training (seconds)"
        return (f"{self.id:<{width}}  {format_duration(self.seconds):>9}  {self.runs} training runs, "
                f"{self.examples / 1e6:.3g}M training examples")


def estimate_claims(loaded: Sequence[Claim], mode: str, seeds: list[int] | None, device: str,
                    on_claim: Callable[[ClaimCost], None] | None = None, timings: dict | None = None
                    ) -> list[ClaimCost]:
    """Each claim's training cost in ``mode`` on ``device`` (this machine), from its runner's workloads
    timed here (:func:`hetbench.reproduce.cost.estimate`: a floor, training and evaluation arithmetic
    only).

    Parameters
    ----------
    loaded : sequence of Claim
        Validated claim definitions.
    mode : str
        ``quick`` or ``full``.
    seeds : list of int, optional
        ``--seeds``; None: the mode's default.
    device : str
        A resolved torch device (``cpu``, ``cuda``, ...).
    on_claim : callable, optional
        Called with each claim's cost as soon as it is estimated (timing a full-mode workload takes
        minutes on a loaded machine: the CLI prints each line then, not all at the end).
    timings : dict, optional
        A cache of the trainer's timings by workload shape, shared between calls (filled here).

    Examples
    --------
    >>> from hetbench.reproduce.claims import load_claim
    >>> [c.line(18) for c in estimate_claims([load_claim("dapperfl-footprint")], "full", None, "cpu")]
    ['dapperfl-footprint  no federated training (seconds)']
    """
    from hetbench.reproduce.cost import estimate

    timings = {} if timings is None else timings
    costs = []
    for claim in loaded:
        claim_seeds = seeds_of(claim, mode, seeds)
        work = RUNNERS[claim.runner].workloads(claim.settings[mode], claim_seeds)
        costs.append(ClaimCost(claim.id, estimate(work, device, timings=timings) if work else 0.0,
                               sum(w.runs for w in work), sum(w.runs * w.train_examples for w in work)))
        if on_claim is not None:
            on_claim(costs[-1])
    return costs


def dry_run(claims: str | None = "all", mode: str = "quick", seeds: str | Sequence[int] | None = None,
            device: str = "auto", on_start: Callable[[str, list[str]], None] | None = None,
            on_claim: Callable[[ClaimCost], None] | None = None) -> tuple[str, list[ClaimCost]]:
    """``hetbench reproduce --dry-run``: check the claims, seeds and device as :func:`reproduce` does,
    run nothing, and estimate each claim's training cost here (:func:`estimate_claims`). ``on_start``
    gets the resolved device and the claim ids before the first estimate, ``on_claim`` each cost as it
    is made.

    Returns
    -------
    tuple
        The resolved device (``cpu``, ``cuda:0``, ...) and one :class:`ClaimCost` per claim.

    Examples
    --------
    >>> device, costs = dry_run("hsu-geo-clients", "full")
    >>> [c.line(15) for c in costs]
    ['hsu-geo-clients  no federated training (seconds)']
    """
    from hetbench.train.device import resolve_device

    ids, seed_list, loaded = _checked_claims(claims, mode, seeds)
    resolved = str(resolve_device(device))
    if on_start is not None:
        on_start(resolved, ids)
    return resolved, estimate_claims(loaded, mode, seed_list, resolved, on_claim)


def _checked_claims(claims: str | None, mode: str, seeds: str | Sequence[int] | None
                    ) -> tuple[list[str], list[int] | None, list[Claim]]:
    """The claim ids, ``--seeds`` and validated definitions, or one line for an unknown id, mode or seed list,
    a definition that does not validate, or fewer seeds than a claim's statistics need."""
    ids = select_claims(claims)
    if mode not in ALL_MODES:
        raise HetbenchError(f"mode '{mode}' is not one of {', '.join(ALL_MODES)}")
    seed_list = parse_seeds(seeds)
    loaded = [load_claim(i) for i in ids]  # every definition validates before anything runs
    if seed_list is not None and mode != SMOKE:  # a smoke run decides nothing: any seeds
        for claim in loaded:
            check_seed_count(claim.id, seed_list, RUNNERS[claim.runner].seeded, "`seeds`")
    for claim in loaded:
        seeds_of(claim, mode, seed_list)  # a replicated claim refuses seeds its replicates would overlap
    return ids, seed_list, loaded


def seeds_of(claim: Claim, mode: str, seeds: list[int] | None) -> list[int]:
    """The seeds ``claim`` runs in ``mode`` for the seed set ``seeds`` (None: the mode's default: its quick
    ``seeds``, :data:`FULL_SEEDS` in full mode), each replicated as its settings declare
    (:func:`hetbench.reproduce.claims.replicated_seeds`).

    Examples
    --------
    >>> from hetbench.reproduce.claims import load_claim
    >>> from hetbench.reproduce.run import seeds_of
    >>> seeds_of(load_claim("hsu-label-skew"), "quick", [5, 6, 7, 8, 9])
    [5, 6, 7, 8, 9]
    """
    if seeds is None:
        seeds = list(FULL_SEEDS) if mode == "full" else list(claim.settings[mode].get("seeds", [0]))
    return replicated_seeds(claim.id, seeds, int(claim.settings[mode].get("replicates", 1)))


def check_metadata(metadata: str | None) -> None:
    """Refuse a ``--metadata`` that names nothing readable, before any claim runs (it used to make the
    metadata checks 'not run' while the run ended 'reproduced' with exit code 0).

    Parameters
    ----------
    metadata : str, optional
        A built-in, a local file or folder (or ``SPLIT=PATH,...``), ``inat2017:ANNOTATIONS.json+LOCATIONS.json``
        or a hub id; None: not given.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        An unknown built-in, a file that does not exist, an ``inat2017:`` source that does not name two files.

    Examples
    --------
    >>> check_metadata(None); check_metadata("builtin:observations")
    >>> check_metadata("nope.csv")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: metadata 'nope.csv' not found (no such file or folder, and not a built-in, an inat2017: source or a hub id)
    """
    from hetbench.sources.builtins import BUILTINS
    from hetbench.sources.hub import looks_like_hub_id

    if metadata is None:
        return
    if not metadata.strip():
        raise HetbenchError("`metadata` is empty; name a table, or leave `metadata` out")
    if metadata.startswith("inat2017:"):
        files = metadata[len("inat2017:"):].split("+")
        if len(files) != 2 or not all(f.strip() for f in files):
            raise HetbenchError(f"`metadata` '{metadata}' must name two files: inat2017:ANNOTATIONS.json+LOCATIONS.json")
        missing = [f for f in files if not Path(f).expanduser().is_file()]
        if missing:
            raise HetbenchError(f"`metadata` '{metadata}': {', '.join(repr(f) for f in missing)} not found")
        return
    if metadata.startswith("builtin:"):
        BUILTINS[metadata]  # an unknown name lists the valid ones
        return
    per_split = "=" in metadata and not Path(metadata).expanduser().exists()
    paths = [part.partition("=")[2].strip() for part in metadata.split(",")] if per_split else [metadata]
    for path in paths:
        if not (path and (Path(path).expanduser().exists() or looks_like_hub_id(path))):
            shown = metadata if path == metadata else f"{metadata}': '{path}"
            raise HetbenchError(f"`metadata` '{shown}' not found (no such file or folder, and not a built-in, an "
                                "inat2017: source or a hub id)")


def parse_seeds(seeds: str | Sequence[int] | None) -> list[int] | None:
    """``--seeds``: a comma list of distinct non-negative integers (None: the mode's default).

    Examples
    --------
    >>> from hetbench.reproduce.run import parse_seeds
    >>> parse_seeds("0, 1,2"), parse_seeds(None)
    ([0, 1, 2], None)
    >>> parse_seeds("0,x")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: seeds must be a comma list of non-negative integers (got '0,x')
    """
    if seeds is None:
        return None
    if isinstance(seeds, str):
        try:
            out = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise HetbenchError(f"`seeds` must be a comma list of non-negative integers (got '{seeds}')") from None
    else:
        out = [int(s) for s in seeds]
    if not out or any(s < 0 for s in out):
        raise HetbenchError(f"`seeds` must be a comma list of non-negative integers (got '{seeds}')")
    if len(set(out)) != len(out):
        raise HetbenchError(f"`seeds` names a seed twice ('{seeds}')")
    return out


def _refuse_full_on_cpu(training: list[Claim], seeds: list[int] | None, device: str, quiet: bool) -> None:
    from hetbench.reproduce.cost import format_duration

    if not quiet:
        print("full mode would train on this CPU: estimating its cost ...", file=sys.stderr, flush=True)
    costs = sorted(estimate_claims(training, "full", seeds, "cpu"), key=lambda c: -c.seconds)
    each = ", ".join(f"{c.id} {format_duration(c.seconds)}" for c in costs)
    why = "torch sees no GPU" if device == "auto" else f"--device {device}"
    raise HetbenchError(f"`full` trains on the CPU here ({why}): about "
                        f"{format_duration(sum(c.seconds for c in costs))} of training at least ({each}); run it "
                        "where a GPU is (`device` cuda), or pass `allow_cpu`; `dry_run` lists the estimates")


def reproduce(
    claims: str | None = "all",
    mode: str = "quick",
    seeds: str | Sequence[int] | None = None,
    out: str | os.PathLike = DEFAULT_OUT,
    *,
    overwrite: bool = False,
    quiet: bool = False,
    device: str = "auto",
    metadata: str | None = None,
    threads: int | None = None,
    allow_cpu: bool = False,
    store: str | os.PathLike | None = None,
    budget: float | None = None,
    prune_store: bool = False,
    data: str | Sequence[str] | None = None,
) -> Reproduced:
    """Run ``claims`` and write ``claims.json``, ``claims.md``, ``claims.html`` and the plots to ``out``.

    Parameters
    ----------
    claims : str, optional
        ``all`` (None) or a comma list of claim ids (:func:`hetbench.reproduce.claims.claim_ids`).
    mode : str
        ``quick`` (small models, few rounds: minutes on a laptop) or ``full`` (the papers' settings where
        the data allow; meant for a GPU), each claim's ``settings`` of that name; ``smoke`` (toy settings,
        seconds: checks that the code runs, and every verdict is ``no verdict``).
    seeds : str or sequence of int, optional
        Seeds of every claim; None: each claim's quick seeds in quick mode, 0 to 4 in full mode. A claim
        whose measurements vary with the seed needs at least :data:`~hetbench.reproduce.claims.MIN_SEEDS`.
    out : path
        The output folder, written atomically; refused if it exists unless ``overwrite``.
    overwrite : bool
        Replace an existing output of a hetbench command.
    quiet : bool
        No progress lines and no training progress bars.
    device : str
        Where training runs (``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``), as ``hetbench train --device``.
    metadata : str, optional
        A real geo-tagged table for ``hsu-geo-clients`` (``inat2017:ANNOTATIONS.json+LOCATIONS.json`` gives
        TFF's exact counts); without it those checks are ``not run``.
    threads : int, optional
        Torch threads for training and evaluation; None: torch's setting.
    allow_cpu : bool
        Run ``full`` mode even where training would run on a CPU (refused otherwise, with each claim's
        estimated cost: days on a laptop).
    store : path, optional
        The run store (:mod:`hetbench.reproduce.store`): every training run is kept there as it finishes and
        taken from there when it is asked again; None: ``out``'s ``runs/``. An interrupted command continues
        where it stopped when run again (:mod:`hetbench.reproduce.output`).
    budget : float, optional
        Seconds of this invocation after which no new training run starts; claims are still run in order,
        each from the store as far as it holds it, and one whose runs are missing is ``not run`` with ``k of
        n runs`` done. None: no limit.
    prune_store : bool
        After each claim whose runs were all found or kept, remove that claim's records the claim did not
        read from the store (runs of settings it no longer has): how a committed record stays compact.
    data : str or sequence of str, optional
        The papers' own data sets where the user has them, ``KEY=FOLDER_OR_HUB_ID`` (``cifar10=...``): a claim
        that declares ``paper_data: KEY`` runs on it in place of its ``source``
        (:mod:`hetbench.reproduce.paper_data`; its layout is checked before anything is written).

    Returns
    -------
    Reproduced
        The folder, the claims.json document and each claim's wall time.

    Raises
    ------
    HetbenchError
        Before anything runs: an unknown claim id (listing the valid ones), a mode or seeds out of range,
        fewer seeds than a claim's statistics need, a
        ``--metadata`` that names nothing readable (:func:`check_metadata`), a definition that does not validate, a device this machine lacks, an output folder that exists;
        ``full`` mode on a CPU without ``allow_cpu`` (with the estimate of :func:`estimate_claims`).

    Examples
    --------
    >>> from hetbench.reproduce import reproduce
    >>> done = reproduce("dapperfl-footprint", out="claims_example", quiet=True)
    >>> [(c["id"], c["verdict"]) for c in done.doc["claims"]]
    [('dapperfl-footprint', 'partially reproduced')]
    >>> sorted(p.name for p in done.out.iterdir())
    ['claims.html', 'claims.json', 'claims.md', 'plots']
    """
    from hetbench.atomic import check_out_dir, release_lock
    from hetbench.reproduce.claim_run import run_stored
    from hetbench.reproduce.output import begin, check_store_dir, interrupted, publish_reports
    from hetbench.reproduce.paper_data import check_data, parse_data, with_paper_data
    from hetbench.reproduce.store import RunStore
    from hetbench.version import __version__

    ids, seed_list, loaded = _checked_claims(claims, mode, seeds)
    check_metadata(metadata)
    data_refs = check_data(parse_data(data), loaded, [load_claim(c) for c in claim_ids()] if data else ())
    if threads is not None and not threads > 0:
        raise HetbenchError(f"`threads` must be a positive number (got {threads})")
    if any(RUNNERS[c.runner].trains for c in loaded):
        from hetbench.train.device import resolve_device

        resolved = resolve_device(device)  # a device this machine lacks is refused here
        if mode == "full" and resolved.type == "cpu" and not allow_cpu:
            _refuse_full_on_cpu([c for c in loaded if RUNNERS[c.runner].trains], seed_list, device, quiet)
    if budget is not None and not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
        raise HetbenchError(f"`budget` must be a positive number of seconds (got {budget})")
    inputs = {"--metadata": metadata}
    check_store_dir(store, out)
    check_out_dir(out, overwrite or interrupted(out), "claims", inputs)  # an interrupted output continues
    target = Path(out)
    deadline = None if budget is None else time.monotonic() + float(budget)
    records, seconds = [], {}
    try:
        work = begin(target)
        runs_store = RunStore.open(store if store is not None else target / "runs", deadline)
        (work / "plots").mkdir()
        try:
            for claim in loaded:
                claim_seeds = seeds_of(claim, mode, seed_list)
                claim, used = with_paper_data(claim, data_refs)
                record, seconds[claim.id] = run_stored(claim, mode, claim_seeds, runs_store, work, work / "plots",
                                                       device, metadata, threads, quiet, prune=prune_store)
                if used:
                    record["data"] = used  # the paper's data the claim ran on, in place of its source
                records.append(record)
            from hetbench.reproduce.write import machine_record, summary_counts, write_json, write_markdown
            from hetbench.reproduce.write_html import write_html

            doc = {"format": "hetbench-claims/1", "hetbench_version": __version__, "mode": mode,
                   "machine": machine_record(device), "claims_requested": ids, "summary": summary_counts(records),
                   "claims": records}

            def write(folder: Path) -> None:
                if any((work / "plots").iterdir()):
                    os.replace(work / "plots", folder / "plots")
                write_json(doc, folder / "claims.json")
                write_markdown(doc, folder / "claims.md")
                write_html(doc, folder / "claims.html", folder)

            publish_reports(target, write)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        release_lock(target)
    return Reproduced(Path(out), doc, seconds)
