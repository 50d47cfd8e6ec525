"""Label-Dirichlet partitioners, both schemes that the literature calls "Dirichlet".

``scheme="client"`` - Hsu, Qi & Brown (2019 sec. 3; 2020 Appendix B.1), exactly: each client k draws
    q_k ~ Dir(alpha * p) over the C classes, p the population's class distribution (so the
    concentration sums to alpha), has a fixed size (n/N or given), and samples its examples
    *without replacement*, the clients' draws dealt in one random interleaved order (so classes run
    out for everyone at once, not for the clients filled last). When a set S of classes runs out,
    each client's distribution is renormalised over the others (Eq. 5):
    q~_k(y) = 0 for y in S, q_k(y) / (1 - sum_{s in S} q_k(s)) otherwise.
    alpha -> inf gives q_k = p (IID); alpha = 0 gives one class per client.

``scheme="class"`` - the per-class-over-clients variant (Yurochkin et al. 2019; Li et al. 2022,
    NIID-Bench's "distribution-based label imbalance"), called "Dirichlet" by Flower
    (DirichletPartitioner), NIID-Bench (noniid-labeldir), FedLab (hetero_dir) and FL-bench:
    for each class c, shares over clients s_c ~ Dir(alpha * 1_N), and class c's samples are cut at
    the cumulative shares. ``min_size`` (training rows per client) is met by a deterministic repair step
    (:func:`~hetbench.partitioners._alloc.repair_min_size`) instead of resampling until it fits,
    which is what hangs FedLab (#232) and FL-bench (#29) and makes Flower give up after 10 tries.
"""

from __future__ import annotations

import copy
import math
from typing import Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, default_client_names, parse_sizes
from hetbench.partitioners._alloc import (
    assign_from_counts,
    deal_counts,
    largest_remainder,
    log_dirichlet,
    repair_min_size,
    split_evenly,
)
from hetbench.partitioners.base import Partitioner, check_holdout, holdout_note, rows_for_training

SCHEMES = ("client", "class")

