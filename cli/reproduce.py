"""``hetbench reproduce``: check the seed papers' headline claims and write their verdicts."""

from __future__ import annotations

import click

from hetbench.errors import HetbenchError
from hetbench.reproduce import DEFAULT_OUT, claim_ids, dry_run as estimate_claims, reproduce as run_claims


@click.command("reproduce")
@click.option("--claims", default="all", show_default=True, metavar="ID,...|all",
              help=f"Claims to check: all, or a comma list of {', '.join(claim_ids())}.")
@click.option("--quick/--full", default=True, show_default=True,
              help="Quick: small models, few rounds, reduced grids, same protocol (minutes on 2 CPU cores). Full: the "
              "papers' settings where the data allow (meant for a GPU, see --device).")
@click.option("--smoke", is_flag=True, help="Every claim with toy settings through the same code, in seconds: checks "
              "that this installation runs them; its numbers decide nothing (every verdict is 'no verdict').")
@click.option("--seeds", default=None, metavar="0,1,2,3,4",
              help="Seeds of every claim (default: each claim's quick seeds with --quick, 0,1,2,3,4 with --full); "
              "a claim whose numbers vary with the seed needs at least 5.")
@click.option("--out", default=DEFAULT_OUT, show_default=True, type=click.Path(file_okay=False),
              help="Output folder: claims.md, claims.html (self-contained), claims.json, plots/, runs/.")
@click.option("--metadata", default=None, metavar="TABLE",
              help="A real geo-tagged table for hsu-geo-clients; inat2017:train2017.json+train2017_locations.json "
              "also compares with TFF's exact counts (without it those checks are 'not run').")
@click.option("--data", multiple=True, metavar="KEY=FOLDER_OR_HUB_ID",
              help="The paper's own data set where you have it, e.g. cifar10=~/data/cifar10 (Hugging Face's "
              "parquet layout or a cached hub id; nothing downloads): claims that declare it run on it in place "
              "of their built-in source.")
@click.option("--device", default="auto", show_default=True,
              help="Where models train: auto (cuda when torch sees a GPU, else cpu), cpu, cuda, cuda:N or mps.")
@click.option("--threads", default=None, type=int, help="Torch threads of the centralised runs (default 1, as "
              "hetbench train); federated runs train one client per worker thread.")
@click.option("--dry-run", is_flag=True, help="Run nothing: estimate each claim's training time on this machine's "
              "device (its models timed here; a floor) and exit.")
@click.option("--allow-cpu", is_flag=True, help="Run --full even where training would run on a CPU (refused "
              "otherwise, with the estimate: days on a laptop).")
@click.option("--store", default=None, type=click.Path(file_okay=False),
              help="The run store: every training run is kept there as it finishes and reused when asked again "
              "(default: --out's runs/; give one folder to share runs between outputs).")
@click.option("--budget", default=None, type=float, metavar="SECONDS",
              help="Start no new training run after this many seconds; claims whose runs are missing are "
              "'not run (k of n runs)', and the same command continues them.")
@click.option("--prune-store", is_flag=True, help="After each claim whose runs are all there, remove its records "
              "that it did not read from the store (runs of settings it no longer has).")
@click.option("--overwrite", is_flag=True, help="Replace --out's reports if it exists (its run store is kept and "
              "reused).")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines and no summary.")
def reproduce(claims: str, quick: bool, smoke: bool, seeds: str | None, out: str, metadata: str | None,
              data: tuple[str, ...], device: str, threads: int | None, dry_run: bool, allow_cpu: bool,
              store: str | None, budget: float | None, prune_store: bool, overwrite: bool, quiet: bool) -> None:
    """Check published claims (Hsu et al., HeteroSwitch, Borazjani et al., DapperFL) against declared criteria.

    Each claim's definition (manifests/claims/<id>.yaml) declares its protocol and the criterion that
    decides each check before anything runs: reproduced (the whole 95% t interval, paired by seed, is on
    the claimed side of the declared margin), not reproduced (the whole interval on the other side) or
    inconclusive (it straddles the margin); a claim is partially reproduced only when its checks disagree,
    and 'not run' when its data is missing, with the reason.

    \b
    Examples:
      hetbench reproduce --claims dapperfl-footprint,hsu-geo-clients --out claims
      hetbench reproduce --quick --claims all --out claims --overwrite
      hetbench reproduce --full --claims hsu-label-skew --device cuda --out claims-full
      hetbench reproduce --full --dry-run
      hetbench reproduce --quick --claims all --out claims --budget 1800   # again later: continues
      hetbench reproduce --smoke --out claims-smoke   # seconds: does it run here? (no verdicts)
      hetbench reproduce --quick --claims hsu-label-skew --data cifar10=~/data/cifar10 --out claims-cifar
    \f

    Parameters
    ----------
    claims, quick, seeds, out, metadata, data, device, threads, allow_cpu, store, budget, prune_store, overwrite, quiet
        As :func:`hetbench.reproduce.reproduce` (``quick`` False is ``mode="full"``).
    smoke : bool
        ``mode="smoke"``: toy settings, no verdicts (refused with ``--full``).
    dry_run : bool
        Print each claim's estimated training time here (:func:`hetbench.reproduce.dry_run`) instead.

    Returns
    -------
    None
        Writes the folder; prints one line per claim (id, verdict, seconds) and where it wrote.
    """
    if smoke and not quick:
        raise HetbenchError("--smoke and --full exclude each other (--smoke runs toy settings; --full the papers')")
    mode = "smoke" if smoke else "quick" if quick else "full"
    if dry_run:
        width = max(len(i) for i in claim_ids())

        def header(resolved: str, ids: list[str]) -> None:
            click.echo(f"{mode} mode on {resolved}: estimated training time (the trainer timed here on each "
                       "claim's model, batch and clients per round; building splits and loading data not included)")

        _, costs = estimate_claims(claims, mode, seeds, device, on_start=header,
                                   on_claim=lambda cost: click.echo(cost.line(width)))
        from hetbench.reproduce.cost import format_duration

        click.echo(f"{'total':<{width}}  {format_duration(sum(c.seconds for c in costs)):>9}")
        return
    done = run_claims(claims, mode, seeds, out, overwrite=overwrite, quiet=quiet, device=device, metadata=metadata,
                      threads=threads, allow_cpu=allow_cpu, store=store, budget=budget, prune_store=prune_store,
                      data=data or None)
    if not quiet:
        for line in done.summary():
            click.echo(line)
