"""One claim of ``hetbench reproduce``: its runner, its settling rule, its checks and its plot
(:func:`run_claim`), with its training runs kept in and taken from the run store (:func:`run_stored`).

A claim whose runner cannot start a missing run because ``--budget`` has run out is ``not run``, with the
runs it had (``runs: [done, needed]``, counted by the store and the runner's own workloads).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from pathlib import Path
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import SMOKE, Claim
from hetbench.reproduce.criteria import NOT_RUN, combine, criterion_level, evaluate
from hetbench.reproduce.verdicts import NO_VERDICT
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.store import BudgetSpent, RunStore
from hetbench.reproduce.write import coverage


#: what a smoke run's every check says instead of a verdict
SMOKE_REASON = "smoke run: toy settings that check the code runs; its numbers decide nothing"


def _short(paper: str) -> str:
    """``Jia, Zhang, ... NeurIPS 2024.`` -> ``Jia et al. 2024``.

    Examples
    --------
    >>> from hetbench.reproduce.claim_run import _short
    >>> _short("Hsu, Qi and Brown. Measuring ... arXiv:1909.06335, 2019."), _short("Jia, Zhang. DapperFL. NeurIPS 2024.")
    ('Hsu et al. 2019', 'Jia et al. 2024')
    """
    first = re.split(r"[ ,.]", paper.strip(), maxsplit=1)[0]
    years = re.findall(r"(?<![\d.:])(19\d\d|20\d\d)(?![\d.]\d)", paper)  # not arXiv:1909.06335
    return f"{first} et al. {years[0]}" if years else first


def _base_record(claim: Claim, mode: str, seeds: list[int]) -> dict[str, Any]:
    return {"id": claim.id, "paper": claim.paper, "paper_short": _short(claim.paper), "where": claim.where,
            "claim": claim.claim, "protocol": claim.protocol, "notes": claim.notes, "runner": claim.runner,
            "settings": claim.settings[mode], "seeds": seeds}


def run_claim(claim: Claim, mode: str, seeds: list[int], ctx: Context, plots: Path) -> dict[str, Any]:
    """Run ``claim``'s runner with ``ctx``, judge its checks (after its settling rule) and draw its plot into
    ``plots``; returns its record for ``claims.json``. Missing or unreadable data make it ``not run``."""
    from hetbench.reproduce.plots import Panel, plot_claim

    settings = claim.settings[mode]
    record = _base_record(claim, mode, seeds)
    try:
        output = RUNNERS[claim.runner].run(settings, ctx)
    except HetbenchError as exc:  # missing or unreadable data: the claim is not run, with the reason
        return not_run_record(claim, mode, seeds, str(exc))
    settling = None
    if claim.settle is not None:
        from hetbench.reproduce.settling import settling_report

        settling = settling_report(ctx.runs, claim.settle)
        for m in output.measurements.values():
            if settling["unsettled"] and not m.not_run:
                m.unsettled = list(settling["unsettled"])
    checks, panels, not_run = [], [], []
    for k in claim.checks:
        m = output.measurements[k.measure]
        result = evaluate(m, k.criterion)
        checks.append({"measure": k.measure, "statement": k.statement, "criterion": k.criterion,
                       "verdict": result.verdict, "reason": result.reason, "numbers": result.numbers,
                       "measurement": m.as_dict(criterion_level(k.criterion)), **({"data": k.data} if k.data else {}),
                       **({"paper": k.paper} if k.paper else {})})
        if result.verdict == NOT_RUN:
            not_run.append((k.measure, result.reason))
        else:
            panels.append(Panel(k.measure, m, output.axes.get(k.measure) or _default_axes(), k.criterion, result,
                                k.paper))
    if mode == SMOKE:  # toy settings: the code ran; what the numbers would say is kept, as no verdict
        for c in checks:
            c["numbers"] = {**c["numbers"], "smoke_verdict": c["verdict"]}
            c["reason"] = f"{SMOKE_REASON} (at this scale the criterion gives: {c['verdict']})"
            c["verdict"] = NO_VERDICT if c["verdict"] != NOT_RUN else NOT_RUN
        panels = [p._replace(result=dataclasses.replace(p.result, verdict=NO_VERDICT)) for p in panels]
    verdict = combine([c["verdict"] for c in checks])
    plot = plots / f"{claim.id}.png"
    drawn = plot_claim(claim.id, verdict, panels, not_run, plot, coverage({"verdict": verdict, "checks": checks}))
    record.update(verdict=verdict, facts=output.facts, checks=checks,
                  plot=f"plots/{claim.id}.png" if drawn else None)
    if settling is not None:
        record["settling"] = settling
    return record


def _default_axes():
    from hetbench.reproduce.runners.base import Axes

    return Axes()




def runs_needed(claim: Claim, mode: str, seeds: list[int]) -> int:
    """How many training runs ``claim`` needs in ``mode`` with ``seeds`` (its runner's workloads)."""
    return int(sum(w.runs for w in RUNNERS[claim.runner].workloads(claim.settings[mode], seeds)))


def run_stored(claim: Claim, mode: str, seeds: list[int], store: RunStore, work: Path, plots: Path,
               device: str, metadata: str | None, threads: int | None, quiet: bool,
               prune: bool = False) -> tuple[dict[str, Any], float]:
    """Run ``claim`` with ``store`` as its runs' store; returns its record and its wall time. One progress
    line on stderr says the runs done of those needed and the verdict (unless ``quiet``). ``prune``: once
    every run of the claim was found or kept, remove its records that it did not read (:meth:`RunStore.prune`)."""
    needed = runs_needed(claim, mode, seeds)
    ctx = Context(work=work / claim.id, runs=work / claim.id / "results", seeds=seeds, mode=mode, quiet=quiet,
                  device=device, metadata=metadata, threads=threads, store=store)
    ctx.work.mkdir(parents=True)
    if not quiet:
        print(f"{claim.id}: running ({mode} mode, seeds {','.join(map(str, seeds))}; {needed} training runs)",
              file=sys.stderr)
    store.begin_claim(claim.id, RUNNERS[claim.runner].borrows_runs_from)
    start = time.perf_counter()
    try:
        record = run_claim(claim, mode, seeds, ctx, plots)
    except BudgetSpent:
        reason = f"{store.done} of {needed} runs: --budget ran out before the rest (run the command again)"
        record = not_run_record(claim, mode, seeds, reason)
    wall = time.perf_counter() - start
    record["seconds"] = round(wall, 1)  # wall time (the only clock-dependent field)
    if needed:
        records = store.records()
        own = [r for r in records if "borrowed_from" not in r]  # a borrowed run's time is its own claim's
        record["runs"] = {"done": store.done, "needed": needed, "store": f"{claim.id}/", "machines": machines(records),
                          "train_seconds": round(sum(float(r.get("seconds", 0.0)) for r in own), 1)}
        if len(own) < len(records):
            record["runs"]["borrowed"] = {"runs": len(records) - len(own),
                                          "from": sorted({r["borrowed_from"] for r in records if r not in own})}
    if prune and store.done >= needed:
        gone = store.prune()
        if gone and not quiet:
            print(f"{claim.id}: removed {len(gone)} record(s) from the store that it no longer reads", file=sys.stderr)
    if not quiet:
        print(f"{claim.id}: {store.done} of {needed} runs; {record['verdict']}{coverage(record)} ({wall:.1f} s)",
              file=sys.stderr)
    return record, wall


def machines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Which machines ran a claim's stored runs, and how many each (the committed records say who ran what).

    Examples
    --------
    >>> machines([{"machine": {"host": "a", "processor": "x86_64", "torch": "2.13.0"}}] * 2)
    [{'host': 'a', 'processor': 'x86_64', 'runs': 2, 'torch': '2.13.0'}]
    """
    counts: dict[tuple, int] = {}
    for r in records:
        m = r.get("machine") or {}
        key = (m.get("host", "?"), m.get("processor", "?"), m.get("torch", "?"))
        counts[key] = counts.get(key, 0) + 1
    return [{"host": h, "processor": p, "runs": n, "torch": t} for (h, p, t), n in sorted(counts.items())]


def not_run_record(claim: Claim, mode: str, seeds: list[int], reason: str) -> dict[str, Any]:
    """The record of a claim that could not run, every check ``not run`` with ``reason``."""
    record = _base_record(claim, mode, seeds)
    record.update(verdict=NOT_RUN, error=reason, facts={}, plot=None,
                  checks=[{"measure": k.measure, "statement": k.statement, "criterion": k.criterion,
                           "verdict": NOT_RUN, "reason": reason, "numbers": {}, "measurement": {}}
                          for k in claim.checks])
    return record
