"""FedVC: federated virtual clients (Hsu et al. 2020, sec. 5.3 and Algorithm 1).

Every round K clients are drawn, each draw picking client k with probability n_k / n (with replacement: a
large client drawn twice trains two virtual clients, as the paper splits it into several); a selected client draws
N_VC examples uniformly from its data (without replacement when n_k >= N_VC, with replacement otherwise)
and takes exactly S = ceil(N_VC / B) steps over them, so every virtual client does the same work and gets
the same aggregation weight. N_VC = 256 (sec. 6.3). The number of local epochs does not apply: the round's
work is fixed by N_VC. The server is FedAvg, or FedAvgM with ``server_momentum`` > 0.
"""

from __future__ import annotations

import numpy as np

from hetbench.train.algorithms.base import RunState
from hetbench.train.algorithms.fedavg import SERVER_MOMENTUM, FedAvg, ServerMomentum
from hetbench.train.algorithms.hyper import SERVER_LR, Hyper
from hetbench.train.sampling import select_proportional


def virtual_client_rows(rows: np.ndarray, n_vc: int, rng: np.random.Generator) -> np.ndarray:
    """N_VC rows of a client: without replacement when it has at least N_VC, else with replacement."""
    return rng.choice(rows, size=n_vc, replace=rows.size < n_vc)


class FedVC(ServerMomentum, FedAvg):
    """FedVC: clients selected in proportion to their size each train one virtual client of N_VC examples.

    Every selected client takes ``ceil(N_VC / B)`` steps over N_VC examples drawn from its data and gets
    the same aggregation weight; the number of local epochs does not apply.

    Parameters
    ----------
    server_lr, server_momentum : float, default 1.0 and 0.0
        The server's learning rate and momentum beta in [0, 1) (> 0: FedVC on FedAvgM). With a momentum
        and no ``--lr`` given, the client learning rate is ``1 - beta`` times the default (as FedAvgM's).
    vc_size : int, default 256
        Examples per virtual client N_VC (sec. 6.3).

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 5.3 "Splitting imbalanced clients with virtual clients" and Algorithm 1
       (SelectClients by size, ClientUpdate over N_VC examples).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.train.algorithms import make_algorithm
    >>> from hetbench.train.algorithms.fedvc import virtual_client_rows
    >>> make_algorithm("fedvc").params
    {'server_lr': 1.0, 'server_momentum': 0.0, 'vc_size': 256}
    >>> virtual_client_rows(np.arange(3), 5, np.random.default_rng(0)).size  # 3 rows: drawn with replacement
    5
    """

    name = "fedvc"
    citation = "Hsu, Qi, Brown 2020, Federated visual classification with real-world data distribution (FedVC)"
    hyper = {"server_lr": SERVER_LR, "server_momentum": SERVER_MOMENTUM,
             "vc_size": Hyper(256, "FedVC examples per virtual client N_VC.", "Hsu et al. 2020, sec. 6.3", low=0.0,
                              low_open=True, integer=True)}

    def select(self, run: RunState, round_index: int) -> np.ndarray:
        return select_proportional(run.config.seed, round_index, run.data.client_sizes, run.config.clients_per_round)

    def batches(self, run: RunState, round_index: int, client: int) -> list[np.ndarray]:
        n_vc = int(self.params["vc_size"])
        rows = virtual_client_rows(run.data.client_rows[client], n_vc, run.rng(round_index, client, 1))
        b = run.config.batch_size
        return [rows[i : i + b] for i in range(0, n_vc, b)]

    def update_weight(self, run: RunState, client: int) -> float:
        return float(self.params["vc_size"])  # every virtual client has N_VC examples
