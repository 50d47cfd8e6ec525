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

The draws themselves, pure numpy, are :mod:`hetbench.partitioners.dirichlet_counts`'.
"""

from __future__ import annotations

import copy
import math
from typing import Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, default_client_names, parse_sizes
from hetbench.partitioners._alloc import assign_from_counts
from hetbench.partitioners.base import Partitioner, check_holdout, holdout_note, rows_for_training
from hetbench.partitioners.dirichlet_counts import check_alpha, class_dirichlet_counts, hsu_client_counts, one_class_counts

SCHEMES = ("client", "class")


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
            raise HetbenchError(f"unknown `scheme` '{scheme}'; choose one of: {', '.join(SCHEMES)}")
        if num_clients < 1:
            raise HetbenchError(f"`num_clients` must be at least 1 (got {num_clients})")
        if min_size < 0:
            raise HetbenchError(f"`min_size` must be >= 0 (got {min_size})")
        if scheme == "class" and sizes is not None:
            raise HetbenchError("`sizes` applies to `scheme` client; the class scheme's sizes follow the Dirichlet draws")
        if scheme == "client" and min_size:
            raise HetbenchError("`min_size` applies to `scheme` class; with `scheme` client every client has its given size")
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
            raise HetbenchError("alpha = 0 gives one class per client, whose sizes follow the class sizes; drop `sizes`")

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
                    f"`min_size` {self.min_size} is impossible: {self.num_clients} clients x "
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
