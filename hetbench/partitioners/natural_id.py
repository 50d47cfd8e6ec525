"""Natural partition: one client per distinct value of a column (user id, writer, device, region).

Client ids follow the *sorted* distinct values over every split (numbers numerically, strings
lexically), so a user's train and test rows get the same client id (the bug Flower fixed in #5340).
Clients with fewer than ``min_samples`` rows in the partitioned split are dropped (reason
``client-too-small``) together with their rows in the other splits; rows whose value is missing are
dropped (``missing-value``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition
from hetbench.partitioners.base import Partitioner
from hetbench.table import arrow_column


def encode_keys(columns: Sequence) -> tuple[list[np.ndarray], list]:
    """Codes into the sorted distinct non-null values shared by several Arrow columns (-1 = null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else pa.array(c) for c in columns]
    chunks = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
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

    ``codes``: int64 value code per row (-1 = missing). Returns (assignment int32, drop reason int8,
    client_of_value int32).
    """
    counts = np.bincount(codes[codes >= 0], minlength=num_values)
    keep_value = counts >= max(min_samples, 1)
    client_of_value = np.where(keep_value, np.cumsum(keep_value) - 1, -1).astype(np.int32)
    assignment, reason = map_codes(codes, client_of_value)
    return assignment, reason, client_of_value


def map_codes(codes: np.ndarray, client_of_value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows -> clients through a value -> client map; records why unmapped rows are dropped."""
    safe = np.where(codes >= 0, codes, 0)
    assignment = np.where(codes >= 0, client_of_value[safe] if client_of_value.size else -1, -1).astype(np.int32)
    reason = np.zeros(codes.size, dtype=np.int8)
    reason[(assignment < 0) & (codes >= 0)] = DropReason.CLIENT_TOO_SMALL
    reason[codes < 0] = DropReason.MISSING_VALUE
    return assignment, reason


class NaturalIdPartitioner(Partitioner):
    """One client per distinct value of ``column`` (sorted), keeping clients with >= ``min_samples``."""

    name = "natural-id"

    def __init__(self, column: str = "user_id", min_samples: int = 1) -> None:
        if min_samples < 0:
            raise HetbenchError(f"--min-samples must be >= 0 (got {min_samples})")
        self.column = column
        self.min_samples = int(min_samples)

    def params(self) -> dict:
        return {"column": self.column, "min_samples": self.min_samples}

    def _encode(self, table):
        key = ("natural-id-codes", self.column)
        if key not in table._cache:
            cols = [arrow_column(table.splits[s], self.column) for s in table.split_names]
            codes, values = encode_keys(cols)
            table._cache[key] = (dict(zip(table.split_names, codes)), values)
        return table._cache[key]

    def _assign(self, table, split, rng):
        codes, values = self._encode(table)
        assignment, reason, client_of_value = natural_id_assignment(codes[split], len(values), self.min_samples)
        kept = np.flatnonzero(client_of_value >= 0)
        if kept.size == 0:
            raise HetbenchError(
                f"no value of '{self.column}' has at least {self.min_samples} samples; lower --min-samples"
            )
        names = tuple(str(values[v]) for v in kept)
        return assignment, reason, int(kept.size), names

    def assign_split(self, table, split, train: Partition) -> Partition:
        codes, values = self._encode(table)
        index_of = {name: i for i, name in enumerate(train.client_names)}
        client_of_value = np.array([index_of.get(str(v), -1) for v in values], dtype=np.int32)
        assignment, reason = map_codes(codes[split], client_of_value)
        recipe = dict(train.recipe, split=split)
        return Partition(assignment, train.num_clients, train.client_names, recipe, reason)