#: alpha from which a Dirichlet draw is its mean up to float64 rounding: a Gamma(a) draw's relative
#: spread 1/sqrt(a) falls below float64's resolution (2**-52) near a = 2e31, and near the float maximum
#: the Gamma draws overflow (numpy then returns NaN or zeros). Such an alpha is treated as ``inf``.
ALPHA_IID = 1e32


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float, checked: >= 0, ``inf`` allowed (IID); NaN, a negative alpha or text that is
    not a number raise :class:`~hetbench.errors.HetbenchError`. A finite alpha of at least
    :data:`ALPHA_IID` (1e32) is accepted and splits as ``inf`` does (the Dirichlet cannot be sampled
    there).

    Examples
    --------
    >>> check_alpha("inf"), check_alpha(0.5)
    (inf, 0.5)
    """
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise HetbenchError(f"--alpha must be a number >= 0 or 'inf' (got {alpha!r})") from None
    if math.isnan(alpha) or alpha < 0:
        raise HetbenchError(f"--alpha must be >= 0 (got {alpha}); use 'inf' for IID")
    return alpha


# ---- scheme = client (Hsu et al.) -----------------------------------------------------------
def hsu_client_counts(
    class_counts: np.ndarray, sizes: np.ndarray, alpha: float, rng: np.random.Generator
) -> np.ndarray:
    """Clients x classes counts of Hsu et al.'s Appendix B.1 procedure (0 < alpha <= inf).

    Every client k draws q_k ~ Dir(alpha p) (q_k = p for alpha = inf or alpha >= ``ALPHA_IID``).
    The n draws are then dealt in one uniformly random interleaved order of the clients' slots
    (client k holds ``sizes[k]`` of them), each draw from the drawing client's q_k renormalised over
    the classes still available (Eq. 5; :func:`~hetbench.partitioners._alloc.deal_counts`). Classes
    therefore run out for all clients at once rather than for the last clients filled, and alpha =
    inf gives IID clients up to multinomial noise.

    Parameters
    ----------
    class_counts : numpy.ndarray
        Samples per class (absent classes: 0, never drawn).
    sizes : numpy.ndarray
        Client sizes, summing to at most ``class_counts.sum()``.
    alpha : float
        Concentration, 0 < alpha <= inf. alpha = 0 is :func:`one_class_counts`.
    rng : numpy.random.Generator
        Draws the q_k, the dealing order and the classes.

    Returns
    -------
    numpy.ndarray
        int64 clients x classes counts; row k sums to ``sizes[k]``.

    Examples
    --------
    >>> import numpy as np
    >>> counts = hsu_client_counts(np.array([50, 30, 20]), np.array([40, 30, 30]), 1.0, np.random.default_rng(0))
    >>> counts.sum(axis=1).tolist(), counts.sum(axis=0).tolist()
    ([40, 30, 30], [50, 30, 20])
    """
    class_counts = np.asarray(class_counts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    num_clients, num_classes = sizes.size, class_counts.size
    present = class_counts > 0
    p = class_counts / class_counts.sum()
    log_q = np.full((num_clients, num_classes), -np.inf)
    if math.isinf(alpha) or alpha >= ALPHA_IID:
        log_q[:, present] = np.log(p[present])
    else:
        log_q[:, present] = log_dirichlet(alpha * p[present], num_clients, rng)
    order = rng.permutation(np.repeat(np.arange(num_clients, dtype=np.int64), sizes))
    return deal_counts(log_q, class_counts, order, rng)



def one_class_counts(class_counts: np.ndarray, num_clients: int, rng: np.random.Generator) -> np.ndarray:
    """alpha = 0 (the limit of Dir(alpha p)): every client holds exactly one class.

    Clients per class are proportional to the class sizes (largest remainder, at least one client
    for every class when there are enough clients); the clients of a class share it evenly. With
    fewer clients than classes, ``num_clients`` classes are chosen with probability proportional to
    their size and the others are dropped (reason ``class-unassigned``).

    Parameters
    ----------
    class_counts : numpy.ndarray
        Samples per class.
    num_clients : int
        Number of clients, at most the number of samples.
    rng : numpy.random.Generator
        Breaks rounding ties, picks the classes (when too few clients) and the class of each client.

    Returns
    -------
    numpy.ndarray
        int64 clients x classes counts with exactly one non-zero entry per row.

    Examples
    --------
    >>> import numpy as np
    >>> one_class_counts(np.array([50, 30, 20]), 5, np.random.default_rng(0)).tolist()
    [[0, 0, 20], [25, 0, 0], [0, 15, 0], [25, 0, 0], [0, 15, 0]]
    """
    class_counts = np.asarray(class_counts, dtype=np.int64)
    present = np.flatnonzero(class_counts > 0)
    counts = np.zeros((num_clients, class_counts.size), dtype=np.int64)
    if num_clients < present.size:
        chosen = rng.choice(present, size=num_clients, replace=False, p=class_counts[present] / class_counts.sum())
        per_class = np.zeros(class_counts.size, dtype=np.int64)
        per_class[chosen] = 1
    else:
        extra = num_clients - present.size
        quotas = class_counts[present] * (extra / class_counts.sum())
        per_class = np.zeros(class_counts.size, dtype=np.int64)
        per_class[present] = 1 + largest_remainder(quotas, extra, rng)
        # a class cannot have more holders than samples: move the excess to the classes that have
        # the most samples per holder (terminates: num_clients <= n was checked by the caller)
        per_class = np.minimum(per_class, class_counts)
        while per_class.sum() < num_clients:
            load = np.where(per_class < class_counts, class_counts / np.maximum(per_class + 1, 1), -1.0)
            per_class[int(np.argmax(load))] += 1
    owners = rng.permutation(np.repeat(np.arange(class_counts.size), per_class))
    for c in np.flatnonzero(per_class):
        holders = np.flatnonzero(owners == c)
        counts[holders, c] = split_evenly(int(class_counts[c]), holders.size)
    return counts


# ---- scheme = class (hetero-dir) --------------------------------------------------------------
def class_dirichlet_shares(num_classes: int, num_clients: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Classes x clients shares, each row ~ Dir(alpha * 1_N); alpha = inf (or >= ``ALPHA_IID``) gives 1/N.

    alpha = 0 (the limit) gives each class whole to one client drawn uniformly.

    Parameters
    ----------
    num_classes, num_clients : int
        The shape is (num_classes, num_clients).
    alpha : float
        Concentration (>= 0, ``inf`` allowed).
    rng : numpy.random.Generator
        Draws the shares.

    Returns
    -------
    numpy.ndarray
        float64 shares, each row summing to 1.
    """
    if math.isinf(alpha) or alpha >= ALPHA_IID:
        return np.full((num_classes, num_clients), 1.0 / num_clients)
    if alpha == 0:
        shares = np.zeros((num_classes, num_clients))
        shares[np.arange(num_classes), rng.integers(0, num_clients, size=num_classes)] = 1.0
        return shares
    return rng.dirichlet(np.full(num_clients, alpha), size=num_classes)


