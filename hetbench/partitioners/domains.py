"""Domain partition (DapperFL, NeurIPS 2024, section 4.1): clients spread over the domains of a
multi-domain data set (Digits: MNIST / USPS / SVHN / SYN; Office-Caltech: Amazon / Caltech / DSLR /
Webcam), each client holding a small random fraction of its domain's training rows (1 % per client
for Digits, 20 % for Office-Caltech).

How it works (randomness comes only from the ``numpy.random.Generator``):

1. The domains are the sorted distinct non-null values of ``column`` in the partitioned split; rows
   whose value is missing are dropped (``missing-value``).
2. Clients -> domains: first one client per domain (so every domain is covered), then each of the
   remaining ``num_clients - num_domains`` clients joins a domain drawn uniformly at random. Each
   client belongs to exactly one domain. Client ids are grouped by domain (the clients of the first
   domain come first) and named ``f"{domain}/{k}"``, ``k`` counting from 0 inside the domain.
3. Every client takes ``max(1, round(fraction * n_domain))`` rows of its domain (Python ``round``,
   half to even): a random permutation of the domain's rows is cut into consecutive slices, so the
   clients of a domain hold disjoint rows. Rows no client takes are dropped (``remainder``): they are
   unused, as in DapperFL.
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason
from hetbench.partitioners.base import Partitioner
from hetbench.partitioners.natural_id import encode_keys
from hetbench.table import arrow_column


def clients_per_domain(num_domains: int, num_clients: int, rng: np.random.Generator) -> np.ndarray:
    """How many clients each domain gets: one each, the rest to domains drawn uniformly at random."""
    if num_clients < num_domains:
        raise HetbenchError(
            f"more domains than clients: {num_domains} domains but --num-clients {num_clients}; "
            "every domain needs at least one client"
        )
    extra = rng.integers(0, num_domains, size=num_clients - num_domains)
    return (1 + np.bincount(extra, minlength=num_domains)).astype(np.int64)


def domains_assignment(
    codes: np.ndarray,
    num_domains: int,
    num_clients: int,
    fraction: float,
    rng: np.random.Generator,
    domain_names: list | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Assignment of the partitioned split.

    ``codes``: int64 domain code per row (-1 = missing). Returns (assignment int32, drop reason int8,
    domain_of_client int64); client ids are grouped by domain.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = codes.size
    counts = clients_per_domain(num_domains, num_clients, rng)
    domain_of_client = np.repeat(np.arange(num_domains, dtype=np.int64), counts)
    first_client = np.concatenate([[0], np.cumsum(counts)[:-1]])

    assignment = np.full(n, -1, dtype=np.int32)
    reason = np.full(n, int(DropReason.REMAINDER), dtype=np.int8)
    reason[codes < 0] = DropReason.MISSING_VALUE

    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(num_domains + 1))
    for d in range(num_domains):
        rows = order[bounds[d] : bounds[d + 1]]
        size = max(1, int(round(fraction * rows.size)))
        need = size * int(counts[d])
        if need > rows.size:
            name = domain_names[d] if domain_names is not None else d
            raise HetbenchError(
                f"domain '{name}' has {rows.size} rows but its {int(counts[d])} clients need "
                f"{int(counts[d])} x {size} = {need}; lower --fraction or --num-clients"
            )
        taken = rng.permutation(rows)[:need]
        assignment[taken] = first_client[d] + np.arange(need, dtype=np.int64) // size
        reason[taken] = 0
    return assignment, reason, domain_of_client


class DomainsPartitioner(Partitioner):
    """``num_clients`` clients over the domains in ``column``, each with ``fraction`` of its domain's
    training rows (DapperFL section 4.1; see the module docstring for the exact procedure).

    Only the partitioned (train) split is assigned: there is no ``assign_split``. The build keeps the
    source's test split whole as a global test set, with its ``domain`` column, which is how
    per-domain accuracy is reported (each domain's test rows are shared by all its clients).
    """

    name = "domains"

    def __init__(self, num_clients: int = 10, fraction: float = 0.01, column: str = "domain") -> None:
        if int(num_clients) != num_clients or num_clients < 1:
            raise HetbenchError(f"--num-clients must be a positive integer (got {num_clients})")
        fraction = float(fraction)
        if not (math.isfinite(fraction) and 0.0 < fraction <= 1.0):
            raise HetbenchError(f"--fraction must be in (0, 1] (got {fraction})")
        self.num_clients = int(num_clients)
        self.fraction = fraction
        self.column = column

    def params(self) -> dict:
        return {"num_clients": self.num_clients, "fraction": self.fraction, "column": self.column}

    def _assign(self, table, split, rng):
        (codes,), values = encode_keys([arrow_column(table.splits[split], self.column)])
        if not values:
            raise HetbenchError(f"column '{self.column}' has no non-missing value in split '{split}'")
        assignment, reason, domain_of_client = domains_assignment(
            codes, len(values), self.num_clients, self.fraction, rng, values
        )
        names = []
        for d in range(len(values)):
            k = int(np.count_nonzero(domain_of_client == d))
            names.extend(f"{values[d]}/{i}" for i in range(k))
        return assignment, reason, self.num_clients, tuple(names)
