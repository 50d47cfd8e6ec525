"""Natural partition: one client per distinct value of a column (user id, writer, device, region).

Client ids follow the *sorted* distinct values over every split (numbers numerically, strings
lexically), so a user's train and test rows get the same client id (the bug Flower fixed in #5340).
Clients with fewer than ``min_samples`` training rows are dropped (reason ``client-too-small``)
together with their rows in the other splits; rows whose value is missing are dropped
(``missing-value``). Training rows are the client's rows of the partitioned split, less, under the
``client`` test policy (``holdout_fraction``), the rows it holds out for testing.

The helpers here (:func:`encode_keys`, :func:`natural_id_assignment`, :func:`map_codes`,
:func:`value_clients`, :func:`map_to_clients`) are shared by the per-user partitioner of
:mod:`hetbench.partitioners.user_filters`, which runs natural-id over the rows a filter keeps.
"""

from __future__ import annotations

import copy
from typing import Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition
from hetbench.partitioners.base import Partitioner, check_holdout, holdout_note, rows_for_training, split_partition
from hetbench.table import arrow_column


def plain_array(column):
    """One contiguous, dictionary-decoded ``pyarrow.Array`` from a column (chunked, dictionary
    encoded, or anything ``pyarrow.array`` takes).

    Examples
    --------
    >>> import pyarrow as pa
    >>> encoded = pa.chunked_array([pa.array(["a", "b"]).dictionary_encode(), pa.array(["a"]).dictionary_encode()])
    >>> col = plain_array(encoded)
    >>> col.type, col.to_pylist()
    (DataType(string), ['a', 'b', 'a'])
    """
    import pyarrow as pa

    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else pa.array(column)
    return col.dictionary_decode() if pa.types.is_dictionary(col.type) else col


def encode_keys(columns: Sequence) -> tuple[list[np.ndarray], list]:
    """Codes into the sorted distinct non-null values shared by several Arrow columns (-1 = null).

    Floating NaN counts as null. Columns of different types are first cast to one type that keeps
    numeric order where it can (integers of any width: int64; integers and floats: float64; only
    a real mix of numbers and strings falls back to strings).

    Parameters
    ----------
    columns : sequence of pyarrow arrays
        One column per split (chunked, dictionary-encoded or plain).

    Returns
    -------
    codes : list of numpy.ndarray
        Per column, the int64 index of each row's value in ``values`` (-1 = missing).
    values : list
        The sorted distinct non-null values (numbers numerically, strings lexically).

    Examples
    --------
    >>> import pyarrow as pa
    >>> codes, values = encode_keys([pa.array([10, 2, None, 2]), pa.array([7])])
    >>> values, [c.tolist() for c in codes]
    ([2, 7, 10], [[2, 0, -1, 0], [1]])
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = [plain_array(c) for c in columns]
    if any(pa.types.is_floating(c.type) for c in chunks):
        chunks = [pc.if_else(pc.is_nan(c), None, c) if pa.types.is_floating(c.type) else c for c in chunks]
    chunks = _common_type(chunks)
    uniq = pc.unique(pa.chunked_array(chunks)).drop_null()
    uniq = uniq.take(pc.array_sort_indices(uniq))
    codes = []
    for c in chunks:
        idx = pc.index_in(c, value_set=uniq)
        codes.append(idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64))
    return codes, uniq.to_pylist()


def _common_type(chunks: list) -> list:
    """Cast columns of several splits to one type that keeps numeric order where it can.

    All-null columns take the others' type; integer columns of different widths become int64,
    integer and float columns float64; only a real mix (numbers and strings) falls back to strings.
    """
    import pyarrow as pa

    typed = [c.type for c in chunks if not pa.types.is_null(c.type)]
    if not typed:
        return chunks
    if all(t == typed[0] for t in typed):
        target = typed[0]
    elif all(pa.types.is_integer(t) for t in typed):
        target = pa.int64()
    elif all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in typed):
        target = pa.float64()
    elif all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in typed):
        target = pa.large_string()
    else:
        target = pa.string()
    return [c if c.type == target else c.cast(target) for c in chunks]


def natural_id_assignment(
    codes: np.ndarray, num_values: int, min_samples: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Assignment of the partitioned split, and the value -> client map (-1 = dropped value).

    Values with fewer than ``max(min_samples, 1)`` rows get no client; the others get clients
    0, 1, ... in value order.

    Parameters
    ----------
    codes : numpy.ndarray
        int64 value code per row (-1 = missing), as from :func:`encode_keys`.
    num_values : int
        Number of distinct values.
    min_samples : int, default 1
        Fewest rows a value needs to become a client.

    Returns
    -------
    assignment : numpy.ndarray
        int32 client id per row (-1 = dropped).
    drop_reason : numpy.ndarray
        int8: ``client-too-small`` or ``missing-value`` for dropped rows, 0 for kept ones.
    client_of_value : numpy.ndarray
        int32 client id per value (-1 = dropped value).

    Examples
    --------
    >>> import numpy as np
    >>> assignment, reason, client_of_value = natural_id_assignment(np.array([0, 1, 1, -1, 2, 2]), 3, min_samples=2)
    >>> assignment.tolist(), client_of_value.tolist()
    ([-1, 0, 0, -1, 1, 1], [-1, 0, 1])
    """
    counts = np.bincount(codes[codes >= 0], minlength=num_values)
    keep_value = counts >= max(min_samples, 1)
    client_of_value = np.where(keep_value, np.cumsum(keep_value) - 1, -1).astype(np.int32)
    assignment, reason = map_codes(codes, client_of_value)
    return assignment, reason, client_of_value


