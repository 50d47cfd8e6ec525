"""The heterogeneity report's numbers: ``report.json`` and ``report/clients.parquet``.

:func:`compute_report` needs only per-split client ids and labels, so the same report comes from a
fresh build and from a published folder (``hetbench report <out>``). ``report.json`` holds scalar
summaries only (it stays small at any client count); every per-client number (size, distances,
classes, label counts, rows per split) is one row of ``report/clients.parquet``
(:class:`ClientStats`). The label distribution is kept sparse (:class:`hetbench.metrics.LabelCounts`),
never as a dense clients x classes matrix. The keys and columns are listed in
``docs/output-contract.md``; the distances are :mod:`hetbench.metrics`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from hetbench import metrics
from hetbench.errors import HetbenchError
from hetbench.report.classes import CLASSES_FILE, MAX_INLINE_CLASSES, ClassStats

CLIENTS_FILE = "report/clients.parquet"
#: report.json keys of the earlier format that moved to ``report/clients.parquet``.
PER_CLIENT_KEYS = (
    "client_names",
    "client_sizes",
    "emd_per_client",
    "jensen_shannon_per_client",
    "hellinger_per_client",
    "classes_per_client",
    "label_distribution",
)


def _round(x: float, nd: int = 6) -> float:
    return float(round(float(x), nd))


def _rounded(stats: Mapping[str, float]) -> dict[str, float]:
    return {k: _round(v) for k, v in stats.items()}


class ClientStats:
    """Per-client statistics of a split: one row of ``report/clients.parquet`` per client.

    Parameters
    ----------
    names : sequence of str
        Client names, in client index order.
    label_counts : hetbench.metrics.LabelCounts
        The training split's clients x classes counts, sparse.
    split_rows : dict of str to numpy.ndarray
        Rows per client of every output split.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.metrics import LabelCounts
    >>> from hetbench.report.metrics import ClientStats
    >>> lc = LabelCounts.from_labels(np.array([0, 0, 1]), np.array([0, 1, 1]), 2, 2)
    >>> stats = ClientStats(["a", "b"], lc, {"train": np.array([2, 1])})
    >>> stats.to_arrow().column_names
    ['client_id', 'client_name', 'num_samples', 'classes_present', 'emd', 'jensen_shannon', 'hellinger', 'label_classes', 'label_counts', 'rows_train']
    >>> stats.emd.round(6).tolist()
    [0.333333, 0.666667]
    """

    def __init__(self, names: Sequence[str], label_counts: metrics.LabelCounts, split_rows: Mapping[str, np.ndarray]) -> None:
        self.names = names
        self.label_counts = label_counts
        self.split_rows = {s: np.asarray(v, dtype=np.int64) for s, v in split_rows.items()}
        self.sizes = label_counts.sizes()
        self.classes_present = label_counts.classes_per_client()
        self.emd = label_counts.emd_per_client()
        self.jensen_shannon = label_counts.jensen_shannon_per_client()
        self.hellinger = label_counts.hellinger_per_client()

    @property
    def num_clients(self) -> int:
        return self.label_counts.num_clients

    def to_arrow(self):
        """The ``report/clients.parquet`` table (columns in ``docs/output-contract.md``).

        Returns
        -------
        pyarrow.Table
            One row per client: ``client_id``, ``client_name``, ``num_samples``,
            ``classes_present``, ``emd``, ``jensen_shannon``, ``hellinger`` (rounded to 6 decimals),
            ``label_classes`` and ``label_counts`` (the client's non-zero label cells), then
            ``rows_<split>`` per output split (in split-name order).
        """
        import pyarrow as pa

        lc = self.label_counts
        offsets = pa.array(lc.indptr.astype(np.int32))
        columns = {
            "client_id": pa.array(np.arange(self.num_clients, dtype=np.int32)),
            "client_name": pa.array(list(self.names), type=pa.string()),
            "num_samples": pa.array(self.sizes.astype(np.int64)),
            "classes_present": pa.array(self.classes_present.astype(np.int32)),
            "emd": pa.array(np.round(self.emd, 6)),
            "jensen_shannon": pa.array(np.round(self.jensen_shannon, 6)),
            "hellinger": pa.array(np.round(self.hellinger, 6)),
            "label_classes": pa.ListArray.from_arrays(offsets, pa.array(lc.classes.astype(np.int32))),
            "label_counts": pa.ListArray.from_arrays(offsets, pa.array(lc.counts.astype(np.int64))),
        }
        columns.update({f"rows_{s}": pa.array(self.split_rows[s]) for s in sorted(self.split_rows)})
        return pa.table(columns)

    def write(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_arrow` as parquet (zstd; byte-identical for identical statistics)."""
        import pyarrow.parquet as pq

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.to_arrow(), path, compression="zstd")

    @classmethod
    def from_arrow(cls, table, num_classes: int) -> "ClientStats":
        """Read the statistics back from a ``report/clients.parquet`` table.

        Parameters
        ----------
        table : pyarrow.Table
            As written by :meth:`write`.
        num_classes : int
            Number of classes of the split.

        Returns
        -------
        ClientStats
            The same statistics (the distances are recomputed from the label counts).
        """
        classes = table.column("label_classes").combine_chunks()
        counts = table.column("label_counts").combine_chunks()
        lc = metrics.LabelCounts(
            classes.offsets.to_numpy(), classes.values.to_numpy(), counts.values.to_numpy(), num_classes
        )
        rows = {c[5:]: table.column(c).to_numpy() for c in table.column_names if c.startswith("rows_")}
        return cls(table.column("client_name").to_pylist(), lc, rows)