def shares_to_counts(shares: np.ndarray, class_counts: np.ndarray) -> np.ndarray:
    """Cut each class at its cumulative shares (floor), as Flower and NIID-Bench do; clients x classes.

    Parameters
    ----------
    shares : numpy.ndarray
        Classes x clients shares, rows summing to 1.
    class_counts : numpy.ndarray
        Samples per class.

    Returns
    -------
    numpy.ndarray
        int64 clients x classes counts; column c sums to ``class_counts[c]`` exactly.

    Examples
    --------
    >>> import numpy as np
    >>> shares_to_counts(np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]), np.array([10, 7])).tolist()
    [[5, 0], [2, 1], [3, 6]]
    """
    cum = np.floor(np.cumsum(shares, axis=1) * class_counts[:, None]).astype(np.int64)
    cum[:, -1] = class_counts
    cum = np.maximum.accumulate(np.minimum(cum, class_counts[:, None]), axis=1)
    per_class = np.diff(np.concatenate([np.zeros((shares.shape[0], 1), np.int64), cum], axis=1), axis=1)
    return per_class.T


def class_dirichlet_counts(
    class_counts: np.ndarray, num_clients: int, alpha: float, rng: np.random.Generator, min_size: int = 0
) -> np.ndarray:
    """Clients x classes counts of the per-class Dirichlet, repaired to ``min_size``.

    :func:`class_dirichlet_shares`, cut by :func:`shares_to_counts`, then
    :func:`~hetbench.partitioners._alloc.repair_min_size` with each client's shares as its class
    preference.

    Parameters
    ----------
    class_counts : numpy.ndarray
        Samples per class.
    num_clients : int
        Number of clients N.
    alpha : float
        Concentration of Dir(alpha * 1_N) (>= 0, ``inf`` allowed).
    rng : numpy.random.Generator
        Draws the shares.
    min_size : int, default 0
        Smallest client size after the repair (0: no repair).

    Returns
    -------
    numpy.ndarray
        int64 clients x classes counts; every class is handed out in full.

    Examples
    --------
    >>> import numpy as np
    >>> counts = class_dirichlet_counts(np.array([50, 30, 20]), 4, 0.1, np.random.default_rng(0), min_size=10)
    >>> counts.sum(axis=1).tolist(), counts.sum(axis=0).tolist()
    ([10, 11, 65, 14], [50, 30, 20])
    """
    class_counts = np.asarray(class_counts, dtype=np.int64)
    shares = class_dirichlet_shares(class_counts.size, num_clients, alpha, rng)
    if math.isinf(alpha) or alpha >= ALPHA_IID:  # equal shares 1/N, as class_dirichlet_shares gives: cut at
        # floor(k n / N) in integers, where the float cumulative sum of N equal shares can fall just below
        # k n / N and floor one client's count to a neighbour
        k = np.arange(1, num_clients + 1, dtype=np.int64)
        cum = class_counts[:, None] * k[None, :] // num_clients
        counts = np.diff(np.concatenate([np.zeros((class_counts.size, 1), np.int64), cum], axis=1), axis=1).T
    else:
        counts = shares_to_counts(shares, class_counts)
    return repair_min_size(counts, min_size, preference=shares.T)


