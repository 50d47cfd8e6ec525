"""IID partitioner: a uniform random permutation cut into client-sized pieces."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hetbench.partition import default_client_names, parse_sizes
from hetbench.partitioners.base import Partitioner


def iid_assignment(n: int, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Client k receives ``sizes[k]`` samples drawn uniformly without replacement."""
    assignment = np.empty(n, dtype=np.int32)
    assignment[rng.permutation(n)] = np.repeat(np.arange(sizes.size, dtype=np.int32), sizes)
    return assignment


class IIDPartitioner(Partitioner):
    """Shuffled, equal sizes (``n // N``, the first ``n % N`` clients one larger) or ``sizes``."""

    name = "iid"

    def __init__(self, num_clients: int = 10, sizes: Sequence[int] | None = None) -> None:
        self.num_clients = int(num_clients)
        self.sizes = None if sizes is None else [int(s) for s in sizes]

    def params(self) -> dict:
        return {"num_clients": self.num_clients, "sizes": self.sizes}

    def _assign(self, table, split, rng):
        n = table.num_rows(split)
        sizes = parse_sizes(self.sizes, self.num_clients, n)
        return iid_assignment(n, sizes, rng), None, self.num_clients, default_client_names(self.num_clients)
