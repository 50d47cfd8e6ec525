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
    """``k`` distinct clients drawn with probability proportional to their size n_k (FedVC, Hsu et al.
    2020 sec. 5.3), sorted. Clients with no data are never drawn."""
    sizes = np.asarray(sizes, dtype=np.float64)
    eligible = int(np.count_nonzero(sizes > 0))
    k = min(int(k), eligible)
    p = sizes / sizes.sum()
    picked = round_rng(seed, round_index).choice(sizes.size, size=k, replace=False, p=p)
    return np.sort(picked).astype(np.int64)
