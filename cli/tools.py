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

    from hetbench.manifest import read_manifest
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
    from hetbench.verify import verify_folder

    verdict = verify_folder(folder, dataset)
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
    from hetbench.hub import upload_folder

    url = upload_folder(folder, repo_id, private=private, token=token)
    click.echo(f"uploaded {folder} to {url}")
