"""FedProx (Li et al. 2020, Federated optimization in heterogeneous networks).

Each client minimises h_k(w) = F_k(w) + mu/2 * ||w - w_t||^2, whose gradient adds mu * (w - w_t) to
the local gradient; the server is FedAvg. mu = 0.1 is the value HeteroSwitch (Appendix A) and DapperFL
(Table 4) use. With mu = 0 FedProx is FedAvg exactly.
"""

from __future__ import annotations

import numpy as np

from hetbench.train.algorithms.base import RunState
from hetbench.train.algorithms.hyper import SERVER_LR, Hyper
from hetbench.train.algorithms.fedavg import FedAvg
from hetbench.train.local import LocalResult, local_sgd
from hetbench.train.local_plan import LocalPlan


class FedProx(FedAvg):
    """FedAvg whose clients minimise ``F_k(w) + mu/2 ||w - w_t||^2`` (a proximal term to the global model).

    The proximal gradient ``mu (w - w_t)`` is added to every local gradient; the server is FedAvg.

    Parameters
    ----------
    server_lr : float, default 1.0
        Server learning rate (as :class:`~hetbench.train.algorithms.fedavg.FedAvg`).
    mu : float, default 0.1
        Proximal weight, >= 0; 0.1 is the value of HeteroSwitch (Appendix A) and DapperFL (Table 4).
        With ``mu = 0`` FedProx is FedAvg exactly.

    References
    ----------
    .. [1] T. Li, A. K. Sahu, M. Zaheer, M. Sanjabi, A. Talwalkar and V. Smith, "Federated optimization in
       heterogeneous networks", MLSys 2020, Algorithm 2 (FedProx) and its Eq. (2), the local objective h_k.

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> make_algorithm("fedprox").params
    {'server_lr': 1.0, 'mu': 0.1}
    >>> make_algorithm("fedprox", mu=0.01).params["mu"]
    0.01
    """

    name = "fedprox"
    citation = "Li et al. 2020, Federated optimization in heterogeneous networks"
    hyper = {"server_lr": SERVER_LR,
             "mu": Hyper(0.1, "FedProx proximal weight mu.", "HeteroSwitch Appendix A; DapperFL Table 4", low=0.0)}

    stacked = True  # local_plan carries mu: the stacked step adds mu (w - w_global) as proximal() does

    def local_plan(self, run: RunState, round_index: int, client: int) -> LocalPlan:
        return LocalPlan(self.batches(run, round_index, client), prox_mu=float(self.params["mu"]))

    def train_locally(self, run: RunState, round_index: int, client: int, batches: list[np.ndarray]) -> LocalResult:
        c = run.config
        mu = float(self.params["mu"])
        anchor = run.global_params
        params = run.ws.flat.params

        def proximal(g):
            return g.add_(params - anchor, alpha=mu) if mu else g

        return local_sgd(run.ws, batches, c.lr, c.momentum, c.weight_decay, grad_hook=proximal)
