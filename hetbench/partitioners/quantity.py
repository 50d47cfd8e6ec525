"""Quantity skew: client sizes drawn from a distribution, labels IID within every client.

NIID-Bench's "quantity skew" (Li et al., ICDE 2022, sec. 3.3): the rows are shuffled and cut into
clients whose sizes follow random proportions q ~ Dir_N(beta), so each client's labels are an IID
sample of the population and only the amounts differ. Besides the Dirichlet, two size laws that
other federated benchmarks use:

* ``power-law``: weights x_k drawn from a Pareto (type I) law with tail index beta,
  P(x_k > x) = x**-beta for x >= 1 (log x_k ~ Exponential(1) / beta); the "power law" of client
  sizes that LEAF (Caldas et al., 2018) and FedProx (Li et al., MLSys 2020, sec. 5.1) describe.
* ``lognormal``: log x_k ~ Normal(0, beta**2), FedLab's unbalanced IID split
  (``balance=False``, ``unbalance_sgm`` = sigma = beta) and the log-normal sizes of Flower Datasets'
  ``DistributionPartitioner`` example; the mean log size cancels once the weights are normalised.

Direction: a smaller beta gives more unequal sizes for ``dirichlet`` and ``power-law``; a *larger*
beta (sigma) does for ``lognormal``. The weights are handled in log space, so no beta underflows.
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import default_client_names
from hetbench.partitioners._alloc import largest_remainder, log_dirichlet
from hetbench.partitioners.base import Partitioner
from hetbench.partitioners.iid import iid_assignment

SIZE_DISTS = ("dirichlet", "power-law", "lognormal")


def check_beta(beta: float) -> float:
    """``beta`` as a finite float > 0, else a :class:`~hetbench.errors.HetbenchError`.

    Examples
    --------
    >>> check_beta("0.5")
    0.5
    """
    try:
        value = float(beta)
    except (TypeError, ValueError):
        raise HetbenchError(f"`beta` must be a number > 0 (got {beta!r})") from None
    if not math.isfinite(value) or value <= 0:
        raise HetbenchError(f"`beta` must be a finite number > 0 (got {beta})")
    return value


def log_size_weights(size_dist: str, num_clients: int, beta: float, rng: np.random.Generator) -> np.ndarray:
    """Log of the N clients' size proportions (their exp sums to 1), drawn from ``size_dist``.

    ``dirichlet``: log q with q ~ Dir(beta * 1_N) (:func:`~hetbench.partitioners._alloc.log_dirichlet`,
    exact where q underflows); ``power-law``: log x_k = E_k / beta, E_k ~ Exp(1) (x_k Pareto with tail
    index beta); ``lognormal``: log x_k = beta * Z_k, Z_k ~ N(0, 1). The last two are normalised
    (q_k = x_k / sum_j x_j) in log space.

    Parameters
    ----------
    size_dist : {"dirichlet", "power-law", "lognormal"}
        The size law.
    num_clients : int
        N, at least 1.
    beta : float
        Dirichlet concentration, Pareto tail index or log-normal sigma (> 0).
    rng : numpy.random.Generator
        Draws the weights.

    Returns
    -------
    numpy.ndarray
        float64 (N,) log proportions.

    Examples
    --------
    >>> import numpy as np
    >>> lw = log_size_weights("lognormal", 4, 1.0, np.random.default_rng(0))
    >>> lw.shape, bool(np.isclose(np.exp(lw).sum(), 1.0))
    ((4,), True)
    """
    if size_dist == "dirichlet":
        return log_dirichlet(np.full(num_clients, beta), 1, rng)[0]
    if size_dist == "power-law":
        g = rng.standard_exponential(num_clients) / beta
    elif size_dist == "lognormal":
        g = beta * rng.standard_normal(num_clients)
    else:
        raise HetbenchError(f"unknown `size_dist` '{size_dist}'; choose one of: {', '.join(SIZE_DISTS)}")
    top = g.max()
    return g - (top + np.log(np.exp(g - top).sum()))


def quantity_sizes(n: int, size_dist: str, num_clients: int, beta: float, rng: np.random.Generator) -> np.ndarray:
    """Client sizes summing to ``n``: one row for every client first, the other n - N rows by the drawn
    proportions q (largest remainder, ties at random).

    The minimum-size rule: with n >= N rows every client holds at least one (size_k = 1 +
    round(q_k (n - N))); n < N raises. The first row each makes a size slightly less skewed than
    q_k n, by at most one row per client.

    Parameters
    ----------
    n : int
        Number of rows to split.
    size_dist, num_clients, beta, rng
        As for :func:`log_size_weights`.

    Returns
    -------
    numpy.ndarray
        int64 (N,) sizes, each >= 1, summing to ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> sizes = quantity_sizes(100, "dirichlet", 5, 0.5, np.random.default_rng(0))
    >>> int(sizes.sum()), int(sizes.min()) >= 1
    (100, True)
    """
    if num_clients < 1:
        raise HetbenchError(f"`num_clients` must be at least 1 (got {num_clients})")
    if num_clients > n:
        raise HetbenchError(f"more clients ({num_clients}) than samples ({n})")
    q = np.exp(log_size_weights(size_dist, num_clients, beta, rng))
    rest = n - num_clients
    quotas = q / q.sum() * rest
    return 1 + largest_remainder(quotas, rest, rng)


def quantity_assignment(n: int, size_dist: str, num_clients: int, beta: float, rng: np.random.Generator) -> np.ndarray:
    """Client id per row: :func:`quantity_sizes`, then one uniform shuffle cut by the sizes
    (:func:`~hetbench.partitioners.iid.iid_assignment`), so labels are IID within each client.

    Examples
    --------
    >>> import numpy as np
    >>> a = quantity_assignment(20, "power-law", 3, 1.5, np.random.default_rng(1))
    >>> a.size, int(np.bincount(a, minlength=3).sum()), int(np.bincount(a, minlength=3).min()) >= 1
    (20, 20, True)
    """
    sizes = quantity_sizes(n, size_dist, num_clients, beta, rng)
    return iid_assignment(n, sizes, rng)


class QuantityPartitioner(Partitioner):
    """Quantity skew: random client sizes, labels IID within each client.

    Client sizes follow proportions drawn from ``size_dist`` (module notes): NIID-Bench's
    q ~ Dir_N(beta) ([1]_ sec. 3.3, "quantity skew"), Pareto weights with tail index beta (the
    power-law client sizes of [2]_ and [3]_), or log-normal weights with sigma = beta ([4]_). Every
    client first gets one row, the remaining n - N rows are shared by the proportions (largest
    remainder), and a uniform shuffle of the rows is cut at those sizes. Nothing is dropped.

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients N (at least 1, at most the number of samples).
    size_dist : {"dirichlet", "power-law", "lognormal"}, default "dirichlet"
        The size law.
    beta : float, default 0.5
        Dirichlet concentration / Pareto tail index (smaller: more unequal) or log-normal sigma
        (larger: more unequal); finite and > 0.

    References
    ----------
    .. [1] Q. Li, Y. Diao, Q. Chen and B. He, "Federated Learning on Non-IID Data Silos: An
       Experimental Study" (NIID-Bench), ICDE 2022, sec. 3.3 (quantity skew: q ~ Dir_N(beta), a
       q_j share of the samples to party j).
    .. [2] S. Caldas et al., "LEAF: A Benchmark for Federated Settings", arXiv:1812.01097, 2018
       (client sizes following a power law).
    .. [3] T. Li, A. K. Sahu, M. Zaheer, M. Sanjabi, A. Talwalkar and V. Smith, "Federated
       Optimization in Heterogeneous Networks" (FedProx), MLSys 2020, sec. 5.1 (samples per device
       following a power law).
    .. [4] FedLab (Zeng et al., JMLR 2023), ``balance=False`` IID partitions: sizes
       ~ LogNormal(log(n/N), unbalance_sgm), normalised to n.

    Examples
    --------
    >>> from hetbench.partitioners import QuantityPartitioner
    >>> from hetbench.sources import load_table
    >>> digits = load_table("builtin:digits")  # 1,797 samples
    >>> part = QuantityPartitioner(5, "dirichlet", beta=0.5).partition(digits, seed=0)
    >>> sizes = part.client_sizes()
    >>> int(sizes.sum()), int(sizes.min()) >= 1, part.recipe["params"]
    (1797, True, {'num_clients': 5, 'size_dist': 'dirichlet', 'beta': 0.5})
    """

    name = "quantity"

    def __init__(self, num_clients: int = 10, size_dist: str = "dirichlet", beta: float = 0.5) -> None:
        if size_dist not in SIZE_DISTS:
            raise HetbenchError(f"unknown `size_dist` '{size_dist}'; choose one of: {', '.join(SIZE_DISTS)}")
        if int(num_clients) < 1:
            raise HetbenchError(f"`num_clients` must be at least 1 (got {num_clients})")
        self.num_clients = int(num_clients)
        self.size_dist = size_dist
        self.beta = check_beta(beta)

    def params(self) -> dict:
        return {"num_clients": self.num_clients, "size_dist": self.size_dist, "beta": self.beta}

    def _assign(self, table, split, rng):
        n = table.num_rows(split)
        assignment = quantity_assignment(n, self.size_dist, self.num_clients, self.beta, rng)
        return assignment, None, self.num_clients, default_client_names(self.num_clients)


def quantity_extras(partitioner: QuantityPartitioner):
    """``extras`` for :func:`hetbench.pipeline.make_split`: the size law, its beta and the Gini
    coefficient, min, median and max of the drawn client sizes (every training-split row, before a
    per-client test hold-out) under ``report.json``'s ``quantity``.

    Examples
    --------
    >>> from hetbench.partitioners import QuantityPartitioner
    >>> from hetbench.pipeline import PreparedSplit
    >>> from hetbench.sources import load_table
    >>> p = QuantityPartitioner(4, "lognormal", 1.0)
    >>> split = PreparedSplit(load_table("builtin:digits"), p).build()
    >>> report, plots = quantity_extras(p)(split)
    >>> sorted(report["quantity"]), plots is None
    (['beta', 'client_sizes', 'gini', 'max', 'median', 'min', 'size_dist'], True)
    """

    def extras(split):
        from hetbench.metrics import gini

        sizes = split.partition.client_sizes()
        return {
            "quantity": {
                "size_dist": partitioner.size_dist,
                "beta": partitioner.beta,
                "client_sizes": [int(s) for s in sizes],
                "gini": round(gini(sizes), 6),
                "min": int(sizes.min()),
                "median": float(np.median(sizes)),
                "max": int(sizes.max()),
            }
        }, None

    return extras
