"""The test hold-outs of the test policies (:mod:`hetbench.splits`): each client's stratified share of its
rows (``client``), and whole clients (``heldout``). Pure numpy on the assignment and the labels.
"""

from __future__ import annotations

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import Partition


def stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``numpy.argsort(keys, kind="stable")`` for integer keys in ``[0, bound)``, on the narrowest
    integer type that holds them (numpy radix-sorts 16-bit keys: about 5x faster on a million rows).

    Examples
    --------
    >>> stable_order(np.array([2, 0, 2, 1]), 3).tolist()
    [1, 3, 0, 2]
    """
    kind = np.int16 if bound <= np.iinfo(np.int16).max else np.int32 if bound <= np.iinfo(np.int32).max else np.int64
    return np.argsort(keys.astype(kind, copy=False), kind="stable")


def stratified_holdout(
    assignment: np.ndarray, labels: np.ndarray, num_clients: int, num_classes: int, fraction: float, rng: np.random.Generator
) -> np.ndarray:
    """Boolean mask of the samples each client holds out for testing.

    Client k holds out T_k = round(fraction * n_k) samples, at least one and at most n_k - 1 when
    n_k >= 2 (none when n_k < 2), spread over its classes by largest remainder of fraction * n_kc.
    """
    keep = assignment >= 0
    key = np.where(keep, assignment.astype(np.int64) * num_classes + labels, -1)
    m = np.bincount(key[keep], minlength=num_clients * num_classes).reshape(num_clients, num_classes)
    n_k = m.sum(axis=1)
    target = np.rint(fraction * n_k).astype(np.int64)
    target = np.where(n_k >= 2, np.clip(target, 1 if fraction > 0 else 0, n_k - 1), 0)
    quota = fraction * m
    t = np.minimum(np.floor(quota).astype(np.int64), m)
    left = target - t.sum(axis=1)
    # hand out what is left, largest fractional part first, only where a class has room
    frac = np.where(m > t, quota - t, -np.inf)
    tie = rng.random(m.shape)
    order = np.argsort(-(frac + tie * 1e-9), axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(num_classes)[None, :].repeat(num_clients, 0), axis=1)
    t += ((ranks < left[:, None]) & (m > t)).astype(np.int64)
    # where rounding asked for more than the classes had room for, take from the largest classes
    short = target - t.sum(axis=1)
    while np.any(short > 0):
        room = np.where(short[:, None] > 0, m - t, 0)
        pick = np.argmax(room, axis=1)
        rows = np.flatnonzero((short > 0) & (room[np.arange(num_clients), pick] > 0))
        if rows.size == 0:
            break
        t[rows, pick[rows]] += 1
        short = target - t.sum(axis=1)
    # choose which samples: a random order inside each (client, class) group
    idx = np.flatnonzero(keep)
    perm = idx[rng.permutation(idx.size)]
    perm = perm[stable_order(key[perm], num_clients * num_classes)]
    sorted_keys = key[perm]
    starts = np.searchsorted(sorted_keys, sorted_keys, side="left")
    rank_in_group = np.arange(perm.size) - starts
    test = np.zeros(assignment.size, dtype=bool)
    test[perm[rank_in_group < t.ravel()[sorted_keys]]] = True
    return test


def hold_out_clients(
    part: Partition, labels: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[Partition, np.ndarray, dict[str, int]]:
    """Move round(fraction x clients) random clients (at least one, at most all but one) to a test
    set. Returns the partition of the remaining clients (renumbered in their old order, names kept),
    the test row indices (ascending) and the test rows dropped because their class is absent from
    training."""
    from hetbench.partition import DropReason

    n = part.num_clients
    if n < 2:
        raise HetbenchError("`test_split` heldout needs at least 2 clients")
    k = int(min(max(round(fraction * n), 1), n - 1))
    held = np.zeros(n, dtype=bool)
    held[rng.choice(n, size=k, replace=False)] = True
    new_index = np.where(held, -1, np.cumsum(~held) - 1).astype(np.int32)
    a = part.assignment
    in_test = (a >= 0) & held[np.maximum(a, 0)]
    assignment = np.where(a >= 0, new_index[np.maximum(a, 0)], -1).astype(np.int32)
    reason = part.drop_reason.copy()
    reason[in_test] = DropReason.HELD_OUT  # not lost: these rows are the test set
    train_classes = np.unique(labels[assignment >= 0])
    test_rows = np.flatnonzero(in_test)
    known = np.isin(labels[test_rows], train_classes)
    names = tuple(nm for nm, h in zip(part.client_names, held) if not h)
    recipe = dict(part.recipe, heldout_clients=sorted(str(nm) for nm, h in zip(part.client_names, held) if h))
    train_part = Partition(assignment, n - k, names, recipe, reason)
    dropped = {"filtered": int((~known).sum())} if (~known).any() else {}
    return train_part, test_rows[known], dropped
