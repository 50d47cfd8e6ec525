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
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--quiet", "-q", is_flag=True, help="No summary line (skipped-file warnings still go to stderr).")
def leaderboard(results_dir: str, out: str, rank_by: str, statistic: str, overwrite: bool, quiet: bool) -> None:
    """Aggregate train results (*.json, searched recursively) over seeds and rank them per split.

    \b
    Examples:
      hetbench leaderboard results/ --out leaderboard
      hetbench leaderboard results/ --out lb --rank-by group_accuracy_variance --overwrite
      hetbench leaderboard results/ --out lb --rank-by accuracy --statistic best
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
    written = write_leaderboard(results_dir, out, rank_by=rank_by, overwrite=overwrite, statistic=statistic)
    for line in written.warnings():
        click.echo(line, err=True)
    if not quiet:
        click.echo(written.summary())
