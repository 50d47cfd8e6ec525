"""IID partitioner: a uniform random permutation cut into client-sized pieces.

The IID baseline of McMahan et al. (2017, sec. 3: "the data is shuffled, and then partitioned into
100 clients each receiving 600 examples") and of every benchmark since; the reference point
(alpha -> inf) of the Dirichlet partitioners.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, default_client_names, parse_sizes
from hetbench.partitioners.base import Partitioner, sizes_before_holdout  # noqa: F401 (re-exported)


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
    holdout_fraction : float, optional
        With ``sizes``: the sizes count the *training* rows left after every client holds out this
        fraction of its rows (the ``client`` test policy at that ``--test-fraction``), which is what
        ``hetbench partition iid --sizes`` and its summary count. Each client then gets the rows
        :func:`sizes_before_holdout` computes; the sizes may sum to less than the training rows
        available, and the rows left over are dropped (reason ``remainder``).

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
    >>> part = IIDPartitioner(num_clients=2, sizes=[1000, 400], holdout_fraction=0.2).partition(digits, seed=0)
    >>> part.client_sizes().tolist(), part.dropped_counts()      # 1000 and 400 rows left after the hold-out
    ([1250, 500], {'remainder': 47})
    """

    name = "iid"

    def __init__(
        self, num_clients: int = 10, sizes: Sequence[int] | None = None, holdout_fraction: float | None = None
    ) -> None:
        self.num_clients = int(num_clients)
        self.sizes = None if sizes is None else [int(s) for s in sizes]
        self.holdout_fraction = None if holdout_fraction is None or sizes is None else float(holdout_fraction)

    def params(self) -> dict:
        params = {"num_clients": self.num_clients, "sizes": self.sizes}
        if self.holdout_fraction is not None:  # only when set: recipes without it stay as they were
            params["holdout_fraction"] = self.holdout_fraction
        return params

    def holding_out(self, fraction: float) -> "IIDPartitioner":
        if self.sizes is None or self.holdout_fraction is not None:
            return self
        return IIDPartitioner(self.num_clients, self.sizes, fraction)

    def _assign(self, table, split, rng):
        n = table.num_rows(split)
        f = self.holdout_fraction
        if f is None:
            sizes = parse_sizes(self.sizes, self.num_clients, n)
            return iid_assignment(n, sizes, rng), None, self.num_clients, default_client_names(self.num_clients)
        if not 0.0 < f < 1.0:
            raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {f})")
        train = parse_sizes(self.sizes, self.num_clients, int(np.asarray(self.sizes, dtype=np.int64).sum()))
        sizes = sizes_before_holdout(train, f)
        available = int(n - np.rint(f * n))
        if int(sizes.sum()) > n:
            raise HetbenchError(
                f"`sizes` ask for {int(train.sum())} training rows ({int(sizes.sum())} rows before each client holds "
                f"out {f:g} of its rows for testing) but the data has {n} rows (about {available} for training)"
            )
        assignment = iid_assignment(n, np.append(sizes, n - sizes.sum()), rng)
        left = assignment == self.num_clients  # the rows no size asked for
        assignment[left] = -1
        reason = np.where(left, np.int8(DropReason.REMAINDER), np.int8(0)).astype(np.int8)
        return assignment, reason, self.num_clients, default_client_names(self.num_clients)
