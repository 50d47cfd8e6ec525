"""``hetbench report``, ``hetbench verify`` and ``hetbench publish``: work on a built folder."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hetbench.errors import HetbenchError


@click.command("report")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--quiet", "-q", is_flag=True)
def report(folder: str, quiet: bool) -> None:
    """Rebuild report.json and the plots of a built folder from its parquet files.

    Example: hetbench report hetbench_splits/digits-dirichlet-client-a0.5-n10-s0
    """
    import shutil
    import tempfile

    from hetbench.publish.manifest import read_manifest
    from hetbench.publish import read_built_columns
    from hetbench.report import compute_report, write_report

    manifest = read_manifest(folder)
    cols = read_built_columns(folder)
    rep = compute_report(
        {s: c["client_id"] for s, c in cols.items()},
        {s: c["label"] for s, c in cols.items()},
        manifest["class_names"],
        manifest["client_names"],
        manifest.get("dropped"),
        train_split="train",
    )
    old_path = Path(folder) / "report.json"
    if old_path.is_file():  # keep family-specific entries (device statistics, skipped files, ...)
        import json

        try:
            old = json.loads(old_path.read_text())
        except json.JSONDecodeError:
            old = {}
        rep.update({k: v for k, v in old.items() if k not in rep})
    # write beside, then swap in, so a failure leaves the old report intact
    with tempfile.TemporaryDirectory(dir=folder, prefix=".report-") as tmp:
        write_report(rep, Path(tmp))
        (Path(folder) / "plots").mkdir(exist_ok=True)
        for f in (Path(tmp) / "plots").iterdir():
            shutil.move(str(f), Path(folder) / "plots" / f.name)
        shutil.move(str(Path(tmp) / "report.json"), Path(folder) / "report.json")
    if not quiet:
        click.echo(f"{folder}: {rep['num_clients']} clients, {rep['num_samples']:,} training samples, EMD {rep['emd']:.4f}; report.json and plots/ rewritten")


@click.command("verify")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--dataset", default=None, help="Load the source from here instead of the path recorded in the manifest.")
def verify(folder: str, dataset: str | None) -> None:
    """Recompute the assignment from hetbench.json and the source; exit 0 if it matches, 1 if not.

    Example: hetbench verify hetbench_splits/digits-dirichlet-client-a0.5-n10-s0
    """
    from hetbench import verify as verify_split

    verdict = verify_split(folder, dataset)
    click.echo(verdict.message)
    sys.exit(0 if verdict.ok else 1)


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
    import numpy as np

    from hetbench.clustering import zeta

    if dataset is not None:
        if folders or not embedders or len(embedders.split(",")) != 2:
            raise HetbenchError("with --dataset, give --embedders A,B and no folders")
        from hetbench.partitioners import EmbeddingPartitioner
        from hetbench.sources import load_table

        table = load_table(dataset)
        a, b = (EmbeddingPartitioner(clusters=clusters, embedder=e.strip()).cluster_labels(table, "train", seed)
                for e in embedders.split(","))
        click.echo(f"zeta = {zeta(a, b):.6f}  ({embedders}, k = {clusters}, {len(a):,} samples of {dataset})")
        return
    if len(folders) != 2:
        raise HetbenchError("give two built folders (or --dataset with --embedders)")
    clusterings = []
    for folder in folders:
        clusterings.append(_clusters_by_sample(folder))
    common = sorted(set(clusterings[0]) & set(clusterings[1]))
    if not common:
        raise HetbenchError("the two builds share no sample ids")
    a = np.array([clusterings[0][s] for s in common])
    b = np.array([clusterings[1][s] for s in common])
    click.echo(f"zeta = {zeta(a, b):.6f}  ({len(common):,} shared samples)")


def _clusters_by_sample(folder: str) -> dict:
    """sample id -> cluster of every row of a built embedding split."""
    import pyarrow.parquet as pq

    from hetbench.publish.manifest import read_manifest

    manifest = read_manifest(folder)
    id_col = manifest["source"].get("id_col")
    if not id_col:
        raise HetbenchError(f"'{folder}' has no sample-id column to align on (build it with --id-col)")
    out: dict = {}
    for split, info in manifest["splits"].items():
        for f in info["files"]:
            schema = pq.read_schema(Path(folder) / f)
            if "cluster" not in schema.names:
                raise HetbenchError(f"'{folder}' has no cluster column: build it with 'hetbench partition embedding'")
            t = pq.read_table(Path(folder) / f, columns=[id_col, "cluster"])
            out.update(zip(t.column(id_col).to_pylist(), t.column("cluster").to_pylist()))
    return out
