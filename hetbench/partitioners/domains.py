"""Domain partition (DapperFL, Jia et al., NeurIPS 2024, section 4.1): clients spread over the domains of a
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
4. With ``purity`` lambda < 1 (``--purity``), a client keeps the size of step 3 but takes only a share
   lambda of it from its domain and the rest from the other domains in equal shares
   (:func:`hetbench.partitioners.purity.mix_groups`); lambda = 1 is steps 1-3 unchanged.
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
    """How many clients each domain gets: one each, the rest to domains drawn uniformly at random.

    Examples
    --------
    >>> import numpy as np
    >>> clients_per_domain(3, 6, np.random.default_rng(0)).tolist()
    [1, 3, 2]
    """
    if num_clients < num_domains:
        raise HetbenchError(
            f"more domains than clients: {num_domains} domains but `num_clients` {num_clients}; "
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
    purity: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Assignment of the partitioned split (steps 2 and 3 of the module docstring).

    Parameters
    ----------
    codes : numpy.ndarray
        int64 domain code per row (-1 = missing).
    num_domains : int
        Number of domains (codes 0 .. num_domains - 1).
    num_clients : int
        Number of clients, at least ``num_domains``.
    fraction : float
        Share of its domain's rows each client takes (``max(1, round(fraction * n_domain))``).
    rng : numpy.random.Generator
        Draws the clients' domains and their rows.
    domain_names : list, optional
        Names of the domains, for error messages.
    purity : float
        Share of a client's rows from its own domain, in [1/D, 1] (step 4 of the module docstring).

    Returns
    -------
    assignment : numpy.ndarray
        int32 client id per row (-1 = dropped); client ids are grouped by domain.
    drop_reason : numpy.ndarray
        int8: ``missing-value``, ``remainder`` (a row no client takes) or 0.
    domain_of_client : numpy.ndarray
        int64 domain code per client.

    Raises
    ------
    HetbenchError
        More domains than clients, or a domain too small for its clients.
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
    if purity < 1.0:
        from hetbench.partitioners.purity import mix_groups

        sizes = np.array([max(1, int(round(fraction * (bounds[d + 1] - bounds[d])))) for d in domain_of_client.tolist()])
        names = [str(domain_names[d]) if domain_names is not None else str(d) for d in range(num_domains)]
        assignment = mix_groups(codes, domain_of_client, sizes, purity, rng, [f"domain '{n}'" for n in names])
        reason[assignment >= 0] = 0
        return assignment, reason, domain_of_client
    for d in range(num_domains):
        rows = order[bounds[d] : bounds[d + 1]]
        size = max(1, int(round(fraction * rows.size)))
        need = size * int(counts[d])
        if need > rows.size:
            name = domain_names[d] if domain_names is not None else d
            raise HetbenchError(
                f"domain '{name}' has {rows.size} rows but its {int(counts[d])} clients need "
                f"{int(counts[d])} x {size} = {need}; lower `fraction` or `num_clients`"
            )
        taken = rng.permutation(rows)[:need]
        assignment[taken] = first_client[d] + np.arange(need, dtype=np.int64) // size
        reason[taken] = 0
    return assignment, reason, domain_of_client


class DomainsPartitioner(Partitioner):
    """Domain clients: ``num_clients`` clients over the domains in ``column``, each with
    ``fraction`` of its domain's training rows (DapperFL section 4.1).

    Every domain gets one client, the remaining clients join domains drawn uniformly at random;
    every client takes ``max(1, round(fraction * n_domain))`` random rows of its domain, disjoint
    from the other clients' (see the module docstring for the exact procedure). Client ids are
    grouped by domain and named ``"{domain}/{k}"``. Rows no client takes are dropped
    (``remainder``), rows without a domain too (``missing-value``).

    Only the partitioned (train) split is assigned: there is no ``assign_split``. The build keeps the
    source's test split whole as a global test set, with its ``domain`` column, which is how
    per-domain accuracy is reported (each domain's test rows are shared by all its clients).

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients, a positive integer, at least the number of domains (DapperFL: 10).
    fraction : float, default 0.01
        Share of its domain's rows each client holds, in (0, 1] (DapperFL: 0.01 for Digits, 0.2
        for Office-Caltech).
    column : str, default "domain"
        The column naming each row's domain.
    purity : float, default 1.0
        Share of a client's rows from its own domain, in [1/D, 1] for D domains (Bai et al. 2024's lambda):
        1 is DapperFL's split, 1/D a uniform mix (:mod:`hetbench.partitioners.purity`).

    References
    ----------
    .. [1] Y. Jia, X. Zhang, H. Hu, K.-K. R. Choo, L. Qi, X. Xu, A. Beheshti and W. Dou,
       "DapperFL: Domain Adaptive Federated Learning with Model Fusion Pruning for Edge Devices",
       NeurIPS 2024, sec. 4.1, "Datasets and Data Partition" (10 clients distributed randomly over
       the domains, at least one per domain, each in one domain, holding a random 1 % (Digits) or
       20 % (Office Caltech) of its domain's data).

    Examples
    --------
    >>> import datasets
    >>> from hetbench.partitioners import DomainsPartitioner
    >>> from hetbench.sources import load_table
    >>> domains = ["mnist"] * 400 + ["svhn"] * 300 + ["usps"] * 100
    >>> table = load_table(datasets.Dataset.from_dict({"label": [i % 10 for i in range(800)], "domain": domains}))
    >>> part = DomainsPartitioner(num_clients=6, fraction=0.05).partition(table, seed=0)
    >>> part.client_names
    ('mnist/0', 'svhn/0', 'svhn/1', 'svhn/2', 'usps/0', 'usps/1')
    >>> part.client_sizes().tolist(), part.dropped_counts()
    ([20, 15, 15, 15, 5, 5], {'remainder': 725})
    """

    name = "domains"

    def __init__(self, num_clients: int = 10, fraction: float = 0.01, column: str = "domain", purity: float = 1.0) -> None:
        if int(num_clients) != num_clients or num_clients < 1:
            raise HetbenchError(f"`num_clients` must be a positive integer (got {num_clients})")
        fraction = float(fraction)
        if not (math.isfinite(fraction) and 0.0 < fraction <= 1.0):
            raise HetbenchError(f"`fraction` must be in (0, 1] (got {fraction})")
        self.num_clients = int(num_clients)
        self.fraction = fraction
        self.column = column
        purity = float(purity)
        if not (math.isfinite(purity) and 0.0 < purity <= 1.0):
            raise HetbenchError(f"`purity` must be in [1/G, 1] for G domains (got {purity})")
        self.purity = purity

    def params(self) -> dict:
        params = {"num_clients": self.num_clients, "fraction": self.fraction, "column": self.column}
        if self.purity != 1.0:  # only when set: the recipes of pure splits stay as they were
            params["purity"] = self.purity
        return params

    def _assign(self, table, split, rng):
        (codes,), values = encode_keys([arrow_column(table.splits[split], self.column)])
        if not values:
            raise HetbenchError(f"column '{self.column}' has no non-missing value in split '{split}'")
        if self.purity != 1.0:
            from hetbench.partitioners.purity import check_purity

            check_purity(self.purity, len(values), "domains")
        assignment, reason, domain_of_client = domains_assignment(
            codes, len(values), self.num_clients, self.fraction, rng, values, self.purity
        )
        names = []
        for d in range(len(values)):
            k = int(np.count_nonzero(domain_of_client == d))
            names.extend(f"{values[d]}/{i}" for i in range(k))
        return assignment, reason, self.num_clients, tuple(names)
