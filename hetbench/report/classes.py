"""The per-class lists of a report with many classes: ``report/classes.parquet`` instead of ``report.json``.

A split's report lists, per class, its name, its training rows and its share of them (``class_names``,
``class_counts``, ``population_distribution``). With a few hundred classes these read well in ``report.json``;
with a million (a per-user or per-landmark label) they made ``report.json`` 26 MB, which every reader of the
summary (a card, a leaderboard, ``json.load`` in a notebook) then parses whole. Above
:data:`MAX_INLINE_CLASSES` classes the three lists go to ``report/classes.parquet`` (one row per class:
``label``, ``class_name``, ``num_samples``, ``population``), and ``report.json`` names the file in
``classes_file``; :func:`read_classes` reads them from either place.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from hetbench.errors import HetbenchError

CLASSES_FILE = "report/classes.parquet"
#: above this many classes the per-class lists leave report.json for CLASSES_FILE
MAX_INLINE_CLASSES = 1000
#: the report.json keys that hold one value per class
PER_CLASS_KEYS = ("class_names", "class_counts", "population_distribution")


class ClassStats:
    """One row per class: its index, name, training rows and share of the training rows (6 decimals).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.classes import ClassStats
    >>> ClassStats(["a", "b"], np.array([3, 1]), [0.75, 0.25]).to_arrow().column("population").to_pylist()
    [0.75, 0.25]
    """

    def __init__(self, names: Sequence[str], counts: np.ndarray, population: Sequence[float]) -> None:
        self.names = [str(n) for n in names]
        self.counts = np.asarray(counts, dtype=np.int64)
        self.population = [float(p) for p in population]

    def to_arrow(self):
        import pyarrow as pa

        return pa.table({
            "label": pa.array(np.arange(len(self.names), dtype=np.int64)),
            "class_name": pa.array(self.names, pa.string()),
            "num_samples": pa.array(self.counts),
            "population": pa.array(self.population, pa.float64()),
        })

    def write(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_arrow` as parquet (zstd; byte-identical for identical statistics)."""
        import pyarrow.parquet as pq

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.to_arrow(), path, compression="zstd")


def read_classes(folder: str | os.PathLike) -> dict[str, list]:
    """A built folder's per-class lists, from ``report.json`` or, for a split of many classes, from
    ``report/classes.parquet``.

    Parameters
    ----------
    folder : path
        A folder ``hetbench`` wrote.

    Returns
    -------
    dict
        ``class_names`` (str), ``class_counts`` (int) and ``population_distribution`` (float), one per class.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> from hetbench.report.classes import read_classes
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-iid-classes", quiet=True)
    >>> read_classes("digits-iid-classes")["class_counts"][:3]
    [142, 146, 141]
    """
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(folder) / "report.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HetbenchError(f"cannot read {path}: {exc}") from exc
    if not isinstance(report, dict):
        raise HetbenchError(f"{path} is not a report")
    if "classes_file" not in report:
        return {k: list(report.get(k, [])) for k in PER_CLASS_KEYS}
    table_path = Path(folder) / CLASSES_FILE
    try:
        table = pq.read_table(table_path).to_pydict()
    except (pa.ArrowException, OSError) as exc:
        raise HetbenchError(f"cannot read {table_path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    return {"class_names": table["class_name"], "class_counts": table["num_samples"],
            "population_distribution": table["population"]}


__all__ = ["CLASSES_FILE", "MAX_INLINE_CLASSES", "PER_CLASS_KEYS", "ClassStats", "read_classes"]
