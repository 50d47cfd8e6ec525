"""FedIR: importance-reweighted client objectives (Hsu et al. 2020, sec. 5.2, Eq. 1-4).

With p(x|y) ~ q_k(x|y), the importance weight of an example is w_k(y) = p(y) / q_k(y) (Eq. 3): p is the
population's class distribution (C scalars the server can send) and q_k the client's own (it never
leaves the client). Each mini-batch loss is self-normalised (Eq. 4):
L~(b) = sum_b l(x, y) w_k(y) / sum_b w_k(y), so the weights rescale the examples, not the learning rate.
The server is FedAvg, or FedAvgM with ``server_momentum`` > 0 (the paper combines FedIR with both).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from hetbench.train.algorithms.base import RunState
from hetbench.train.algorithms.fedavg import SERVER_MOMENTUM, FedAvg, ServerMomentum
from hetbench.train.algorithms.hyper import SERVER_LR
from hetbench.train.local import LocalResult, local_sgd
from hetbench.train.local_plan import IGNORE, LocalPlan


def importance_weights(population: np.ndarray, client: np.ndarray) -> np.ndarray:
    """w_k(y) = p(y) / q_k(y) from class counts (Eq. 3); 0 for classes the client does not have."""
    p = population / population.sum()
    q = client / max(client.sum(), 1)
    return np.divide(p, q, out=np.zeros_like(p, dtype=np.float64), where=q > 0)


def self_normalised_loss(losses: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Eq. 4: sum(l * w) / sum(w) over a mini-batch."""
    return (losses * weights).sum() / weights.sum()


def importance_weighted_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                             class_weights: torch.Tensor) -> torch.Tensor:
    """FedIR's client loss (Eq. 4): the batch's cross-entropies weighted by ``class_weights[y]`` (Eq. 3's
    w_k(y), the client's own), self-normalised. Rows labelled ``IGNORE`` pad a stacked round's short batch
    (:mod:`hetbench.train.stacked`) and weigh 0; without them the weights are ``class_weights[y]`` exactly."""
    per_row = F.cross_entropy(model(x), y, reduction="none", ignore_index=IGNORE)
    return self_normalised_loss(per_row, class_weights.gather(0, y.clamp(min=0)) * (y != IGNORE))


class FedIR(ServerMomentum, FedAvg):
    """FedIR: each client reweights its examples by ``w_k(y) = p(y) / q_k(y)`` (self-normalised per batch).

    Parameters
    ----------
    server_lr, server_momentum : float, default 1.0 and 0.0
        The server's learning rate and momentum beta in [0, 1): FedIR on FedAvg (beta = 0) or on FedAvgM
        (beta > 0), the two combinations the paper reports.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 5.2 "Importance reweighted client objectives", Eq. (3) (the weights) and
       Eq. (4) (the self-normalised mini-batch loss).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.train.algorithms import make_algorithm
    >>> from hetbench.train.algorithms.fedir import importance_weights
    >>> make_algorithm("fedir").params
    {'server_lr': 1.0, 'server_momentum': 0.0}
    >>> importance_weights(np.array([10.0, 30.0, 60.0]), np.array([5.0, 5.0, 0.0])).tolist()  # p / q_k
    [0.2, 0.6, 0.0]
    """

    name = "fedir"
    citation = "Hsu, Qi, Brown 2020, Federated visual classification with real-world data distribution (FedIR)"
    hyper = {"server_lr": SERVER_LR, "server_momentum": SERVER_MOMENTUM}

    def setup(self, run: RunState) -> None:
        d = run.data
        rows = np.concatenate(d.client_rows) if d.client_rows else np.zeros(0, dtype=np.int64)
        self.population = np.bincount(d.y_train.numpy()[rows], minlength=d.num_classes).astype(np.float64)

    stacked = True  # local_plan carries w_k(y): the stacked step weighs its loss as Eq. 4

    def client_weights(self, run: RunState, client: int) -> torch.Tensor:
        """Eq. 3's ``w_k(y)`` of ``client``, from its own class counts q_k (which stay on the client)."""
        labels = run.data.y_train.numpy()[run.data.client_rows[client]]
        q_counts = np.bincount(labels, minlength=run.data.num_classes).astype(np.float64)
        return torch.tensor(importance_weights(self.population, q_counts), dtype=torch.float32, device=run.ws.device)

    def local_plan(self, run: RunState, round_index: int, client: int) -> LocalPlan:
        return LocalPlan(self.batches(run, round_index, client), loss_fn=importance_weighted_loss,
                         loss_args=(self.client_weights(run, client),))

    def train_locally(self, run: RunState, round_index: int, client: int, batches: list[np.ndarray]) -> LocalResult:
        c = run.config
        return local_sgd(run.ws, batches, c.lr, c.momentum, c.weight_decay, loss_fn=importance_weighted_loss,
                         loss_args=(self.client_weights(run, client),))
