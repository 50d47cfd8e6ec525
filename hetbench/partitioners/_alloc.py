"""Pure numpy helpers shared by the label partitioners.

Every label partitioner decides a clients x classes *count* matrix first and then turns it into a
sample-level assignment with :func:`assign_from_counts`; that keeps the heavy step (touching n
samples) to one permutation, one stable argsort and one ``np.repeat``.
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
    Returns (assignment int32, drop_reason int8).
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
    """``total`` split into ``parts`` integers differing by at most one (larger ones first)."""
    out = np.full(parts, total // parts, dtype=np.int64)
    out[: total % parts] += 1
    return out


def largest_remainder(quotas: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integers summing to ``total`` that round ``quotas`` (which sum to ``total``); ties at random."""
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
    ``num_clients * num_classes`` moves. Raises :class:`HetbenchError` when the request is impossible.
    """
    counts = counts.astype(np.int64, copy=True)
    num_clients, num_classes = counts.shape
    total = int(counts.sum())
    if min_size <= 0:
        return counts
    if num_clients * min_size > total:
        raise HetbenchError(
            f"--min-size {min_size} is impossible: {num_clients} clients x {min_size} = "
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
