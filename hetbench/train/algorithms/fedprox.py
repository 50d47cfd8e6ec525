"""FedProx (Li et al. 2020, Federated optimization in heterogeneous networks).

Each client minimises h_k(w) = F_k(w) + mu/2 * ||w - w_t||^2, whose gradient adds mu * (w - w_t) to
the local gradient; the server is FedAvg. mu = 0.1 is the value HeteroSwitch (Appendix A) and DapperFL
(Table 4) use. With mu = 0 FedProx is FedAvg exactly.
"""

from __future__ import annotations

import numpy as np

from hetbench.train.algorithms.base import RunState
from hetbench.train.algorithms.fedavg import FedAvg
from hetbench.train.local import LocalResult, local_sgd


class FedProx(FedAvg):
    name = "fedprox"
    citation = "Li et al. 2020, Federated optimization in heterogeneous networks"
    defaults = {"server_lr": 1.0, "mu": 0.1}

    def train_locally(self, run: RunState, round_index: int, client: int, batches: list[np.ndarray]) -> LocalResult:
        c = run.config
        mu = float(self.params["mu"])
        anchor = run.global_params
        params = run.ws.flat.params

        def proximal(g):
            return g.add_(params - anchor, alpha=mu) if mu else g

        return local_sgd(run.ws, batches, c.lr, c.momentum, c.weight_decay, grad_hook=proximal)
