"""``hetbench report <folder>``: recompute ``report.json`` and the plots of a built folder."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hetbench.report.metrics import compute_report
from hetbench.report.plots import write_report


def refresh_report(folder: str | os.PathLike) -> dict[str, Any]:
    """Recompute a built folder's report from its parquet files and rewrite it with its plots.

    Family-specific entries of the old ``report.json`` (device statistics, skipped files, ...) are
    kept. The new files are written beside the old ones and swapped in, so a failure leaves the old
    report intact.

    Parameters
    ----------
    folder : path
        A folder written by ``hetbench partition`` or ``hetbench build``.

    Returns
    -------
    dict
        The new report.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> from hetbench.report import refresh_report
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-iid", quiet=True)
    >>> refresh_report("digits-iid")["num_clients"]
    4
    """
    from hetbench.publish.manifest import read_manifest
    from hetbench.publish.parquet import read_built_columns

    manifest = read_manifest(folder)
    cols = read_built_columns(folder)
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
        except json.JSONDecodeError:
            old = {}
        report.update({k: v for k, v in old.items() if k not in report})
    with tempfile.TemporaryDirectory(dir=folder, prefix=".report-") as tmp:
        write_report(report, Path(tmp))
        (Path(folder) / "plots").mkdir(exist_ok=True)
        for f in (Path(tmp) / "plots").iterdir():
            shutil.move(str(f), Path(folder) / "plots" / f.name)
        shutil.move(str(Path(tmp) / "report.json"), Path(folder) / "report.json")
    return report
