"""``hetbench report``, ``hetbench verify`` and ``hetbench publish``: work on a built folder."""

from __future__ import annotations

import sys

import click

from hetbench.errors import HetbenchError


@click.command("report")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--quiet", "-q", is_flag=True)
def report(folder: str, quiet: bool) -> None:
    """Rebuild report.json and the plots of a built folder from its parquet files.

    Example: hetbench report hetbench_splits/digits-dirichlet-client-a0.5-n10-s0
    """
    from hetbench.report import refresh_report

    rep = refresh_report(folder)
    if not quiet:
        click.echo(f"{folder}: {rep['num_clients']} clients, {rep['num_samples']:,} training samples, EMD {rep['emd']:.4f}; report.json and plots/ rewritten")


@click.command("verify")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--dataset", default=None, help="Load the source from here instead of the path recorded in the manifest.")
def verify(folder: str, dataset: str | None) -> None:
    """Check a built folder by content: its shards, column digests and names against hetbench.json,
    then the recipe re-run on the source. Exit 0 OK, 1 FAILED (the folder does not hold what its
    manifest and recipe say), 2 cannot check (malformed manifest, unsafe path, missing source).

    Example: hetbench verify hetbench_splits/digits-dirichlet-client-a0.5-n10-s0
    """
    from hetbench import verify as verify_split

    verdict = verify_split(folder, dataset)
    click.echo(verdict.message, err=verdict.exit_code == 2)
    sys.exit(verdict.exit_code)


@click.command("publish")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--repo-id", required=True, help="Hub dataset repository, ORG/NAME.")
@click.option("--private", is_flag=True, help="Create the repository as private.")
@click.option("--token", default=None, envvar="HF_TOKEN", help="Hub token (default: $HF_TOKEN or the cached login).")
def publish(folder: str, repo_id: str, private: bool, token: str | None) -> None:
    """Upload a built folder to the Hugging Face hub as a dataset repository.

    Example: hetbench publish hetbench_splits/digits-dirichlet-client-a0.5-n10-s0 --repo-id me/digits-dir05
    """
    from hetbench.publish.hub import upload_folder

    url = upload_folder(folder, repo_id, private=private, token=token)
    click.echo(f"uploaded {folder} to {url}")


@click.command("compare-clusterings")
@click.argument("folders", nargs=-1, type=click.Path(file_okay=False))
@click.option("--dataset", default=None, help="Instead of two folders: cluster this data set under two embedders.")
@click.option("--embedders", default=None, help="With --dataset: two comma-separated embedder specs, e.g. pixels,hog.")
@click.option("--clusters", "-k", default=10, show_default=True, type=int)
@click.option("--seed", default=0, show_default=True, type=int)
def compare_clusterings(folders, dataset, embedders, clusters, seed) -> None:
    """Clustering similarity zeta (Borazjani et al. Eq. 4) of two embedding clusterings.

    \b
    Examples:
      hetbench compare-clusterings splits/emb-pixels splits/emb-hog
      hetbench compare-clusterings --dataset builtin:digits --embedders pixels,hog --clusters 10
    """
    from hetbench.report.clusterings import compare_builds, compare_embedders

    if dataset is not None:
        if folders or not embedders or len(embedders.split(",")) != 2:
            raise HetbenchError("with --dataset, give --embedders A,B and no folders")
        a, b = embedders.split(",")
        z, n = compare_embedders(dataset, (a, b), clusters, seed)
        click.echo(f"zeta = {z:.6f}  ({embedders}, k = {clusters}, {n:,} samples of {dataset})")
        return
    if len(folders) != 2:
        raise HetbenchError("give two built folders (or --dataset with --embedders)")
    z, n = compare_builds(*folders)
    click.echo(f"zeta = {z:.6f}  ({n:,} shared samples)")