class DirichletPartitioner(Partitioner):
    """Label-Dirichlet split: client label distributions drawn from a Dirichlet, in either scheme.

    ``scheme="client"`` (the default) follows Hsu et al. exactly: client k draws its class
    distribution q_k ~ Dir(alpha p), p the population's class distribution, and samples its
    ``sizes[k]`` examples without replacement, all clients' draws dealt in one random interleaved
    order; an exhausted set S of classes is removed and q_k renormalised over the others (Eq. 5 of
    [2]_). Every client has its given size
    (equal sizes by default) and every sample is used. alpha -> inf gives IID clients; alpha = 0
    gives one class per client (its clients share a class evenly; with fewer clients than classes
    the unchosen classes are dropped as ``class-unassigned``).

    ``scheme="class"`` is the per-class variant ([3]_, [4]_): class c is cut among the clients at the
    cumulative shares s_c ~ Dir(alpha 1_N); client sizes follow the draws, and ``min_size`` training
    rows per client are met by a deterministic repair instead of resampling until it fits.

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients N (at least 1, at most the number of samples).
    alpha : float, default 0.5
        Dirichlet concentration, >= 0; ``float("inf")`` (recorded as ``"inf"``) gives IID clients.
        Smaller is more heterogeneous.
    scheme : {"client", "class"}, default "client"
        Hsu et al.'s per-client draw q_k ~ Dir(alpha p), or the per-class draw s_c ~ Dir(alpha 1_N).
    sizes : sequence of int, optional
        ``scheme="client"`` only (and alpha > 0): client sizes summing to the number of samples;
        default equal sizes (``n // N``, the first ``n % N`` one larger).
    min_size : int, default 0
        ``scheme="class"`` only: every client ends with at least this many training rows (0: no
        minimum). Its rows of the partitioned split are its training rows, unless
        ``holdout_fraction`` is given. A request that needs more rows than there are (``N *
        min_size > n`` without a hold-out) raises at once.
    holdout_fraction : float, optional
        With ``min_size``: the ``client`` test policy's ``--test-fraction``, when the split is built
        under it (what ``hetbench partition dirichlet`` passes). Every client then holds out this
        fraction of its rows for testing (:func:`hetbench.splits.stratified_holdout`), so the repair
        gives every client the rows :func:`~hetbench.partitioners.base.rows_for_training` computes,
        which leave ``min_size`` training rows. Recorded in the recipe only when ``min_size`` is
        above 1.
    partition_by : str, optional
        Draw the Dirichlet over the values of this column instead of the label (Flower Datasets'
        ``partition_by``): e.g. skew clients over digit classes while the task's label is the domain.
        Recorded in the recipe only when set.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Measuring the Effects of Non-Identical Data
       Distribution for Federated Visual Classification", arXiv:1909.06335, 2019, sec. 3 and
       Fig. 1: clients' class distributions q ~ Dir(alpha p).
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
       Distribution", ECCV 2020, Appendix B.1 and its Eq. (5): sampling without replacement and the
       renormalisation over the classes not yet exhausted.
    .. [3] M. Yurochkin, M. Agarwal, S. Ghosh, K. Greenewald, N. Hoang and Y. Khazaeni, "Bayesian
       Nonparametric Federated Learning of Neural Networks", ICML 2019, sec. 5 (heterogeneous
       partition: p_c ~ Dir_J(alpha), a p_{c,j} share of class c to client j).
    .. [4] Q. Li, Y. Diao, Q. Chen and B. He, "Federated Learning on Non-IID Data Silos: An
       Experimental Study" (NIID-Bench), ICDE 2022, label distribution skew, "distribution-based
       label imbalance" (p_k ~ Dir_N(beta)).

    Examples
    --------
    >>> from hetbench.partitioners import DirichletPartitioner
    >>> from hetbench.sources import load_table
    >>> digits = load_table("builtin:digits")  # 1,797 samples, 10 classes
    >>> part = DirichletPartitioner(10, alpha=0.5).partition(digits, seed=0)
    >>> part.num_clients, part.client_sizes().tolist()
    (10, [180, 180, 180, 180, 180, 180, 180, 179, 179, 179])
    >>> part.label_matrix(digits.labels["train"], digits.num_classes)[0].tolist()  # client 0's classes
    [20, 45, 0, 71, 44, 0, 0, 0, 0, 0]
    >>> per_class = DirichletPartitioner(10, alpha=0.5, scheme="class", min_size=50).partition(digits, seed=0)
    >>> int(per_class.client_sizes().min()), per_class.num_kept
    (50, 1797)
    """

    name = "dirichlet"

    def __init__(
        self,
        num_clients: int = 10,
        alpha: float = 0.5,
        scheme: str = "client",
        sizes: Sequence[int] | None = None,
        min_size: int = 0,
        holdout_fraction: float | None = None,
        partition_by: str | None = None,
    ) -> None:
        if scheme not in SCHEMES:
            raise HetbenchError(f"unknown --scheme '{scheme}'; choose one of: {', '.join(SCHEMES)}")
        if num_clients < 1:
            raise HetbenchError(f"--clients must be at least 1 (got {num_clients})")
        if min_size < 0:
            raise HetbenchError(f"--min-size must be >= 0 (got {min_size})")
        if scheme == "class" and sizes is not None:
            raise HetbenchError("--sizes applies to --scheme client; the class scheme's sizes follow the Dirichlet draws")
        if scheme == "client" and min_size:
            raise HetbenchError("--min-size applies to --scheme class; with --scheme client every client has its given size")
        self.num_clients = int(num_clients)
        self.alpha = check_alpha(alpha)
        self.scheme = scheme
        self.sizes = None if sizes is None else [int(s) for s in sizes]
        self.min_size = int(min_size)
        self.holdout_fraction = check_holdout(holdout_fraction, self.min_size if scheme == "class" else 0)
        if partition_by is not None and (not isinstance(partition_by, str) or not partition_by):
            raise HetbenchError(f"partition_by must be a column name (got {partition_by!r})")
        self.partition_by = partition_by
        if self.scheme == "client" and self.alpha == 0 and self.sizes is not None:
            raise HetbenchError("alpha = 0 gives one class per client, whose sizes follow the class sizes; drop --sizes")

    def params(self) -> dict:
        alpha = "inf" if math.isinf(self.alpha) else self.alpha
        params = {
            "num_clients": self.num_clients,
            "alpha": alpha,
            "scheme": self.scheme,
            "sizes": self.sizes,
            "min_size": self.min_size,
        }
        if self.holdout_fraction is not None:  # only when set: recipes without it stay as they were
            params["holdout_fraction"] = self.holdout_fraction
        if self.partition_by is not None:  # likewise
            params["partition_by"] = self.partition_by
        return params

    def holding_out(self, fraction: float) -> "DirichletPartitioner":
        held = check_holdout(fraction, self.min_size if self.scheme == "class" else 0)
        if held is None or self.holdout_fraction is not None:
            return self
        out = copy.copy(self)
        out.holdout_fraction = held
        return out

    def client_counts(self, labels: np.ndarray, num_classes: int, rng: np.random.Generator) -> np.ndarray:
        """The clients x classes count matrix (the pure numpy heart of this partitioner).

        :func:`class_dirichlet_counts` (class scheme), :func:`one_class_counts` (client scheme,
        alpha = 0) or :func:`hsu_client_counts` (client scheme); the partition realises it exactly.
        """
        class_counts = np.bincount(labels, minlength=num_classes)
        n = int(labels.size)
        if self.num_clients > n:
            raise HetbenchError(f"more clients ({self.num_clients}) than samples ({n})")
        if self.scheme == "class":
            need = rows_for_training(self.min_size, self.holdout_fraction)  # rows that leave min_size training rows
            if self.num_clients * need > n:
                raise HetbenchError(
                    f"--min-size {self.min_size} is impossible: {self.num_clients} clients x "
                    f"{holdout_note(self.min_size, self.holdout_fraction)} needs {self.num_clients * need} rows, "
                    f"more than the {n} there are"
                )
            return class_dirichlet_counts(class_counts, self.num_clients, self.alpha, rng, need)
        if self.alpha == 0:
            return one_class_counts(class_counts, self.num_clients, rng)
        sizes = parse_sizes(self.sizes, self.num_clients, n)
        return hsu_client_counts(class_counts, sizes, self.alpha, rng)

    def _assign(self, table, split, rng):
        labels, num_classes = table.labels[split], table.num_classes
        if self.partition_by is not None:  # the values of another column take the labels' place, sorted
            if self.partition_by not in table.splits[split].column_names:
                raise HetbenchError(f"partition_by: no column '{self.partition_by}' in the {split} split")
            try:
                values, labels = np.unique(table.column(split, self.partition_by), return_inverse=True)
            except TypeError:  # None beside strings, or mixed types: no order to sort them in
                raise HetbenchError(f"partition_by: column '{self.partition_by}' has missing or mixed-type values") from None
            labels, num_classes = labels.astype(np.int64), int(values.size)
        counts = self.client_counts(labels, num_classes, rng)
        assignment, reason = assign_from_counts(labels, counts, rng, DropReason.CLASS_UNASSIGNED)
        return assignment, reason, self.num_clients, default_client_names(self.num_clients)
