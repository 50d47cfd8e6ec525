"""``hetbench report``, ``hetbench verify`` and ``hetbench publish``: work on a built folder."""

from __future__ import annotations

import sys

import click

from hetbench.errors import HetbenchError


@click.command("report", short_help="Rebuild report.json, the plots and the card's statistics of a built folder.")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--quiet", "-q", is_flag=True)
def report(folder: str, quiet: bool) -> None:
    """Rebuild report.json and the plots of a built folder from its parquet files, and the dataset card's
    statistics sections (README.md: from "Heterogeneity" up to "Use") from the new report.

    Example: hetbench report hetbench_splits/digits-dirichlet-client-a0.5-n10-s0
    """
    from hetbench.tools.card_refresh import refresh_card
    from hetbench.tools.report_refresh import refresh_report

    rep = refresh_report(folder)
    carded = refresh_card(folder)
    if not quiet:
        tail = ("report.json, plots/ and README.md's statistics rewritten" if carded else
                "report.json and plots/ rewritten; README.md left as it was (not laid out as hetbench writes cards)")
        click.echo(f"{folder}: {rep['num_clients']} clients, {rep['num_samples']:,} training samples, EMD {rep['emd']:.4f}; {tail}")


@click.command("verify", short_help="Check a built folder against its manifest and recipe (exit 0/1).")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--dataset", default=None, help="Load the source from here instead of the path recorded in the manifest.")
@click.option("--re-embed", is_flag=True,
              help="Embedding splits of the task embedder: embed the source again and report the drift from the stored "
                   "embeddings (float training differs between CPUs: never a failure).")
@click.option("--trust-embedder", is_flag=True,
              help="Embedding splits of a user's model (torch:, torchscript:, onnx:): run that model (code the folder "
                   "names) and report the drift; without this flag verify never loads it.")
def verify(folder: str, dataset: str | None, re_embed: bool, trust_embedder: bool) -> None:
    """Check a built folder by content: its shards, column digests and names against hetbench.json,
    then the recipe re-run on the source (embedding splits: from their stored embeddings). Exit 0 OK,
    1 FAILED (the folder does not hold what its manifest and recipe say), 2 cannot check (malformed
    manifest, unsafe path, missing source, a user's embedder without --trust-embedder).

    Example: hetbench verify hetbench_splits/digits-dirichlet-client-a0.5-n10-s0
    """
    from hetbench import verify as verify_split

    from hetbench.cli.flags import flag_namer

    verdict = verify_split(folder, dataset, re_embed=re_embed, trust_embedder=trust_embedder)
    click.echo(verdict.naming(flag_namer(click.get_current_context().command)), err=verdict.exit_code == 2)
    sys.exit(verdict.exit_code)


@click.command("publish", short_help="Upload a built folder to the Hugging Face Hub.")
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


@click.command("compare-clusterings", short_help="Clustering similarity zeta of two embedding clusterings.")
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
    from hetbench.tools.clusterings import compare_builds, compare_embedders

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


@click.command("export", short_help="Write a source's table to a CSV or parquet file (sample inputs).")
@click.argument("source")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="File to write: .csv or .parquet (by extension).")
@click.option("--split", default="train", show_default=True, help="The source split to write.")
@click.option("--label-col", default=None, help="Label column, where the source does not name one.")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--quiet", "-q", is_flag=True, help="No summary line.")
def export(source: str, out: str, split: str, label_col: str | None, overwrite: bool, quiet: bool) -> None:
    """Write one split of a source (a built-in, a file, a build) to a CSV or parquet file. Parquet keeps
    every column, images included; CSV keeps the metadata columns only (labels as class names).

    \b
    Examples:
      hetbench export builtin:observations --out obs.csv
      hetbench export builtin:digits --out digits.parquet
    """
    from hetbench.export import export_table

    path, rows, columns = export_table(source, out, split=split, label_col=label_col, overwrite=overwrite)
    if not quiet:
        click.echo(f"wrote {path}: {rows:,} rows, columns {', '.join(columns)}")
