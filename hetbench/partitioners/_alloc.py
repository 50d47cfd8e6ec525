"""Pure numpy helpers shared by the label partitioners.

Every label partitioner (Dirichlet, classes per client) decides a clients x classes *count* matrix
first and then turns it into a sample-level assignment with :func:`assign_from_counts`; that keeps
the heavy step (touching n samples) to one stable sort, one shuffle per class and one ``np.repeat``.
The count matrices are rounded with :func:`largest_remainder` / :func:`split_evenly` and, where a
minimum client size is asked for, repaired with :func:`repair_min_size`.
"""

from __future__ import annotations

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason


def class_sorted_order(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sample indices grouped by class (ascending), in uniformly random order inside each class.

    A stable radix sort by label (labels cast to uint16 where they fit) followed by one in-place
    shuffle per class segment: each segment is small enough to stay in cache, which makes this
    several times faster than one permutation of all n samples followed by a comparison sort.

    Parameters
    ----------
    labels : numpy.ndarray
        Non-negative integer class code per sample.
    rng : numpy.random.Generator
        Shuffles each class's indices.

    Returns
    -------
    numpy.ndarray
        A permutation of ``range(labels.size)``: first the indices of class 0, then class 1, ...

    Examples
    --------
    >>> import numpy as np
    >>> order = class_sorted_order(np.array([2, 0, 1, 0, 2]), np.random.default_rng(0))
    >>> np.array([2, 0, 1, 0, 2])[order].tolist()
    [0, 0, 1, 2, 2]
    """
    labels = np.asarray(labels)
    key = labels.astype(np.uint16) if labels.size and 0 <= labels.min() and labels.max() < 65536 else labels
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(key[order][1:] != key[order][:-1]) + 1
    for segment in np.split(order, bounds):
        rng.shuffle(segment)  # a view: shuffles ``order`` in place
    return order


def assign_from_counts(
    labels: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
    drop_reason: DropReason = DropReason.REMAINDER,
) -> tuple[np.ndarray, np.ndarray]:
    """Assignment that gives client k exactly ``counts[k, c]`` random samples of class c.

    Samples of a class not covered by the counts are dropped with ``drop_reason``.

    Parameters
    ----------
    labels : numpy.ndarray
        Non-negative integer class code per sample.
    counts : numpy.ndarray
        Clients x classes sample counts; column c must not sum to more than class c's size.
    rng : numpy.random.Generator
        Chooses which samples of a class go to which client.
    drop_reason : DropReason, default DropReason.REMAINDER
        Recorded for the samples no client receives.

    Returns
    -------
    assignment : numpy.ndarray
        int32 client id per sample, -1 for a dropped sample.
    drop_reason : numpy.ndarray
        int8 reason per sample, 0 for a kept one.

    Raises
    ------
    ValueError
        When ``counts`` ask for more samples of a class than it has.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array([0, 0, 0, 1, 1, 2])
    >>> assignment, reason = assign_from_counts(labels, np.array([[2, 0, 1], [0, 2, 0]]), np.random.default_rng(0))
    >>> np.bincount(assignment[assignment >= 0]).tolist(), int((reason > 0).sum())
    ([3, 2], 1)
    """
    num_clients, num_classes = counts.shape
    class_counts = np.bincount(labels, minlength=num_classes)
    used = counts.sum(axis=0)
    if np.any(used > class_counts):
        raise ValueError("counts ask for more samples of a class than it has")
    ext = np.vstack([counts, (class_counts - used)[None, :]]).astype(np.int64)  # last row: dropped
    client_of_row = np.append(np.arange(num_clients, dtype=np.int32), np.int32(-1))
    seq = np.repeat(np.tile(client_of_row, num_classes), ext.T.ravel())
    order = class_sorted_order(labels, rng)
    assignment = np.empty(labels.size, dtype=np.int32)
    assignment[order] = seq
    reason = np.where(assignment < 0, np.int8(drop_reason), np.int8(0)).astype(np.int8)
    return assignment, reason


def split_evenly(total: int, parts: int) -> np.ndarray:
    """``total`` split into ``parts`` integers differing by at most one (larger ones first).

    Parameters
    ----------
    total : int
        The sum to split (>= 0).
    parts : int
        How many integers (>= 1).

    Returns
    -------
    numpy.ndarray
        int64 array of ``parts`` values: ``total // parts``, the first ``total % parts`` one larger.

    Examples
    --------
    >>> split_evenly(10, 4).tolist()
    [3, 3, 2, 2]
    """
    out = np.full(parts, total // parts, dtype=np.int64)
    out[: total % parts] += 1
    return out


def largest_remainder(quotas: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integers summing to ``total`` that round ``quotas`` (which sum to ``total``); ties at random.

    Hamilton's largest-remainder method: every quota is floored, and the units still missing go to
    the largest fractional parts (ties broken uniformly at random with ``rng``).

    Parameters
    ----------
    quotas : numpy.ndarray
        Non-negative real quotas summing to ``total``.
    total : int
        The sum of the result.
    rng : numpy.random.Generator
        Breaks ties between equal fractional parts.

    Returns
    -------
    numpy.ndarray
        int64 array, each value the floor or the ceiling of its quota.

    Examples
    --------
    >>> import numpy as np
    >>> largest_remainder(np.array([1.2, 3.7, 5.1]), 10, np.random.default_rng(0)).tolist()
    [1, 4, 5]
    """
    base = np.floor(quotas).astype(np.int64)
    left = int(total - base.sum())
    if left > 0:
        frac = quotas - base
        order = np.lexsort((rng.random(quotas.size), -frac))
        base[order[:left]] += 1
    return base


def repair_min_size(
    counts: np.ndarray, min_size: int, preference: np.ndarray | None = None
) -> np.ndarray:
    """Move samples so that every client holds at least ``min_size`` (deterministic, terminates).

    For each client below the minimum (smallest first), samples are taken from the client with the
    largest surplus, of the class the short client prefers most (``preference[k, c]``, e.g. its
    Dirichlet share) among the classes that donor holds. Each move transfers at least one sample and
    the total surplus covers the total deficit, so the loop ends after at most
    ``num_clients * num_classes`` moves.

    Parameters
    ----------
    counts : numpy.ndarray
        Clients x classes sample counts (not modified).
    min_size : int
        The smallest client size wanted; 0 or less returns the counts unchanged.
    preference : numpy.ndarray, optional
        Clients x classes scores: a short client takes the donor's class it scores highest (ties:
        the class the donor holds most of, then the lowest class). Default: all zero.

    Returns
    -------
    numpy.ndarray
        int64 counts with the same column sums and every row sum >= ``min_size``.

    Raises
    ------
    HetbenchError
        When ``num_clients * min_size`` exceeds the number of samples.

    Examples
    --------
    >>> import numpy as np
    >>> repair_min_size(np.array([[5, 3], [0, 0]]), 2, preference=np.array([[0.5, 0.5], [0.1, 0.9]])).tolist()
    [[5, 1], [0, 2]]
    """
    counts = counts.astype(np.int64, copy=True)
    num_clients, num_classes = counts.shape
    total = int(counts.sum())
    if min_size <= 0:
        return counts
    if num_clients * min_size > total:
        raise HetbenchError(
            f"`min_size` {min_size} is impossible: {num_clients} clients x {min_size} = "
            f"{num_clients * min_size} > {total} samples"
        )
    if preference is None:
        preference = np.zeros((num_clients, num_classes))
    sizes = counts.sum(axis=1)
    short = np.flatnonzero(sizes < min_size)
    for k in short[np.lexsort((short, sizes[short]))]:
        need = min_size - int(sizes[k])
        while need > 0:
            surplus = sizes - min_size
            surplus[k] = -1
            donor = int(np.argmax(surplus))  # lowest index among ties
            held = counts[donor] > 0
            score = np.where(held, preference[k], -np.inf)
            cls = int(np.lexsort((-counts[donor], -score))[0])
            move = int(min(need, surplus[donor], counts[donor, cls]))
            counts[donor, cls] -= move
            counts[k, cls] += move
            sizes[donor] -= move
            sizes[k] += move
            need -= move
    return counts


def log_dirichlet(concentration: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of log q, q ~ Dir(concentration), exact where q itself underflows float64.

    Gamma(a) = Gamma(a + 1) * U**(1/a) (Marsaglia and Tsang), so log Gamma(a) = log Gamma(a + 1) +
    log(U) / a stays finite for the tiny concentrations of a small alpha, where numpy's
    ``dirichlet`` returns weights of exactly 0 and the order between a client's minor classes (which
    decides where it goes once its main class runs out) would be lost.

    Parameters
    ----------
    concentration : numpy.ndarray
        Positive concentration per class.
    size : int
        Number of draws (rows).
    rng : numpy.random.Generator
        Draws the Gamma and uniform variates.

    Returns
    -------
    numpy.ndarray
        float64 (size, classes) log probabilities; each row's exp sums to 1.

    Examples
    --------
    >>> import numpy as np
    >>> lq = log_dirichlet(np.array([1e-3, 1e-3, 1e-3]), 2, np.random.default_rng(0))
    >>> bool(np.isfinite(lq).all()), np.allclose(np.exp(lq).sum(axis=1), 1.0)
    (True, True)
    """
    shape = (size, concentration.size)
    g = np.log(rng.standard_gamma(concentration + 1.0, size=shape)) + np.log1p(-rng.random(shape)) / concentration
    top = g.max(axis=1, keepdims=True)
    return g - (top + np.log(np.exp(g - top).sum(axis=1, keepdims=True)))


# ---- interleaved dealing (Hsu et al.'s client scheme) -------------------------------------------
_MIN_BLOCK, _MAX_BLOCK = 256, 1 << 18  # draws made at once (twice the last run between exhaustions)
_REJECTION_ROUNDS = 4  # redraws of a draw that hit an exhausted class before its row is renormalised


def _cdf_keys(weights: np.ndarray, rows: np.ndarray, bits: int) -> np.ndarray:
    """Per-row cumulative distributions as sorted int64 keys ``(row << bits) + floor(cdf * 2**bits)``.

    Every row's last key is exactly ``(row + 1) << bits``, so a search for ``(row << bits) + u`` with
    ``0 <= u < 2**bits`` lands inside that row, never on a class of weight 0 (exact integers: no float
    rounding can carry a draw into the next client's row).
    """
    cum = np.cumsum(weights, axis=1)
    frac = np.floor(cum / cum[:, -1:] * float(1 << bits)).astype(np.int64)
    return (rows.astype(np.int64)[:, None] << bits) + frac


def _draw(keys: np.ndarray, who: np.ndarray, num_classes: int, bits: int, rng: np.random.Generator) -> np.ndarray:
    """One class per entry of ``who``, drawn from that client's row of ``keys`` (inverse CDF)."""
    target = (who << bits) + (rng.random(who.size) * float(1 << bits)).astype(np.int64)
    by_target = np.argsort(target)  # sorted needles: searchsorted walks the keys once, cache-friendly
    idx = np.empty(who.size, dtype=np.int64)
    idx[by_target] = np.searchsorted(keys, target[by_target], side="right")
    return idx - who * num_classes


def _first_overflow(cls: np.ndarray, remaining: np.ndarray) -> int:
    """Index of the first draw asking for a class that the draws before it used up (or ``cls.size``)."""
    wanted = np.bincount(cls, minlength=remaining.size)
    over = np.flatnonzero(wanted > remaining)
    if over.size == 0:
        return int(cls.size)
    by_class = np.argsort(cls, kind="stable")
    starts = np.concatenate([[0], np.cumsum(wanted)[:-1]])
    return int(by_class[starts[over] + remaining[over]].min())


def _renormalised(log_q: np.ndarray, gone: np.ndarray, pop: np.ndarray) -> np.ndarray:
    """Rows of ``exp(log_q)`` restricted to the classes not ``gone``, scaled so their largest is 1 (no
    underflow however small the weights); a row with no mass there gets the class sizes ``pop``."""
    lw = np.where(gone, -np.inf, log_q)
    top = lw.max(axis=1, keepdims=True)
    dead = ~np.isfinite(top[:, 0])
    w = np.exp(lw - np.where(dead[:, None], 0.0, top))
    w[dead] = np.where(gone, 0.0, pop)
    return w


def deal_counts(
    log_q: np.ndarray, class_counts: np.ndarray, order: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Deal samples without replacement: draw ``t`` goes to client ``order[t]``, its class drawn from
    that client's distribution ``exp(log_q[order[t]])`` renormalised over the classes not yet used
    up (Hsu et al., Eq. 5).

    This is the sequential process exactly, computed in blocks: while no class runs out, the draws
    are independent, so a block of them is made at once (inverse CDF on integer keys, one sorted
    ``searchsorted``); the first draw that asks for a class used up by the draws before it ends the
    block there, and dealing resumes from it without that class. A draw that hits a used-up class
    is redrawn (rejection sampling is the renormalisation); a client whose draws keep missing gets
    its row renormalised over the classes left (in log space, so weights that underflow float64
    still order the classes), after which rejection goes on from that row. A client with no mass
    at all on the remaining classes (``-inf`` everywhere) draws from the class sizes.

    Parameters
    ----------
    log_q : numpy.ndarray
        Clients x classes log weights, ``-inf`` for none (each row: a client's class distribution).
    class_counts : numpy.ndarray
        Samples per class.
    order : numpy.ndarray
        Client index of every draw, in dealing order (client k appears ``sizes[k]`` times); its
        length must not exceed ``class_counts.sum()``.
    rng : numpy.random.Generator
        Draws the classes.

    Returns
    -------
    numpy.ndarray
        int64 clients x classes counts; row k sums to the number of k's draws, column c to at most
        ``class_counts[c]``.

    Examples
    --------
    >>> import numpy as np
    >>> log_q = np.log([[0.9, 0.1], [0.5, 0.5], [0.1, 0.9]])
    >>> order = np.random.default_rng(0).permutation(np.repeat(np.arange(3), 10))
    >>> counts = deal_counts(log_q, np.array([15, 15]), order, np.random.default_rng(0))
    >>> counts.sum(axis=1).tolist(), counts.sum(axis=0).tolist()
    ([10, 10, 10], [15, 15])
    """
    class_counts = np.asarray(class_counts, dtype=np.int64)
    log_q = np.asarray(log_q, dtype=np.float64)
    num_clients, num_classes = log_q.shape
    order = np.asarray(order, dtype=np.int64)
    if order.size > class_counts.sum():
        raise ValueError("more draws than samples")
    bits = min(52, 62 - int(num_clients).bit_length())
    pop = class_counts.astype(np.float64)
    remaining = class_counts.copy()
    gone = remaining == 0
    keys = _cdf_keys(_renormalised(log_q, gone, pop), np.arange(num_clients), bits)
    dealt = np.empty(order.size, dtype=np.int64)
    pos, block = 0, _MIN_BLOCK
    while pos < order.size:
        who = order[pos : pos + block]
        cls = _draw(keys.ravel(), who, num_classes, bits, rng)
        redo = np.flatnonzero(gone[cls])
        for rounds in range(_REJECTION_ROUNDS + 1):
            if redo.size == 0:
                break
            if rounds == _REJECTION_ROUNDS:  # renormalise these clients' rows over the classes left
                stale = np.unique(who[redo])
                keys[stale] = _cdf_keys(_renormalised(log_q[stale], gone, pop), stale, bits)
            cls[redo] = _draw(keys.ravel(), who[redo], num_classes, bits, rng)
            redo = redo[gone[cls[redo]]]
        stop = _first_overflow(cls, remaining)
        dealt[pos : pos + stop] = cls[:stop]
        remaining -= np.bincount(cls[:stop], minlength=num_classes)
        pos += stop
        if stop < who.size:  # a class ran out: it is gone, and dealing resumes at the draw that asked for it
            gone = remaining == 0
            block = max(_MIN_BLOCK, 2 * stop)
        else:
            block = min(_MAX_BLOCK, 2 * block)
    flat = np.bincount(order * num_classes + dealt, minlength=num_clients * num_classes)
    return flat.reshape(num_clients, num_classes).astype(np.int64)
