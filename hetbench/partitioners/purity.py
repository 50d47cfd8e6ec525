"""The purity knob of device and domain splits: each client takes a fraction lambda of its rows from its own
group (device or domain) and 1 - lambda from the other groups, equally from each.

lambda = 1 is the pure split (a client holds its group only); lambda = 1/G, with G groups, is a uniform mix
(every group supplies 1/G of every client). This is the heterogeneity knob of the federated domain
generalisation benchmark (Bai et al., "Benchmarking Algorithms for Federated Domain Generalization", ICLR
2024, sec. 4.1: a client's data is a lambda share of its own domain and the rest from the others); values
below 1/G would make a client's own group rarer in it than any other and are refused.

How the rows are chosen (:func:`mix_groups`; randomness only from the generator):

1. Client c of group g with s_c rows (the sizes of the pure split) needs ``round(lambda * s_c)`` rows of g
   and the rest from the G - 1 other groups in equal shares (largest remainder, ties broken at random).
2. A group asked for more rows than it has passes the excess, client by client in client order, to the
   groups with the most rows to spare; sizes never change. If the groups together cannot serve every
   client, that is an error naming the group.
3. Each group's eligible rows are permuted once and cut into consecutive slices, one per client in client
   order, so clients hold disjoint rows; rows no client takes are left out (``remainder``).
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partitioners._alloc import largest_remainder


def check_purity(purity: float, num_groups: int, what: str = "groups") -> float:
    """``purity`` as a float in [1/G, 1], else a one-line :class:`HetbenchError`.

    Examples
    --------
    >>> from hetbench.partitioners.purity import check_purity
    >>> check_purity(0.5, 2)
    0.5
    >>> check_purity(0.2, 4, "devices")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: purity must be in [1/G, 1] = [0.25, 1] for G = 4 devices (got 0.2)
    """
    value = float(purity)
    low = 1.0 / max(int(num_groups), 1)
    if not (math.isfinite(value) and low - 1e-12 <= value <= 1.0):
        raise HetbenchError(f"`purity` must be in [1/G, 1] = [{low:.4g}, 1] for G = {num_groups} {what} (got {purity})")
    return value


def needs(sizes: np.ndarray, group_of_client: np.ndarray, num_groups: int, purity: float,
          rng: np.random.Generator) -> np.ndarray:
    """(clients, groups) rows each client takes from each group (step 1 of the module notes).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.partitioners.purity import needs
    >>> n = needs(np.array([10, 10, 9]), np.array([0, 1, 2]), 3, 0.5, np.random.default_rng(0))
    >>> n.diagonal().tolist(), n.sum(axis=1).tolist()  # round(0.5 x 9) = 4 (half to even)
    ([5, 5, 4], [10, 10, 9])
    """
    sizes = np.asarray(sizes, np.int64)
    out = np.zeros((len(sizes), num_groups), np.int64)
    for c, (s, g) in enumerate(zip(sizes.tolist(), np.asarray(group_of_client).tolist())):
        own = int(round(purity * s)) if num_groups > 1 else s
        out[c, g] = own
        others = [h for h in range(num_groups) if h != g]
        if others and s - own:
            out[c, others] = largest_remainder(np.full(len(others), (s - own) / len(others)), s - own, rng)
    return out


def _balance(need: np.ndarray, supply: np.ndarray, names: list[str]) -> np.ndarray:
    """Step 2: move each over-asked group's excess to the groups with the most rows to spare."""
    need = need.copy()
    for h in range(need.shape[1]):
        excess = int(need[:, h].sum() - supply[h])
        for c in range(need.shape[0]):
            if excess <= 0:
                break
            while excess > 0 and need[c, h] > 0:
                spare = supply - need.sum(axis=0)
                spare[h] = -1
                target = int(np.argmax(spare))
                if spare[target] <= 0:
                    raise HetbenchError(
                        f"{names[h]} has {int(supply[h])} rows but its share of every client needs {int(need[:, h].sum())}, "
                        "and no other group has rows to spare; raise `purity` or lower the clients' sizes")
                move = min(excess, int(need[c, h]), int(spare[target]))
                need[c, h] -= move
                need[c, target] += move
                excess -= move
    return need


def mix_groups(group_of_row: np.ndarray, group_of_client: np.ndarray, sizes: np.ndarray, purity: float,
               rng: np.random.Generator, group_names: list[str] | None = None) -> np.ndarray:
    """Client of every row (-1: not taken) for clients of ``sizes`` rows mixing their groups at ``purity``.

    Parameters
    ----------
    group_of_row : numpy.ndarray
        (n,) group index of every row, -1 for rows no client may take.
    group_of_client : numpy.ndarray
        (clients,) each client's own group.
    sizes : numpy.ndarray
        (clients,) rows per client.
    purity : float
        lambda in [1/G, 1] (:func:`check_purity`).
    rng : numpy.random.Generator
        Draws each group's rows.
    group_names : list of str, optional
        For the error message.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.partitioners.purity import mix_groups
    >>> rows = np.repeat([0, 1], 20)                       # 20 rows of group 0, 20 of group 1
    >>> got = mix_groups(rows, np.array([0, 1]), np.array([10, 10]), 0.7, np.random.default_rng(0))
    >>> [np.bincount(rows[got == c], minlength=2).tolist() for c in (0, 1)]
    [[7, 3], [3, 7]]
    """
    group_of_row = np.asarray(group_of_row, np.int64)
    num_groups = int(max(group_of_row.max(initial=-1), np.max(group_of_client, initial=-1)) + 1)
    names = group_names or [f"group {g}" for g in range(num_groups)]
    supply = np.bincount(group_of_row[group_of_row >= 0], minlength=num_groups)
    need = _balance(needs(sizes, group_of_client, num_groups, purity, rng), supply, names)
    assignment = np.full(len(group_of_row), -1, np.int32)
    order = np.argsort(group_of_row, kind="stable")
    bounds = np.searchsorted(group_of_row[order], np.arange(num_groups + 1))
    for h in range(num_groups):
        rows = rng.permutation(order[bounds[h]:bounds[h + 1]])
        taken = need[:, h]
        assignment[rows[:int(taken.sum())]] = np.repeat(np.arange(len(taken), dtype=np.int32), taken)
    return assignment


def group_mix(assignment: np.ndarray, group_of_row: np.ndarray, group_of_client: np.ndarray) -> float:
    """The realised purity: the share of the clients' rows that come from their own group.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.partitioners.purity import group_mix
    >>> group_mix(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), np.array([0, 1]))
    0.75
    """
    a = np.asarray(assignment)
    taken = a >= 0
    own = np.asarray(group_of_client)[a[taken]] == np.asarray(group_of_row)[taken]
    return float(own.mean()) if own.size else 1.0


__all__ = ["check_purity", "needs", "mix_groups", "group_mix"]
