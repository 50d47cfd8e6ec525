"""FedAvg (McMahan et al. 2017) and FedAvgM (Hsu et al. 2019; Hsu et al. 2020 sec. 5.1).

FedAvg: the server averages the clients' updates with weights n_k / n over the reporting clients and
applies theta_{t+1} = theta_t - gamma * g_bar (server learning rate gamma, 1 by default).
FedAvgM: server momentum, v_t = beta * v_{t-1} + g_bar and theta_{t+1} = theta_t - gamma * v_t, beta = 0.9
(Hsu et al. 2020 sec. 6.5: "momentum beta = 0.9 is used for FedAvgM").
"""

from __future__ import annotations

import torch

from hetbench.train.algorithms.base import Algorithm, RunState


class FedAvg(Algorithm):
    """Federated averaging: local SGD on the selected clients, a size-weighted average on the server.

    Every round K clients drawn uniformly train E local epochs of SGD from the global model; the server
    applies ``theta_{t+1} = theta_t - server_lr * g_bar`` with ``g_bar = sum_k n_k / n (theta_t - theta_k)``
    over the reporting clients, which with ``server_lr = 1`` is the weighted average of the local models.

    Parameters
    ----------
    server_lr : float, default 1.0
        Server learning rate gamma (Hsu et al. 2020, Algorithm 1); 1 is McMahan et al.'s average.

    References
    ----------
    .. [1] H. B. McMahan, E. Moore, D. Ramage, S. Hampson and B. Aguera y Arcas, "Communication-efficient
       learning of deep networks from decentralized data", AISTATS 2017, Algorithm 1 (FederatedAveraging).
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 5.1 and Algorithm 1 (SelectClients, ClientUpdate, AggregateClient,
       server rate).

    Examples
    --------
    One aggregation step: two clients with 10 and 30 examples.

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hetbench.train.algorithms import ClientUpdate, make_algorithm
    >>> fedavg = make_algorithm("fedavg")
    >>> fedavg.params
    {'server_lr': 1.0}
    >>> run = SimpleNamespace(global_params=torch.zeros(2), global_buffers=torch.zeros(0))
    >>> fedavg.begin_round(run, 1)
    >>> for k, (theta, n) in enumerate([([1.0, 2.0], 10), ([4.0, 8.0], 30)]):
    ...     fedavg.accumulate(run, 1, ClientUpdate(k, torch.tensor(theta), torch.zeros(0), float(n), 0.0, 1, n))
    >>> fedavg.end_round(run, 1)
    >>> run.global_params  # (10 * [1, 2] + 30 * [4, 8]) / 40
    tensor([3.2500, 6.5000])
    """

    name = "fedavg"
    citation = "McMahan et al. 2017, Communication-efficient learning of deep networks from decentralized data"
    defaults = {"server_lr": 1.0}


class ServerMomentum:
    """Mixin: heavy-ball momentum on the server update (FedAvgM); beta = 0 is plain FedAvg.

    ``v_t = beta * v_{t-1} + g_bar`` and ``theta_{t+1} = theta_t - server_lr * v_t`` with
    ``beta = params["server_momentum"]``.
    """

    def apply_server_update(self, run: RunState, g_bar: torch.Tensor) -> None:
        beta = float(self.params.get("server_momentum", 0.0))
        if beta:
            v = getattr(self, "_velocity", None)
            self._velocity = g_bar.clone() if v is None else v.mul_(beta).add_(g_bar)
            g_bar = self._velocity
        run.global_params = run.global_params - float(self.params.get("server_lr", 1.0)) * g_bar


class FedAvgM(ServerMomentum, FedAvg):
    """FedAvg with server momentum: ``v_t = beta v_{t-1} + g_bar``, ``theta_{t+1} = theta_t - gamma v_t``.

    Parameters
    ----------
    server_lr : float, default 1.0
        Server learning rate gamma.
    server_momentum : float, default 0.9
        Momentum beta, in [0, 1); "momentum beta = 0.9 is used for FedAvgM" (Hsu et al. 2020, sec. 6.5).
        With beta = 0 FedAvgM is FedAvg.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Measuring the effects of non-identical data distribution for
       federated visual classification", arXiv:1909.06335, 2019 (FedAvgM: FedAvg with server momentum).
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 5.1 and 6.5.

    Examples
    --------
    Two server steps with the same averaged update ``g_bar = -1``: the second moves by ``0.9 + 1``.

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hetbench.train.algorithms import make_algorithm
    >>> fedavgm = make_algorithm("fedavgm")
    >>> fedavgm.params
    {'server_lr': 1.0, 'server_momentum': 0.9}
    >>> run = SimpleNamespace(global_params=torch.zeros(1))
    >>> for _ in range(2):
    ...     fedavgm.apply_server_update(run, torch.tensor([-1.0]))
    >>> run.global_params
    tensor([2.9000])
    """

    name = "fedavgm"
    citation = "Hsu, Qi, Brown 2019, Measuring the effects of non-identical data distribution (FedAvgM)"
    defaults = {"server_lr": 1.0, "server_momentum": 0.9}
