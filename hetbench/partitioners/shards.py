"""Label-sorted shards (McMahan et al. 2017) and k classes per client (the "pathological" split).

:class:`ShardsPartitioner` is McMahan et al.'s pathological non-IID MNIST split (sort by label, cut
into equal shards, deal each client the same number of shards): clients have equal sizes and few
classes, but how many depends on where the shard boundaries fall. :class:`ClassesPerClientPartitioner`
fixes the number of classes instead: every client holds exactly ``k`` (NIID-Bench's
"quantity-based label imbalance", ``#C=k``).
"""

from __future__ import annotations

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, default_client_names
from hetbench.partitioners._alloc import assign_from_counts, class_sorted_order, split_evenly
from hetbench.partitioners.base import Partitioner


def shard_assignment(
    labels: np.ndarray, num_clients: int, shards_per_client: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Sort by label, cut into ``num_clients * shards_per_client`` equal shards, deal each client
    ``shards_per_client`` random shards.

    The ``n mod num_shards`` samples that do not fill a shard are chosen at random and dropped
    (reason ``remainder``), so no class is favoured; inside a class the order is random.

    Parameters
    ----------
    labels : numpy.ndarray
        Class code per sample.
    num_clients : int
        Number of clients.
    shards_per_client : int
        Shards dealt to each client.
    rng : numpy.random.Generator
        Chooses the dropped samples, the order inside each class and the dealing.

    Returns
    -------
    assignment : numpy.ndarray
        int32 client id per sample (-1 = dropped).
    drop_reason : numpy.ndarray
        int8 reason per sample (0 = kept).

    Raises
    ------
    HetbenchError
        When there are more shards than samples.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.repeat(np.arange(4), 5)  # 4 classes x 5 samples
    >>> assignment, reason = shard_assignment(labels, 2, 2, np.random.default_rng(0))
    >>> np.bincount(assignment).tolist()  # 2 clients x 2 shards of 5 samples
    [10, 10]
    """
    n = labels.size
    num_shards = num_clients * shards_per_client
    if num_shards > n:
        raise HetbenchError(f"{num_clients} clients x {shards_per_client} shards = {num_shards} shards > {n} samples")
    shard_size = n // num_shards
    keep = np.ones(n, dtype=bool)
    keep[rng.choice(n, size=n - shard_size * num_shards, replace=False)] = False
    kept = np.flatnonzero(keep)
    order = kept[class_sorted_order(labels[kept], rng)]
    owner_of_shard = rng.permutation(np.repeat(np.arange(num_clients, dtype=np.int32), shards_per_client))
    assignment = np.full(n, -1, dtype=np.int32)
    assignment[order] = np.repeat(owner_of_shard, shard_size)
    reason = np.where(assignment < 0, np.int8(DropReason.REMAINDER), np.int8(0)).astype(np.int8)
    return assignment, reason


def classes_per_client_counts(
    class_counts: np.ndarray, num_clients: int, k: int, rng: np.random.Generator
) -> np.ndarray:
    """Clients x classes counts where each client holds exactly ``k`` classes.

    Client i's first class is the (i mod C)-th of a random class order, so every class has a holder
    whenever N >= C; its other k-1 classes are distinct and uniform at random among the classes that
    still have a sample to spare (a class of m samples can have at most m holders, so no holder ends
    up with nothing of it). A class is shared evenly by its holders; a class with no holder (N < C)
    is dropped (``class-unassigned``).

    Parameters
    ----------
    class_counts : numpy.ndarray
        Samples per class.
    num_clients : int
        Number of clients N.
    k : int
        Classes per client, between 1 and the number of present classes.
    rng : numpy.random.Generator
        Draws the class order, the extra classes and which holder gets the larger share.

    Returns
    -------
    numpy.ndarray
        int64 clients x classes counts with exactly ``k`` non-zero entries per row.

    Raises
    ------
    HetbenchError
        When ``k`` is out of range, or no such allocation exists for the classes' sizes.

    Examples
    --------
    >>> import numpy as np
    >>> classes_per_client_counts(np.array([10, 10, 10, 10]), 3, 2, np.random.default_rng(0)).tolist()
    [[4, 0, 10, 0], [3, 5, 0, 0], [3, 5, 0, 0]]
    """
    class_counts = np.asarray(class_counts, dtype=np.int64)
    present = np.flatnonzero(class_counts > 0)
    num_present = present.size
    if k < 1 or k > num_present:
        raise HetbenchError(f"`classes_per_client` must be between 1 and {num_present} (got {k})")
    if num_clients * k > int(class_counts.sum()):
        raise HetbenchError(f"{num_clients} clients x {k} classes needs at least {num_clients * k} samples")
    capacity = class_counts.copy()
    held = np.zeros((num_clients, class_counts.size), dtype=bool)
    cycle = rng.permutation(present)
    for i in range(num_clients):
        first = int(cycle[i % num_present])
        if capacity[first] == 0:
            free = np.flatnonzero(capacity > 0)
            first = int(free[rng.integers(free.size)]) if free.size else first
        picks = [first] if capacity[first] > 0 else []
        if k > len(picks):
            free = np.flatnonzero((capacity > 0) & ~np.isin(np.arange(capacity.size), picks))
            if free.size < k - len(picks):
                raise HetbenchError(
                    f"cannot give every client {k} classes: the classes are too small for {num_clients} clients "
                    "(a class of m samples can be shared by at most m clients)"
                )
            picks += rng.choice(free, size=k - len(picks), replace=False).tolist()
        held[i, picks] = True
        capacity[picks] -= 1
    counts = np.zeros(held.shape, dtype=np.int64)
    for c in present:
        holders = np.flatnonzero(held[:, c])
        if holders.size:
            counts[holders, c] = rng.permutation(split_evenly(int(class_counts[c]), holders.size))
    return counts


class ShardsPartitioner(Partitioner):
    """Label-sorted shards: sort by label, cut into equal shards, ``shards_per_client`` shards each.

    The samples, sorted by label (random order inside a class), are cut into
    ``num_clients * shards_per_client`` shards of ``n // num_shards`` samples, and the shards are
    dealt to the clients at random. All clients have the same size; the ``n mod num_shards``
    samples that fill no shard are drawn at random and dropped (``remainder``). A shard holds one
    class unless it straddles a class boundary, so a client holds about ``shards_per_client``
    classes, sometimes more.

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients (at least 1).
    shards_per_client : int, default 2
        Shards per client (at least 1); McMahan et al. use 2 (100 clients x 2 shards of 300 MNIST
        digits).

    References
    ----------
    .. [1] H. B. McMahan, E. Moore, D. Ramage, S. Hampson and B. Agüera y Arcas,
       "Communication-Efficient Learning of Deep Networks from Decentralized Data", AISTATS 2017,
       sec. 3: the pathological non-IID partition ("sort the data by digit label, divide it into
       200 shards of size 300, and assign each of 100 clients 2 shards").

    Examples
    --------
    >>> from hetbench.partitioners import ShardsPartitioner
    >>> from hetbench.sources import load_table
    >>> part = ShardsPartitioner(num_clients=10, shards_per_client=2).partition(load_table("builtin:digits"), seed=0)
    >>> part.client_sizes().tolist(), part.dropped_counts()  # 20 shards of 1797 // 20 = 89
    ([178, 178, 178, 178, 178, 178, 178, 178, 178, 178], {'remainder': 17})
    """

    name = "shards"

    def __init__(self, num_clients: int = 10, shards_per_client: int = 2) -> None:
        if num_clients < 1 or shards_per_client < 1:
            raise HetbenchError("`num_clients` and `shards_per_client` must be at least 1")
        self.num_clients = int(num_clients)
        self.shards_per_client = int(shards_per_client)

    def params(self) -> dict:
        return {"num_clients": self.num_clients, "shards_per_client": self.shards_per_client}

    def _assign(self, table, split, rng):
        a, r = shard_assignment(table.labels[split], self.num_clients, self.shards_per_client, rng)
        return a, r, self.num_clients, default_client_names(self.num_clients)


class ClassesPerClientPartitioner(Partitioner):
    """Pathological split: each client holds exactly ``k`` classes, shared evenly with their other holders.

    Client i's first class is the (i mod C)-th of a random class order (so every class has a
    holder when there are at least as many clients as classes), its other ``k - 1`` are distinct
    and uniform at random; a class goes in full to its holders in equal parts (sizes differing by
    at most one). A class no client holds is dropped (``class-unassigned``). See
    :func:`classes_per_client_counts`.

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients (at least 1, at most the number of samples).
    classes_per_client : int, default 2
        Classes per client k, between 1 and the number of classes present; checked when
        partitioning.

    References
    ----------
    .. [1] H. B. McMahan et al., "Communication-Efficient Learning of Deep Networks from
       Decentralized Data", AISTATS 2017, sec. 3 (the pathological non-IID partition: "most clients
       will only have examples of two digits").
    .. [2] Q. Li, Y. Diao, Q. Chen and B. He, "Federated Learning on Non-IID Data Silos: An
       Experimental Study" (NIID-Bench), ICDE 2022, label distribution skew, "quantity-based label
       imbalance" (#C = k: each party holds samples of exactly k labels).

    Examples
    --------
    >>> from hetbench.partitioners import ClassesPerClientPartitioner
    >>> from hetbench.sources import load_table
    >>> digits = load_table("builtin:digits")
    >>> part = ClassesPerClientPartitioner(num_clients=10, classes_per_client=2).partition(digits, seed=0)
    >>> (part.label_matrix(digits.labels["train"], digits.num_classes) > 0).sum(axis=1).tolist()
    [2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
    """

    name = "classes-per-client"

    def __init__(self, num_clients: int = 10, classes_per_client: int = 2) -> None:
        if num_clients < 1:
            raise HetbenchError(f"`num_clients` must be at least 1 (got {num_clients})")
        self.num_clients = int(num_clients)
        self.classes_per_client = int(classes_per_client)

    def params(self) -> dict:
        return {"num_clients": self.num_clients, "classes_per_client": self.classes_per_client}

    def _assign(self, table, split, rng):
        labels = table.labels[split]
        if self.num_clients > labels.size:
            raise HetbenchError(f"more clients ({self.num_clients}) than samples ({labels.size})")
        counts = classes_per_client_counts(
            np.bincount(labels, minlength=table.num_classes), self.num_clients, self.classes_per_client, rng
        )
        a, r = assign_from_counts(labels, counts, rng, DropReason.CLASS_UNASSIGNED)
        return a, r, self.num_clients, default_client_names(self.num_clients)
