"""Which rows belong to which client: the one grouping every per-client reader uses.

A built split stores each output split's rows grouped by ``client_id`` in ascending order, the shared rows
(``client_id = -1``, a global or held-out test set) first (``docs/output-contract.md``), so client k's rows
are one contiguous range. :func:`group_by_client` finds the ranges with one ``searchsorted`` and, for rows
that are not grouped (a shuffled ``datasets.Dataset``, a fresh partition, the labelled rows the trainer
keeps), the one stable order that groups them. :class:`hetbench.clients.ClientPartitions`, the Flower
partitioner and the trainer's data all slice clients through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hetbench.errors import HetbenchError


@dataclass(frozen=True)
class ClientRows:
    """Rows grouped by client: client k is ``order[rows(k)]`` (``order`` None: the rows as they are).

    Attributes
    ----------
    order : numpy.ndarray or None
        The stable row order that groups the rows by client id, None when they are grouped already.
    bounds : numpy.ndarray
        ``num_clients + 2`` offsets into the grouped rows: the shared rows (negative ids) are
        ``bounds[0]:bounds[1]``, client k is ``bounds[k + 1]:bounds[k + 2]``.
    """

    order: np.ndarray | None
    bounds: np.ndarray

    @property
    def num_clients(self) -> int:
        """Clients, those without rows included."""
        return int(self.bounds.size - 2)

    def rows(self, k: int) -> slice:
        """The range of client ``k``'s rows in the grouped order."""
        return slice(int(self.bounds[k + 1]), int(self.bounds[k + 2]))

    @property
    def shared(self) -> slice:
        """The range of the shared rows (negative client ids) in the grouped order."""
        return slice(int(self.bounds[0]), int(self.bounds[1]))

    def sizes(self) -> np.ndarray:
        """Rows per client, ``num_clients`` of them."""
        return np.diff(self.bounds[1:])

    def indices(self, k: int) -> np.ndarray:
        """Client ``k``'s row indices in the rows as given."""
        r = self.rows(k)
        return np.arange(r.start, r.stop) if self.order is None else self.order[r]


def group_by_client(client_ids: np.ndarray, num_clients: int | None = None,
                    then_by: np.ndarray | None = None) -> ClientRows:
    """Group rows by their client id: one stable sort when they are not grouped, one ``searchsorted``.

    Parameters
    ----------
    client_ids : numpy.ndarray
        Every row's client id (integers; negative: a shared row of no client).
    num_clients : int, optional
        The number of clients, so that clients without rows at the end of the range exist too (a
        build's ``num_clients``). Default: the largest client id + 1.
    then_by : numpy.ndarray, optional
        A second key that orders each client's rows (e.g. their published positions after a shuffle);
        default: the rows' order as given.

    Returns
    -------
    ClientRows
        The grouping order (None if the rows are grouped already) and every client's range.

    Raises
    ------
    HetbenchError
        A client id at or above ``num_clients``, or a ``num_clients`` that is not a non-negative integer.

    Examples
    --------
    >>> import numpy as np
    >>> rows = group_by_client(np.array([1, -1, 0, 1, 0]), num_clients=3)
    >>> rows.order.tolist(), rows.sizes().tolist(), rows.indices(1).tolist(), rows.shared
    ([1, 2, 4, 0, 3], [2, 2, 0], [0, 3], slice(0, 1, None))
    >>> group_by_client(np.array([-1, 0, 0, 2])).order is None
    True
    >>> group_by_client(np.array([0, 4]), num_clients=3)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: the rows have client_id 4, outside 0 to 2 (num_clients=3)
    """
    cids = np.asarray(client_ids).astype(np.int64, copy=False)
    if then_by is not None:
        order: np.ndarray | None = np.lexsort((np.asarray(then_by), cids))
    elif cids.size and np.any(cids[1:] < cids[:-1]):
        order = np.argsort(cids, kind="stable")
    else:
        order = None
    grouped = cids if order is None else cids[order]
    top = int(grouped[-1]) + 1 if grouped.size and grouped[-1] >= 0 else 0
    if num_clients is None:
        num_clients = top
    elif isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)) or num_clients < 0:
        raise HetbenchError(f"num_clients must be a non-negative integer (got {num_clients!r})")
    elif top > num_clients:
        raise HetbenchError(f"the rows have client_id {top - 1}, outside 0 to {int(num_clients) - 1} (num_clients={num_clients})")
    bounds = np.concatenate([[0], np.searchsorted(grouped, np.arange(int(num_clients) + 1))]).astype(np.int64)
    return ClientRows(order, bounds)
