"""Fast per-client access to a federated split: every client's rows as a zero-copy Arrow slice.

A hetbench split stores each split's rows grouped by ``client_id`` (ascending), so client k's rows
are one contiguous range. :class:`ClientPartitions` finds the ranges with one ``searchsorted`` and
hands out slices of the underlying Arrow table: no per-client scan, filter or copy. For data that
is not grouped yet (an in-memory Dataset and a fresh :class:`~hetbench.partition.Partition`), one
Arrow ``take`` puts the rows in client order first.

Every method takes the real ``client_id``: ``load_partition(3)`` is the client whose rows carry
``client_id = 3``, whether or not other clients are empty, as in ``hetbench.json`` and
:class:`hetbench.flower.HetbenchPartitioner`. A client without rows is an empty table with the
split's columns. Rows with a negative id (``client_id = -1``, a shared test set) belong to no
client: :meth:`ClientPartitions.shared` returns them.

``load_partition(k)`` returns a ``datasets.Dataset`` for code that expects one (Flower's
``load_partition`` contract); ``table(k)`` and ``numpy(k)`` skip the ~1 ms that building any
``datasets.Dataset`` object costs, which dominates once there are thousands of clients.

Examples
--------
>>> import datasets
>>> from hetbench.clients import ClientPartitions
>>> from hetbench.partitioners import IIDPartitioner
>>> from hetbench.publish import publish_split
>>> from hetbench.sources import load_table
>>> from hetbench.splits import build_split
>>> split = build_split(load_table("builtin:digits"), IIDPartitioner(4, sizes=[0, 900, 0, 897]), seed=0,
...                     allow_empty=True)
>>> _ = publish_split(split, "digits-iid-empty", quiet=True)
>>> clients = ClientPartitions.from_folder("digits-iid-empty")        # 4 clients, 0 and 2 empty
>>> clients.num_clients, clients.sizes().tolist()
(4, [0, 720, 0, 718])
>>> part = clients.load_partition(3)                                   # the rows with client_id 3
>>> len(part), set(part["client_id"])
(718, {3})
>>> len(clients.load_partition(2)), clients.table(2).column_names[:2]   # empty, with the split's columns
(0, ['image', 'label'])
>>> clients.table(4)
Traceback (most recent call last):
...
hetbench.errors.HetbenchError: client 4 out of range: this split has 4 clients (client ids 0 to 3)
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

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
    """Rows of ``table`` grouped by client, keyed by ``client_id`` ``0 .. num_clients - 1``.

    Client k's rows are ``table[bounds[k]:bounds[k + 1]]`` (empty for a client without rows); rows
    with a negative client id (a shared test set) are reachable through :meth:`shared`.

    Parameters
    ----------
    table : pyarrow.Table
        The rows, grouped by ascending client id (shared rows first).
    bounds : numpy.ndarray
        ``num_clients + 1`` row offsets: client k is ``bounds[k]:bounds[k + 1]``.
    shared_rows : (int, int)
        The row range of the shared rows.
    features : datasets.Features, optional
        The split's features (kept by :meth:`load_partition`).
    fingerprint : str
        Identifies the source, so each client's Dataset gets a stable fingerprint.
    """

    def __init__(
        self,
        table: "pa.Table",
        bounds: np.ndarray,
        shared_rows: tuple[int, int] = (0, 0),
        features: "datasets.Features | None" = None,
        fingerprint: str = "",
    ) -> None:
        self._table = table
        self._fingerprint = fingerprint
        self._bounds = np.asarray(bounds, dtype=np.int64)
        self._shared = shared_rows
        self._features = features

    # ---- construction --------------------------------------------------------------------
    @classmethod
    def from_dataset(
        cls, ds: "datasets.Dataset", client_column: str = "client_id", num_clients: int | None = None
    ) -> "ClientPartitions":
        """From a split with a client-id column (a loaded hetbench build, or any Dataset).

        Parameters
        ----------
        ds : datasets.Dataset
            The rows.
        client_column : str
            The column holding every row's client id (negative: shared, no client).
        num_clients : int, optional
            The number of clients, ``num_clients`` in ``hetbench.json`` (so that clients without rows
            at the end of the range exist too). Default: the largest client id + 1.
            :meth:`from_folder` reads it from the manifest.
        """
        if client_column not in ds.column_names:
            raise HetbenchError(f"no '{client_column}' column (columns: {', '.join(ds.column_names)})")
        from hetbench.contract.client_rows import group_by_client

        table = ds.with_format("arrow")[:] if ds._indices is not None else ds.data.table
        rows = group_by_client(table.column(client_column).to_numpy(), num_clients)
        if rows.order is not None:  # not grouped yet: one stable take
            table = table.take(rows.order)
        return cls(table, rows.bounds[1:], (0, int(rows.bounds[1])), ds.features, _fingerprint_of(ds, client_column))

    @classmethod
    def from_folder(cls, folder: str | Path, split: str = "train") -> "ClientPartitions":
        """From a built hetbench folder: ``split`` loaded with ``datasets.load_dataset`` and every
        client of its ``hetbench.json`` (``num_clients``), clients without rows included."""
        from hetbench.contract import read_manifest
        from hetbench.roots import check_no_links_leaving

        manifest = read_manifest(folder)
        if split not in manifest["splits"]:
            raise HetbenchError(f"'{folder}' has no split '{split}' (splits: {', '.join(manifest['splits'])})")
        num_clients = manifest.get("num_clients")
        if not isinstance(num_clients, int) or num_clients < 0:
            raise HetbenchError(f"hetbench.json of '{folder}' has no valid 'num_clients'")
        check_no_links_leaving(folder)  # a shard linked from outside the folder is never read (hetbench.roots)
        from hetbench.local_folders import load_local

        ds = load_local(folder, split=split)  # never another build's rows (hetbench.local_folders)
        return cls.from_dataset(ds, num_clients=num_clients)

    @classmethod
    def from_partition(cls, ds: "datasets.Dataset", partition: "Partition") -> "ClientPartitions":
        """From an in-memory Dataset and a Partition of its rows (dropped rows left out)."""
        if len(ds) != partition.num_samples:
            raise HetbenchError(f"the partition covers {partition.num_samples} rows but the data has {len(ds)}")
        order, bounds = partition.client_order()
        table = ds.with_format("arrow")[:] if ds._indices is not None else ds.data.table
        fp = _fingerprint_of(ds, partition.fingerprint)
        return cls(table.take(order), bounds, (0, 0), ds.features, fp)

    # ---- access --------------------------------------------------------------------------
    @property
    def num_clients(self) -> int:
        """Clients of the split, clients without rows included (client ids ``0 .. num_clients - 1``)."""
        return int(self._bounds.size - 1)

    @property
    def num_partitions(self) -> int:
        """:attr:`num_clients`, under Flower's name (partition k is client k)."""
        return self.num_clients

    def __len__(self) -> int:
        return self.num_clients

    def sizes(self) -> np.ndarray:
        """Rows of every client, indexed by client id."""
        return np.diff(self._bounds)

    def _check(self, client_id: Any) -> int:
        if isinstance(client_id, bool) or not isinstance(client_id, (int, np.integer)):
            raise HetbenchError(f"client id must be an integer (got {client_id!r})")
        n = self.num_clients
        if not 0 <= int(client_id) < n:
            valid = f"client ids 0 to {n - 1}" if n else "no client ids"
            raise HetbenchError(f"client {client_id} out of range: this split has {n} clients ({valid})")
        return int(client_id)

    def table(self, client_id: int) -> "pa.Table":
        """The rows with ``client_id`` as a zero-copy Arrow slice (no rows: an empty table)."""
        k = self._check(client_id)
        lo, hi = int(self._bounds[k]), int(self._bounds[k + 1])
        return self._table.slice(lo, hi - lo)

    def numpy(self, client_id: int, columns: Sequence[str]) -> dict[str, np.ndarray]:
        """Selected columns of client ``client_id``'s rows as numpy arrays."""
        t = self.table(client_id)
        return {c: t.column(c).to_numpy(zero_copy_only=False) for c in columns}

    def load_partition(self, client_id: int) -> "datasets.Dataset":
        """Client ``client_id``'s rows as a ``datasets.Dataset`` (features kept; images decode as
        usual; a client without rows is an empty Dataset with the split's features)."""
        import datasets
        from datasets.table import InMemoryTable

        rows = self.table(client_id)
        info = datasets.DatasetInfo(features=self._features) if self._features is not None else None
        # an explicit fingerprint: without one, datasets hashes the slice's data (~0.1 s per client)
        fingerprint = hashlib.sha256(f"{self._fingerprint}:{int(client_id)}".encode()).hexdigest()[:16]
        return datasets.Dataset(InMemoryTable(rows), info=info, fingerprint=fingerprint)

    def shared(self) -> "pa.Table":
        """Rows with a negative client id (a shared/global test set)."""
        lo, hi = self._shared
        return self._table.slice(lo, hi - lo)

    def __iter__(self) -> Iterator["pa.Table"]:
        """Every client's rows, in client-id order (empty tables included)."""
        for k in range(self.num_clients):
            yield self.table(k)
