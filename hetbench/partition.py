"""Partition: the sample -> client assignment, its recipe and its fingerprint
(``docs/output-contract.md``, "Fingerprints").

Everything else about a split (client sizes, per-client indices, label matrices, EMD) is derived
from the assignment, so this object stays small and hashable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Mapping, Sequence

import numpy as np

from hetbench.hashing import canonical_json, sha256_of_arrays


class DropReason(IntEnum):
    """Why a sample has assignment -1. Stored as int8 beside the assignment."""

    KEPT = 0
    CLASS_UNASSIGNED = 1  # its class was given to no client (classes-per-client, alpha=0 with few clients)
    CLIENT_TOO_SMALL = 2  # its natural client had fewer than --min-samples rows (training rows, after the hold-out)
    REMAINDER = 3  # left over when cutting equal shards / equal sizes
    MISSING_VALUE = 4  # the partitioning column is missing (null / NaN) for this sample
    FILTERED = 5  # removed by a recipe filter
    OUT_OF_RANGE = 6  # a coordinate or value out of its valid range
    HELD_OUT = 7  # its client was held out whole as test data (--test-split heldout)

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")


@dataclass(frozen=True)
class Partition:
    """Assignment of ``n`` samples to ``num_clients`` clients.

    Attributes:
        assignment: int32, one client index per sample; -1 means dropped.
        num_clients: number of clients (client indices are ``0 .. num_clients-1``).
        client_names: a display name per client (S2 token, user id, device, ``"client_7"``).
        recipe: method, parameters, seed and input fingerprint: enough to recompute the assignment.
        drop_reason: int8 :class:`DropReason` per sample (0 where kept).
    """

    assignment: np.ndarray
    num_clients: int
    client_names: tuple[str, ...]
    recipe: Mapping[str, Any]
    drop_reason: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        a = np.asarray(self.assignment)
        if a.ndim != 1:
            raise ValueError("assignment must be one-dimensional")
        a = a.astype(np.int32, copy=False)
        if a.size and (a.min() < -1 or a.max() >= self.num_clients):
            raise ValueError("assignment holds client indices outside [-1, num_clients)")
        object.__setattr__(self, "assignment", a)
        if len(self.client_names) != self.num_clients:
            raise ValueError("need exactly one client name per client")
        object.__setattr__(self, "client_names", tuple(str(c) for c in self.client_names))
        r = self.drop_reason
        if r is None:
            r = np.where(a < 0, int(DropReason.FILTERED), 0).astype(np.int8)
        r = np.asarray(r, dtype=np.int8)
        if r.shape != a.shape or np.any((r == 0) != (a >= 0)):
            raise ValueError("drop_reason must be non-zero exactly where the assignment is -1")
        object.__setattr__(self, "drop_reason", r)
        object.__setattr__(self, "recipe", dict(self.recipe))

    # ---- derived views -------------------------------------------------------------------
    @property
    def num_samples(self) -> int:
        return int(self.assignment.size)

    @property
    def num_kept(self) -> int:
        return int(np.count_nonzero(self.assignment >= 0))

    def client_sizes(self) -> np.ndarray:
        """Samples per client (int64, length ``num_clients``)."""
        kept = self.assignment[self.assignment >= 0]
        return np.bincount(kept, minlength=self.num_clients).astype(np.int64)

    def client_order(self) -> tuple[np.ndarray, np.ndarray]:
        """(order, bounds): kept sample indices grouped by client (ascending inside each client), and
        client c's slice ``order[bounds[c]:bounds[c + 1]]``. One stable radix sort where the client
        ids fit in 16 bits, no per-client scans."""
        key = self.assignment + 1  # dropped (-1) first
        if self.num_clients < 65535:
            key = key.astype(np.uint16)
        order = np.argsort(key, kind="stable")
        bounds = np.searchsorted(self.assignment[order], np.arange(0, self.num_clients + 1))
        return order[bounds[0] :], bounds - bounds[0]

    def client_indices(self) -> list[np.ndarray]:
        """Sample indices of every client, ascending."""
        order, bounds = self.client_order()
        return [order[bounds[c] : bounds[c + 1]] for c in range(self.num_clients)]

    def dropped_counts(self) -> dict[str, int]:
        codes, counts = np.unique(self.drop_reason[self.drop_reason != 0], return_counts=True)
        return {DropReason(int(c)).label: int(k) for c, k in zip(codes, counts)}

    def label_matrix(self, labels: np.ndarray, num_classes: int) -> np.ndarray:
        """Clients x classes count matrix of the kept samples."""
        from hetbench.metrics import label_matrix

        return label_matrix(self.assignment, np.asarray(labels), self.num_clients, num_classes)

    # ---- identity ------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        """sha256 over the assignment and the canonical JSON of the recipe."""
        return sha256_of_arrays(self.assignment, extra=canonical_json(self.recipe))

    def with_recipe(self, **updates: Any) -> "Partition":
        recipe = dict(self.recipe)
        recipe.update(updates)
        return Partition(self.assignment, self.num_clients, self.client_names, recipe, self.drop_reason)


def default_client_names(num_clients: int) -> tuple[str, ...]:
    width = max(1, len(str(max(num_clients - 1, 0))))
    return tuple(f"client_{i:0{width}d}" for i in range(num_clients))


def parse_sizes(sizes: Sequence[int] | None, num_clients: int, n: int) -> np.ndarray:
    """Client sizes: equal (n // N, the first n % N clients one larger) or exactly as given."""
    from hetbench.errors import HetbenchError

    if num_clients < 1:
        raise HetbenchError(f"`num_clients` must be at least 1 (got {num_clients})")
    if sizes is None:
        if num_clients > n:
            raise HetbenchError(f"more clients ({num_clients}) than samples ({n})")
        base = np.full(num_clients, n // num_clients, dtype=np.int64)
        base[: n % num_clients] += 1
        return base
    s = np.asarray(list(sizes), dtype=np.int64)
    if s.size != num_clients:
        raise HetbenchError(f"`sizes` gives {s.size} sizes for {num_clients} clients")
    if np.any(s < 0):
        raise HetbenchError("`sizes` must not be negative")
    if int(s.sum()) != n:
        raise HetbenchError(f"`sizes` sum to {int(s.sum())} but the data has {n} samples")
    return s
