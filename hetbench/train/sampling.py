"""Client selection per round, shared by every algorithm (and by the Flower peer in the benchmark).

Each round draws from its own generator seeded by ``(seed, round)``, so the clients a round picks do not
depend on what earlier rounds consumed: two algorithms run with the same seed see the same clients
(McMahan et al. 2017; uniform selection as in Hsu et al. 2020, Algorithm 1, ``SelectClients``).
"""

from __future__ import annotations

import numpy as np


def round_rng(seed: int, round_index: int, stream: int = 0) -> np.random.Generator:
    """The generator of round ``round_index`` (1-based); ``stream`` separates independent uses."""
    return np.random.default_rng([int(seed), int(round_index), int(stream)])


def select_uniform(seed: int, round_index: int, num_clients: int, k: int) -> np.ndarray:
    """``min(k, num_clients)`` distinct clients drawn uniformly, sorted (Hsu et al. 2020, Alg. 1)."""
    k = min(int(k), int(num_clients))
    picked = round_rng(seed, round_index).choice(int(num_clients), size=k, replace=False)
    return np.sort(picked).astype(np.int64)


def select_proportional(seed: int, round_index: int, sizes: np.ndarray, k: int) -> np.ndarray:
    """``k`` clients drawn independently, each with probability n_k / n (FedVC, Hsu et al. 2020 sec. 5.3:
    "the probability that any client is selected for a round is set to be proportional to the client size
    n_k"), sorted; clients with no data are never drawn.

    The draws are with replacement, so client k is drawn ``k * n_k / n`` times per round on average,
    exactly in proportion to its size. FedVC "conceptually split[s] large clients into multiple smaller
    ones": a client drawn twice trains two virtual clients, each on its own N_VC examples
    (:func:`draw_numbers` tells them apart). Drawing without replacement would cap a large client at one
    virtual client per round and under-select it: in a round of 10, a client holding 40% of the data would
    train one virtual client (numpy's weighted draw without replacement includes it with probability 0.996),
    not 10 x 0.4 = 4.

    Examples
    --------
    >>> sizes = np.array([4000, 100, 100, 100, 100, 100])  # client 0 holds 89% of the data
    >>> picks = np.concatenate([select_proportional(0, r, sizes, 10) for r in range(1, 201)])
    >>> round(float(np.mean(picks == 0)), 2)  # share of the draws: 4000 / 4500 = 0.89 on average
    0.88
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    if not np.any(sizes > 0) or int(k) < 1:
        return np.zeros(0, dtype=np.int64)
    p = sizes / sizes.sum()
    picked = round_rng(seed, round_index).choice(sizes.size, size=int(k), replace=True, p=p)
    return np.sort(picked).astype(np.int64)


def draw_numbers(clients: list[int]) -> list[int]:
    """For each position of a round's selection, how many times its client was listed before it: 0 for a
    client's first update of the round, 1 for its second virtual client, and so on.

    Examples
    --------
    >>> draw_numbers([2, 2, 5, 2])
    [0, 1, 0, 2]
    """
    seen: dict[int, int] = {}
    out = []
    for k in clients:
        out.append(seen.get(k, 0))
        seen[k] = out[-1] + 1
    return out
