"""The label-Dirichlet draws of :mod:`hetbench.partitioners.dirichlet`, pure numpy: how many rows of each class
each client gets.

* :func:`hsu_client_counts` - Hsu, Qi & Brown (2019 sec. 3; 2020 Appendix B.1): client k draws
  q_k ~ Dir(alpha * p), samples without replacement in one interleaved order, and renormalises over the
  classes left when some run out (Eq. 5); :func:`one_class_counts` is its alpha = 0 limit.
* :func:`class_dirichlet_counts` - the per-class-over-clients variant (Yurochkin et al. 2019; NIID-Bench):
  s_c ~ Dir(alpha * 1_N) per class (:func:`class_dirichlet_shares`), cut at the cumulative shares
  (:func:`shares_to_counts`).
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partitioners._alloc import deal_counts, largest_remainder, log_dirichlet, repair_min_size, split_evenly

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
        raise HetbenchError(f"`alpha` must be a number >= 0 or 'inf' (got {alpha!r})") from None
    if math.isnan(alpha) or alpha < 0:
        raise HetbenchError(f"`alpha` must be >= 0 (got {alpha}); use 'inf' for IID")
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