def map_codes(codes: np.ndarray, client_of_value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows -> clients through a value -> client map; records why unmapped rows are dropped.

    Parameters
    ----------
    codes : numpy.ndarray
        int64 value code per row (-1 = missing).
    client_of_value : numpy.ndarray
        int32 client id per value (-1 = the value has no client).

    Returns
    -------
    assignment : numpy.ndarray
        int32 client id per row (-1 = dropped).
    drop_reason : numpy.ndarray
        int8: ``missing-value`` (code -1), ``client-too-small`` (value without a client) or 0.
    """
    safe = np.where(codes >= 0, codes, 0)
    assignment = np.where(codes >= 0, client_of_value[safe] if client_of_value.size else -1, -1).astype(np.int32)
    reason = np.zeros(codes.size, dtype=np.int8)
    reason[(assignment < 0) & (codes >= 0)] = DropReason.CLIENT_TOO_SMALL
    reason[codes < 0] = DropReason.MISSING_VALUE
    return assignment, reason


def value_clients(client_of_value: np.ndarray, values: Sequence, empty_message: str) -> tuple[int, tuple[str, ...]]:
    """(number of clients, client names): the values that have a client, named ``str(value)``.

    Raises :class:`HetbenchError` with ``empty_message`` when no value has a client.
    """
    kept = np.flatnonzero(client_of_value >= 0)
    if kept.size == 0:
        raise HetbenchError(empty_message)
    return int(kept.size), tuple(str(values[v]) for v in kept)


def map_to_clients(codes: np.ndarray, values: Sequence, train: Partition) -> tuple[np.ndarray, np.ndarray]:
    """Rows of another split -> the clients of ``train`` (named ``str(value)``): :func:`map_codes`
    with the value -> client map read off the train partition's client names."""
    index_of = {name: i for i, name in enumerate(train.client_names)}
    client_of_value = np.array([index_of.get(str(v), -1) for v in values], dtype=np.int32)
    return map_codes(codes, client_of_value)


class NaturalIdPartitioner(Partitioner):
    """Natural partition: one client per distinct value of a column (user id, writer, device, region).

    Clients are the distinct non-missing values of ``column`` over every split, in sorted order
    (numbers numerically, strings lexically), named ``str(value)``, so a value's rows in every
    split go to the same client. Values with fewer than ``min_samples`` training rows are dropped
    (``client-too-small``), as are rows whose value is missing (null or NaN: ``missing-value``).
    The assignment does not depend on the seed. :meth:`assign_split` places
    another split's rows on the same clients.

    Parameters
    ----------
    column : str, default "user_id"
        The column whose values are the clients.
    min_samples : int, default 1
        Fewest training rows a value needs to be a client; 0 acts as 1. Its rows of the partitioned
        split are its training rows, unless ``holdout_fraction`` is given.
    holdout_fraction : float, optional
        The ``client`` test policy's ``--test-fraction``, when the split is built under it (what
        ``hetbench partition natural-id`` passes): every client then holds out this fraction of its
        rows for testing (:func:`hetbench.splits.stratified_holdout`), and a value needs the rows
        :func:`~hetbench.partitioners.base.rows_for_training` computes to keep ``min_samples``
        training rows. Recorded in the recipe only when ``min_samples`` is above 1.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
       Distribution", ECCV 2020, sec. 4.1 (iNaturalist-User-120k: "we use [user ids] to partition
       the balanced training set") and sec. 4.2 (Landmarks-User-160k, by authorship).

    Examples
    --------
    >>> import datasets
    >>> from hetbench.partitioners import NaturalIdPartitioner
    >>> from hetbench.sources import load_table
    >>> table = load_table(datasets.Dataset.from_dict(
    ...     {"label": [0, 1, 1, 0, 1, 0], "writer": ["w2", "w1", "w2", None, "w3", "w2"]}))
    >>> part = NaturalIdPartitioner(column="writer", min_samples=2).partition(table)
    >>> part.client_names, part.assignment.tolist(), part.dropped_counts()
    (('w2',), [0, -1, 0, -1, -1, 0], {'client-too-small': 2, 'missing-value': 1})
    """

    name = "natural-id"

    def __init__(self, column: str = "user_id", min_samples: int = 1, holdout_fraction: float | None = None) -> None:
        if min_samples < 0:
            raise HetbenchError(f"`min_samples` must be >= 0 (got {min_samples})")
        self.column = column
        self.min_samples = int(min_samples)
        self.holdout_fraction = check_holdout(holdout_fraction, self.min_samples)

    def params(self) -> dict:
        params = {"column": self.column, "min_samples": self.min_samples}
        if self.holdout_fraction is not None:  # only when set: recipes without it stay as they were
            params["holdout_fraction"] = self.holdout_fraction
        return params

    def holding_out(self, fraction: float) -> "NaturalIdPartitioner":
        held = check_holdout(fraction, self.min_samples)
        if held is None or self.holdout_fraction is not None:
            return self
        out = copy.copy(self)
        out.holdout_fraction = held
        return out

    def min_rows(self) -> int:
        """Fewest rows of the partitioned split a value needs: ``min_samples`` training rows (at least
        one) once the ``client`` test policy has held out ``holdout_fraction`` of them."""
        return rows_for_training(max(self.min_samples, 1), self.holdout_fraction)

    def _too_few(self) -> str:
        """``at least N training rows (...)``: what the error of a split left without clients says."""
        return f"at least {holdout_note(max(self.min_samples, 1), self.holdout_fraction)}"

    def _encode(self, table):
        key = ("natural-id-codes", self.column)
        if key not in table._cache:
            cols = [arrow_column(table.splits[s], self.column) for s in table.split_names]
            codes, values = encode_keys(cols)
            table._cache[key] = (dict(zip(table.split_names, codes)), values)
        return table._cache[key]

    def _assign(self, table, split, rng):
        codes, values = self._encode(table)
        assignment, reason, client_of_value = natural_id_assignment(codes[split], len(values), self.min_rows())
        num_clients, names = value_clients(
            client_of_value, values, f"no value of '{self.column}' has {self._too_few()}; lower --min-samples",
        )
        return assignment, reason, num_clients, names

    def assign_split(self, table, split, train: Partition) -> Partition:
        """Rows of ``split`` go to their value's client; values that are no client drop their rows
        (``client-too-small``), missing values too (``missing-value``)."""
        codes, values = self._encode(table)
        assignment, reason = map_to_clients(codes[split], values, train)
        return split_partition(train, split, assignment, reason)
