"""``hetbench verify``: does a built folder still say what its manifest says, and can it be rebuilt?

Three checks, each naming what failed:

1. the manifest's per-client sample ids hash to its ``assignment_sha256`` (the ids were not edited);
2. the source, loaded again, has the recorded input fingerprint, and re-running the recorded recipe
   gives the recorded split fingerprint and the same per-client sample ids;
3. the parquet files hold the same rows with the same ``client_id`` as the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.publish.manifest import assignment_digest, client_sample_ids, read_manifest


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str


#: recipe method -> function re-running a build that renders its own rows (``hetbench.builders.rebuilders()``)
Rebuilders = Mapping[str, Callable[[dict], Any]]


def rebuild(manifest: dict, dataset: str | None = None, rebuilders: Rebuilders | None = None):
    """Re-run a manifest's recipe on its source (or on ``dataset``): returns the FederatedSplit.

    A split whose rows a builder rendered (its recipe method is in ``rebuilders``) is re-rendered by
    that builder; the layer above passes the builders in, so this module never imports them.
    """
    from hetbench.partitioners import get_partitioner
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    method = manifest["recipe"]["partition"]["method"]
    builder = (rebuilders or {}).get(method)
    if builder is not None:  # a builder renders its own table: re-run the whole build
        return builder(manifest)
    src = manifest["source"]
    table = load_table(dataset or src["dataset"], src.get("label_col"), src.get("id_col"))
    if table.fingerprint != manifest.get("input_fingerprint"):
        raise HetbenchError(
            f"the source '{dataset or src['dataset']}' differs from the one this split was built from "
            "(input fingerprint mismatch)"
        )
    recipe = manifest["recipe"]
    part = recipe["partition"]
    partitioner = get_partitioner(part["method"], part["params"])
    return build_split(
        table,
        partitioner,
        seed=part["seed"],
        test_split=recipe["test_split"],
        test_fraction=recipe.get("test_fraction") or 0.2,
        train_split=recipe.get("train_split", "train"),
    )


def verify_folder(folder: str | Path, dataset: str | None = None, rebuilders: Rebuilders | None = None) -> Verdict:
    """Check a built folder against its manifest and its source (module notes); never raises on a
    mismatch, which is a failed :class:`Verdict`."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    manifest = read_manifest(folder)
    if assignment_digest(manifest["sample_ids"]) != manifest["assignment_sha256"]:
        return Verdict(False, "FAILED: the per-client sample ids in hetbench.json were changed after the build")
    try:
        fs = rebuild(manifest, dataset, rebuilders)
    except HetbenchError as exc:
        return Verdict(False, f"FAILED: {exc}")
    if fs.partition.fingerprint != manifest["partition_fingerprint"]:
        return Verdict(False, "FAILED: re-running the recipe gives a different partition (partition fingerprint mismatch)")
    if fs.fingerprint != manifest["split_fingerprint"]:
        return Verdict(False, "FAILED: re-running the recipe gives different splits (split fingerprint mismatch)")
    if client_sample_ids(fs) != manifest["sample_ids"]:
        return Verdict(False, "FAILED: the manifest's per-client sample ids differ from the recomputed ones")
    id_col = fs.table.id_column
    for split, rows in fs.outputs.items():
        files = manifest["splits"].get(split, {}).get("files", [])
        missing = [f for f in files if not (folder / f).is_file()]
        if missing or not files:
            return Verdict(False, f"FAILED: split '{split}' has missing parquet files: {', '.join(missing) or 'none listed'}")
        cols = ["client_id"] + ([id_col] if id_col else [])
        try:
            tables = [pq.read_table(folder / f, columns=cols) for f in files]
        except Exception as exc:  # unreadable or column-less parquet: a failed verification, not a crash
            return Verdict(False, f"FAILED: cannot read the parquet files of split '{split}': {exc}")
        cids = np.concatenate([t.column("client_id").to_numpy() for t in tables])
        if cids.size != len(rows) or not np.array_equal(cids, rows.client_ids):
            return Verdict(False, f"FAILED: the client_id column of split '{split}' differs from the manifest")
        if id_col:
            ids = np.concatenate([t.column(id_col).to_numpy(zero_copy_only=False) for t in tables])
            expected = fs.table.ids(rows.source_split)[rows.rows]
            if not np.array_equal(ids.astype(str), expected.astype(str)):
                return Verdict(False, f"FAILED: the rows of split '{split}' differ from the manifest ('{id_col}' mismatch)")
    n = sum(len(r) for r in fs.outputs.values())
    return Verdict(True, f"OK: {fs.num_clients} clients, {n:,} rows, split fingerprint {fs.fingerprint[:16]} reproduced")