def read_clients(folder: str | os.PathLike, columns: Sequence[str] | None = None):
    """The per-client statistics of a built folder (``report/clients.parquet``) as an Arrow table.

    Parameters
    ----------
    folder : path
        A folder written by ``hetbench partition`` or ``hetbench build``.
    columns : sequence of str, optional
        Read only these columns.

    Returns
    -------
    pyarrow.Table
        One row per client, in client index order.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> from hetbench.report.metrics import read_clients
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-iid-clients", quiet=True)
    >>> read_clients("digits-iid-clients", ["client_name", "num_samples"]).to_pydict()["num_samples"]
    [360, 359, 359, 359]
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(folder) / CLIENTS_FILE
    if not path.is_file():
        raise HetbenchError(f"{path} is missing; run 'hetbench report {folder}' to write it")
    try:
        return pq.read_table(path, columns=list(columns) if columns is not None else None)
    except (pa.ArrowException, OSError) as exc:
        raise HetbenchError(f"cannot read {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc


class Report(dict):
    """``report.json``'s content (a plain dict) with the per-client statistics as :attr:`clients`.

    :func:`hetbench.report.write_report` writes the dict as ``report.json`` and :attr:`clients` as
    ``report/clients.parquet``.
    """

    clients: ClientStats | None = None
    #: the per-class lists of a split of more than MAX_INLINE_CLASSES classes (``report/classes.parquet``)
    classes: ClassStats | None = None


def compute_report(
    client_ids: Mapping[str, np.ndarray],
    labels: Mapping[str, np.ndarray],
    class_names: list[str],
    client_names: list[str] | tuple[str, ...],
    dropped: Mapping[str, Mapping[str, int]] | None = None,
    train_split: str = "train",
) -> Report:
    """Report of the ``train_split`` (heterogeneity) and row counts of every split.

    Parameters
    ----------
    client_ids, labels : dict of str to numpy.ndarray
        Per output split, the client id (-1 = shared) and label of every row.
    class_names, client_names : list of str
        Names of the classes and of the clients, in index order.
    dropped : dict, optional
        Dropped row counts per split and reason (as in the manifest).
    train_split : str, default "train"
        The split whose heterogeneity is measured.

    Returns
    -------
    Report
        The summary (a dict of scalars and per-class lists: ``report.json``), with the per-client
        statistics as ``.clients``.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report import compute_report
    >>> rep = compute_report({"train": np.array([0, 0, 1, 1, 1])}, {"train": np.array([0, 1, 1, 1, 1])},
    ...                      ["a", "b"], ["c0", "c1"])
    >>> rep["num_samples"], rep["emd"], rep["size_stats"]["max"], rep.clients.sizes.tolist()
    (5, 0.48, 3.0, [2, 3])
    """
    num_clients, num_classes = len(client_names), len(class_names)
    for split, cids in client_ids.items():
        if cids.size and int(cids.max()) >= num_clients:
            raise HetbenchError(f"split '{split}' has client_id {int(cids.max())} but there are {num_clients} clients")
        lab = np.asarray(labels[split])[cids >= 0]
        if lab.size and not (0 <= int(lab.min()) and int(lab.max()) < num_classes):
            raise HetbenchError(f"split '{split}' has a label outside 0..{num_classes - 1}")
    lc = metrics.LabelCounts.from_labels(client_ids[train_split], labels[train_split], num_clients, num_classes)
    split_rows = {s: np.bincount(c[c >= 0], minlength=num_clients) for s, c in client_ids.items()}
    stats = ClientStats(client_names, lc, split_rows)
    sizes, nonempty = stats.sizes, stats.sizes > 0
    total = max(int(sizes.sum()), 1)
    splits = {
        s: {
            "num_rows": int(cids.size),
            "shared_rows": int(np.count_nonzero(cids < 0)),
            "clients_with_rows": int(np.count_nonzero(split_rows[s])),
        }
        for s, cids in client_ids.items()
    }
    weighted = {
        key: _round(float((values * sizes).sum() / total))
        for key, values in (("emd", stats.emd), ("jensen_shannon", stats.jensen_shannon), ("hellinger", stats.hellinger))
    }
    size_stats = metrics.size_stats(sizes)
    size_stats.update({k: v for k, v in metrics.quantile_stats(sizes).items() if k.startswith("p")})
    cpc = metrics.size_stats(stats.classes_present)
    per_class = {"class_names": list(class_names),
                 "population_distribution": [_round(v) for v in lc.population()],
                 "class_counts": lc.class_totals().tolist()}
    many = num_classes > MAX_INLINE_CLASSES  # the lists go to report/classes.parquet (hetbench.report.classes)
    report = Report(
        num_clients=num_clients,
        num_samples=int(sizes.sum()),
        num_classes=num_classes,
        **({"classes_file": CLASSES_FILE} if many else per_class),
        size_stats=_rounded(size_stats),
        **weighted,
        emd_stats=_rounded(metrics.quantile_stats(stats.emd[nonempty])),
        jensen_shannon_stats=_rounded(metrics.quantile_stats(stats.jensen_shannon[nonempty])),
        hellinger_stats=_rounded(metrics.quantile_stats(stats.hellinger[nonempty])),
        classes_per_client_stats={k: _round(cpc[k]) for k in ("min", "median", "max", "mean")},
        empty_clients=int(num_clients - np.count_nonzero(nonempty)),
        empty_client_class_cells=int(num_clients * num_classes - lc.counts.size),
        splits=splits,
        dropped={s: dict(d) for s, d in (dropped or {}).items()},
        clients_file=CLIENTS_FILE,
    )
    report.clients = stats
    if many:
        report.classes = ClassStats(per_class["class_names"], lc.class_totals(), per_class["population_distribution"])
    return report
