"""``hetbench report <folder>``: recompute ``report.json``, ``report/clients.parquet`` and the plots
of a built folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.report.classes import CLASSES_FILE, PER_CLASS_KEYS
from hetbench.report.metrics import CLIENTS_FILE, PER_CLIENT_KEYS, Report, compute_report
from hetbench.report.plots import write_report


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _read_columns(folder: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """``client_id`` and ``label`` of every split; an unreadable shard is a :class:`HetbenchError`."""
    import pyarrow as pa

    from hetbench.contract.columns import read_built_columns

    try:
        return read_built_columns(folder)
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise HetbenchError(f"cannot read the parquet files of '{folder}': {_first_line(exc)}") from exc


def _clusters(folder: str | os.PathLike, report: dict[str, Any]):
    """(client ids, clusters) of the train rows of an embedding split; None for other splits."""
    import pyarrow as pa

    from hetbench.contract.columns import read_built_columns

    entry = report.get("embedding")
    if not isinstance(entry, dict) or not isinstance(entry.get("clusters"), int):
        return None
    try:
        cols = read_built_columns(folder, ("client_id", "cluster"))["train"]
    except (pa.ArrowException, OSError, KeyError, ValueError, HetbenchError):
        return None  # no cluster column: the histogram shows the label EMD only
    cid, clusters = cols["client_id"], cols["cluster"]
    if clusters.size and not (0 <= clusters.min() and clusters.max() < entry["clusters"]):
        return None
    return cid, clusters


def _feature_shift(folder: str | os.PathLike, manifest: dict[str, Any], cols: dict[str, dict[str, Any]], report):
    """The feature shift of a built folder whose report has none (an older build, or a deleted report), from
    its training shards; None when the shards hold no images."""
    import datasets
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hetbench.contract import shard_paths
    from hetbench.report.feature_entry import measure_rows
    from hetbench.report.groups import client_groups
    from hetbench.table import SampleTable

    paths = shard_paths(folder, manifest, "train")
    try:
        arrow = pa.concat_tables([pq.read_table(p, memory_map=True) for p in paths]) if paths else None
    except (pa.ArrowException, OSError) as exc:
        raise HetbenchError(f"cannot read the parquet files of '{folder}': {_first_line(exc)}") from exc
    if arrow is None:
        return None
    features = datasets.Features.from_arrow_schema(arrow.schema)
    ds = datasets.Dataset(datasets.table.InMemoryTable(arrow), info=datasets.DatasetInfo(features=features))
    labels, cid = cols["train"]["label"].astype(np.int64), cols["train"]["client_id"].astype(np.int64)
    table = SampleTable(splits={"train": ds}, label_column="label", class_names=list(manifest["class_names"]),
                        labels={"train": labels})
    rows = np.flatnonzero(cid >= 0)
    names = list(manifest["client_names"])
    return measure_rows(table, "train", rows, labels[rows], cid[rows], names, groups=client_groups(report, names))


def refresh_report(folder: str | os.PathLike) -> Report:
    """Recompute a built folder's report from its parquet files and rewrite it with its plots.

    Family-specific entries of the old ``report.json`` (device statistics, skipped files, the feature shift,
    ...) are kept; a report without a feature shift gets one from the training shards' images; per-client lists of the earlier format (``client_sizes``, ``label_distribution``, ...)
    are dropped, as they now live in ``report/clients.parquet``. Everything is computed and written
    in a temporary folder before any file is replaced, so unreadable input (a truncated or missing
    shard, a malformed manifest) raises :class:`HetbenchError` and leaves the old report intact.

    Parameters
    ----------
    folder : path
        A folder written by ``hetbench partition`` or ``hetbench build``.

    Returns
    -------
    Report
        The new report (``.clients`` holds the per-client statistics).

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> from hetbench.tools.report_refresh import refresh_report
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-iid", quiet=True)
    >>> refresh_report("digits-iid")["num_clients"]
    4
    """
    from hetbench.tempdirs import temp_dir
    from hetbench.contract import read_manifest

    manifest = read_manifest(folder)
    missing = [k for k in ("class_names", "client_names", "splits") if not isinstance(manifest.get(k), (list, dict))]
    if missing:
        raise HetbenchError(f"{Path(folder) / 'hetbench.json'} lacks {', '.join(missing)}; cannot recompute the report")
    cols = _read_columns(folder)
    if "train" not in cols:
        raise HetbenchError(f"'{folder}' has no train split; cannot recompute the report")
    report = compute_report(
        {s: c["client_id"] for s, c in cols.items()},
        {s: c["label"] for s, c in cols.items()},
        manifest["class_names"],
        manifest["client_names"],
        manifest.get("dropped"),
        train_split="train",
    )
    old_path = Path(folder) / "report.json"
    if old_path.is_file():
        try:
            old = json.loads(old_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            old = {}
        if isinstance(old, dict):
            computed = (*PER_CLIENT_KEYS, *PER_CLASS_KEYS, "classes_file")  # what compute_report decides
            report.update({k: v for k, v in old.items() if k not in report and k not in computed})
    clusters = _clusters(folder, report)
    shift = None if "feature_shift" in report else _feature_shift(folder, manifest, cols, report)
    if shift is not None:
        report["feature_shift"] = shift.entry
    with temp_dir(folder, ".report-") as tmp:
        write_report(report, tmp)
        if shift is not None:
            shift.write(tmp)
        if clusters is not None:  # an embedding split's EMD histogram shows the cluster EMD too
            from hetbench.report.embedding import redraw_emd_histogram

            redraw_emd_histogram(tmp, clusters[0], clusters[1], int(report["embedding"]["clusters"]), report, report.clients)
        (Path(folder) / "plots").mkdir(exist_ok=True)
        (Path(folder) / CLIENTS_FILE).parent.mkdir(exist_ok=True)
        for f in (tmp / "plots").iterdir():
            os.replace(f, Path(folder) / "plots" / f.name)
        os.replace(tmp / CLIENTS_FILE, Path(folder) / CLIENTS_FILE)
        if (tmp / CLASSES_FILE).is_file():
            os.replace(tmp / CLASSES_FILE, Path(folder) / CLASSES_FILE)
        else:
            (Path(folder) / CLASSES_FILE).unlink(missing_ok=True)
        if shift is not None:
            from hetbench.report.feature_entry import FEATURE_FILE

            os.replace(tmp / FEATURE_FILE, Path(folder) / FEATURE_FILE)
        os.replace(tmp / "report.json", Path(folder) / "report.json")
    if "files" in manifest:  # the manifest digests the report and plots it publishes: record the new ones
        from hetbench.contract import MANIFEST_NAME
        from hetbench.publish.manifest import write_manifest
        from hetbench.publish.inventory import file_inventory

        manifest["files"] = file_inventory(folder)
        with temp_dir(folder, ".manifest-") as tmp:
            write_manifest(manifest, tmp)
            os.replace(tmp / MANIFEST_NAME, Path(folder) / MANIFEST_NAME)
    return report
