"""Fast per-client access to a federated split: every client's rows as a zero-copy Arrow slice.

A hetbench split stores each split's rows grouped by ``client_id`` (ascending), so client k's rows
are one contiguous range. :class:`ClientPartitions` finds the ranges with one ``searchsorted`` and
hands out slices of the underlying Arrow table: no per-client scan, filter or copy. For data that
is not grouped yet (an in-memory Dataset and a fresh :class:`~hetbench.partition.Partition`), one
Arrow ``take`` puts the rows in client order first.

``load_partition(k)`` returns a ``datasets.Dataset`` for code that expects one (Flower's
``load_partition`` contract); ``table(k)`` and ``numpy(k)`` skip the ~1 ms that building any
``datasets.Dataset`` object costs, which dominates once there are thousands of clients.

Examples
--------
>>> import datasets
>>> from hetbench.clients import ClientPartitions
>>> from hetbench.partitioners import DirichletPartitioner
>>> from hetbench.publish import publish_split
>>> from hetbench.sources import load_table
>>> from hetbench.splits import build_split
>>> split = build_split(load_table("builtin:digits"), DirichletPartitioner(10, alpha=0.5), seed=0)
>>> _ = publish_split(split, "digits-dirichlet", quiet=True)
>>> ds = datasets.load_dataset("digits-dirichlet", split="train")
>>> clients = ClientPartitions.from_dataset(ds)
>>> clients.num_partitions, clients.client_ids[:3].tolist()
(10, [0, 1, 2])
>>> len(clients.load_partition(3)) == int((split.outputs["train"].client_ids == 3).sum())
True
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from hetbench.errors import HetbenchError

if TYPE_CHECKING:  # pragma: no cover
    import datasets
    import pyarrow as pa

    from hetbench.partition import Partition


def _fingerprint_of(ds: "datasets.Dataset", salt: str) -> str:
    """The source Dataset's fingerprint (datasets tracks one per transform) combined with ``salt``."""
    return f"{getattr(ds, '_fingerprint', '')}:{salt}"


class ClientPartitions:
    """Rows of ``table`` grouped by client: partition i is client ``client_ids[i]``.

    Partitions are numbered by ascending client id, the order Flower's ``NaturalIdPartitioner``
    uses; rows with a negative client id (a shared test set) are reachable through :meth:`shared`.
    """

    def __init__(
        self,
        table: "pa.Table",
        client_ids: np.ndarray,
        bounds: np.ndarray,
        shared_rows: tuple[int, int] = (0, 0),
        features: "datasets.Features | None" = None,
        fingerprint: str = "",
    ) -> None:
        self._table = table
        self._fingerprint = fingerprint
        self.client_ids = np.asarray(client_ids, dtype=np.int64)
        self._bounds = np.asarray(bounds, dtype=np.int64)
        self._shared = shared_rows
        self._features = features

    # ---- construction --------------------------------------------------------------------
    @classmethod
    def from_dataset(cls, ds: "datasets.Dataset", client_column: str = "client_id") -> "ClientPartitions":
        """From a split with a client-id column (a loaded hetbench build, or any Dataset)."""
        if client_column not in ds.column_names:
            raise HetbenchError(f"no '{client_column}' column (columns: {', '.join(ds.column_names)})")
        table = ds.with_format("arrow")[:] if ds._indices is not None else ds.data.table
        cids = table.column(client_column).to_numpy().astype(np.int64)
        if cids.size and np.any(cids[1:] < cids[:-1]):  # not grouped yet: one stable take
            order = np.argsort(cids, kind="stable")
            table, cids = table.take(order), cids[order]
        return cls._from_sorted(table, cids, ds.features, _fingerprint_of(ds, client_column))

    @classmethod
    def from_partition(cls, ds: "datasets.Dataset", partition: "Partition") -> "ClientPartitions":
        """From an in-memory Dataset and a Partition of its rows (dropped rows left out)."""
        if len(ds) != partition.num_samples:
            raise HetbenchError(f"the partition covers {partition.num_samples} rows but the data has {len(ds)}")
        order, bounds = partition.client_order()
        table = ds.with_format("arrow")[:] if ds._indices is not None else ds.data.table
        fp = _fingerprint_of(ds, partition.fingerprint)
        return cls(table.take(order), np.arange(partition.num_clients), bounds, (0, 0), ds.features, fp)

    @classmethod
    def _from_sorted(cls, table: "pa.Table", cids: np.ndarray, features, fingerprint: str) -> "ClientPartitions":
        first_kept = int(np.searchsorted(cids, 0, side="left"))
        kept = cids[first_kept:]
        ids = np.unique(kept)
        bounds = np.append(np.searchsorted(kept, ids, side="left"), kept.size) + first_kept
        return cls(table, ids, bounds, (0, first_kept), features, fingerprint)

    # ---- access --------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        return int(self.client_ids.size)

    def __len__(self) -> int:
        return self.num_partitions

    def sizes(self) -> np.ndarray:
        return np.diff(self._bounds)

    def _check(self, i: int) -> int:
        if not 0 <= i < self.num_partitions:
            raise HetbenchError(f"partition {i} out of range: there are {self.num_partitions}")
        return int(i)

    def table(self, i: int) -> "pa.Table":
        """Partition i's rows as a zero-copy Arrow slice."""
        i = self._check(i)
        return self._table.slice(int(self._bounds[i]), int(self._bounds[i + 1] - self._bounds[i]))

    def numpy(self, i: int, columns: Sequence[str]) -> dict[str, np.ndarray]:
        """Selected columns of partition i as numpy arrays."""
        t = self.table(i)
        return {c: t.column(c).to_numpy(zero_copy_only=False) for c in columns}

    def load_partition(self, i: int) -> "datasets.Dataset":
        """Partition i as a ``datasets.Dataset`` (features kept; images decode as usual)."""
        import datasets
        from datasets.table import InMemoryTable

        info = datasets.DatasetInfo(features=self._features) if self._features is not None else None
        # an explicit fingerprint: without one, datasets hashes the slice's data (~0.1 s per client)
        fingerprint = hashlib.sha256(f"{self._fingerprint}:{self.client_ids[i]}".encode()).hexdigest()[:16]
        return datasets.Dataset(InMemoryTable(self.table(i)), info=info, fingerprint=fingerprint)

    def shared(self) -> "pa.Table":
        """Rows with a negative client id (a shared/global test set)."""
        lo, hi = self._shared
        return self._table.slice(lo, hi - lo)

    def __iter__(self) -> Iterator["pa.Table"]:
        for i in range(self.num_partitions):
            yield self.table(i)
