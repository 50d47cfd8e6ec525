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
from typing import Any, Sequence

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import Claim, claim_ids, load_claim
from hetbench.reproduce.estimates import estimate_claims
from hetbench.reproduce.run_inputs import check_metadata, checked_claims, seeds_of
from hetbench.reproduce.runners import RUNNERS
from hetbench.reproduce.write import coverage

DEFAULT_OUT = "hetbench_claims"
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

    ids, seed_list, loaded = checked_claims(claims, mode, seeds)
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
