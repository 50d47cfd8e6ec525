"""``hetbench leaderboard``: rank the ``hetbench train`` results of a folder."""

from __future__ import annotations

import click

from hetbench.leaderboard import DEFAULT_RANK_BY, DEFAULT_STATISTIC, METRIC_NAMES, STATISTICS, write_leaderboard


@click.command("leaderboard", short_help="Rank train results per split (Markdown, CSV, HTML, curves).")
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Output folder: leaderboard.md, leaderboard.csv, leaderboard.html, curves_<split>.png (learning "
                   "curves, then a panel per algorithm diagnostic the results record, e.g. SCAFFOLD's ||c||).")
@click.option("--rank-by", default=DEFAULT_RANK_BY, show_default=True, metavar="METRIC",
              help=f"Metric to rank by, in its own direction: {', '.join(METRIC_NAMES)}.")
@click.option("--statistic", default=DEFAULT_STATISTIC, show_default=True, type=click.Choice(STATISTICS),
              help="What the per-evaluation metrics (accuracy, client acc., worst group, group var., trained-on/unseen "
                   "acc., mean drop) take of each seed's curve: last-k = mean of the last k evaluations (the run's "
                   "--last-k), best = best evaluation, final = last evaluation. It ranks and fills those columns.")
@click.option("--reference", "references", multiple=True, metavar="ALGO",
              help="An algorithm shown apart for scale and never ranked, like central (always a reference); repeat "
                   "for several.")
@click.option("--settle-evaluations", default=4, show_default=True, type=click.IntRange(min=3),
              help="Settling rule: how many last evaluations of the seed-mean test accuracy the fitted line spans.")
@click.option("--settle-max-change", default=3.0, show_default=True, type=click.FloatRange(min=0.0),
              help="Settling rule: the most (accuracy points) that line may move; a row moving more is marked "
                   "unsettled and never bold (the rule hetbench reproduce decides claims by).")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--quiet", "-q", is_flag=True, help="No summary line (skipped-file warnings still go to stderr).")
def leaderboard(results_dir: str, out: str, rank_by: str, statistic: str, references: tuple[str, ...],
                settle_evaluations: int, settle_max_change: float, overwrite: bool, quiet: bool) -> None:
    """Aggregate train results (*.json, searched recursively) over seeds and rank them per split.

    \b
    Examples:
      hetbench leaderboard results/ --out leaderboard
      hetbench leaderboard results/ --out lb --rank-by group_accuracy_variance --overwrite
      hetbench leaderboard results/ --out lb --rank-by accuracy --statistic best
      hetbench leaderboard results/ --out lb --reference fedavg --settle-evaluations 6 --overwrite
    \f

    Parameters
    ----------
    results_dir : str
        The folder of train results.
    out : str
        The output folder.
    rank_by : str
        The metric to rank by.
    statistic : str
        ``last-k``, ``best`` or ``final``: what per-evaluation metrics take of each seed's curve.
    references : tuple[str, ...]
        Algorithms shown apart, never ranked (besides central).
    settle_evaluations, settle_max_change : int, float
        The settling rule.
    overwrite : bool
        Replace ``out`` if it exists.
    quiet : bool
        Print no summary line.

    Returns
    -------
    None
        Writes the folder with :func:`hetbench.leaderboard.write_leaderboard`; prints its warnings
        (stderr) and summary (stdout).
    """
    written = write_leaderboard(results_dir, out, rank_by=rank_by, overwrite=overwrite, statistic=statistic,
                                settle_evaluations=settle_evaluations, settle_max_change=settle_max_change,
                                references=references)
    for line in written.warnings():
        click.echo(line, err=True)
    if not quiet:
        click.echo(written.summary())
