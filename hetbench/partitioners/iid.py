"""IID partitioner: a uniform random permutation cut into client-sized pieces.

The IID baseline of McMahan et al. (2017, sec. 3: "the data is shuffled, and then partitioned into
100 clients each receiving 600 examples") and of every benchmark since; the reference point
(alpha -> inf) of the Dirichlet partitioners.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hetbench.partition import default_client_names, parse_sizes
from hetbench.partitioners.base import Partitioner


def iid_assignment(n: int, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Client k receives ``sizes[k]`` samples drawn uniformly without replacement.

    Parameters
    ----------
    n : int
        Number of samples; must equal ``sizes.sum()``.
    sizes : numpy.ndarray
        Non-negative client sizes.
    rng : numpy.random.Generator
        Draws the one permutation of ``range(n)``.

    Returns
    -------
    numpy.ndarray
        int32 client id per sample.

    Examples
    --------
    >>> import numpy as np
    >>> np.bincount(iid_assignment(10, np.array([5, 3, 2]), np.random.default_rng(0))).tolist()
    [5, 3, 2]
    """
    assignment = np.empty(n, dtype=np.int32)
    assignment[rng.permutation(n)] = np.repeat(np.arange(sizes.size, dtype=np.int32), sizes)
    return assignment


class IIDPartitioner(Partitioner):
    """IID split: a uniformly shuffled split cut into client-sized pieces.

    Each client receives a uniform random sample, without replacement, of the partitioned split:
    ``n // num_clients`` samples each (the first ``n % num_clients`` clients one more) or exactly
    the given ``sizes``. Nothing is dropped.

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients N (at least 1, at most the number of samples).
    sizes : sequence of int, optional
        Client sizes, one per client, summing to the number of samples; default equal sizes.

    References
    ----------
    .. [1] H. B. McMahan, E. Moore, D. Ramage, S. Hampson and B. Agüera y Arcas,
       "Communication-Efficient Learning of Deep Networks from Decentralized Data", AISTATS 2017,
       sec. 3 (the IID partition: shuffle, then 100 clients of 600 examples each).

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.sources import load_table
    >>> digits = load_table("builtin:digits")  # 1,797 samples
    >>> IIDPartitioner(num_clients=4).partition(digits, seed=0).client_sizes().tolist()
    [450, 449, 449, 449]
    >>> IIDPartitioner(num_clients=3, sizes=[997, 500, 300]).partition(digits, seed=0).client_sizes().tolist()
    [997, 500, 300]
    """

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
