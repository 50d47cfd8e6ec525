"""FedAvg (McMahan et al. 2017) and FedAvgM (Hsu et al. 2019; Hsu et al. 2020 sec. 5.1).

FedAvg: the server averages the clients' updates with weights n_k / n over the reporting clients and
applies theta_{t+1} = theta_t - gamma * g_bar (server learning rate gamma, 1 by default).
FedAvgM: server momentum, v_t = beta * v_{t-1} + g_bar and theta_{t+1} = theta_t - gamma * v_t, beta = 0.9
(Hsu et al. 2020 sec. 6.5: "momentum beta = 0.9 is used for FedAvgM"). A constant update is applied
gamma / (1 - beta) times over in the long run: the effective learning rate eta_eff = eta / (1 - beta) of
Hsu et al. 2020, Appendix A.1, with eta read as gamma. Unless given, the server learning rate is
therefore 1 - beta (effective step 1, the long-run step of FedAvg's plain average): 0.1 with beta = 0.9.
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


def momentum_server_lr(beta: float) -> float:
    """The default server learning rate under server momentum ``beta``: ``1 - beta``, so that the effective
    step ``server_lr / (1 - beta)`` is 1 (rounded to 12 decimals: 0.1, not 0.09999999999999998, for 0.9).

    Examples
    --------
    >>> momentum_server_lr(0.9), momentum_server_lr(0.99), momentum_server_lr(0.0)
    (0.1, 0.01, 1.0)
    """
    return round(1.0 - float(beta), 12)


class ServerMomentum:
    """Mixin: heavy-ball momentum on the server update (FedAvgM); beta = 0 is plain FedAvg.

    ``v_t = beta * v_{t-1} + g_bar`` and ``theta_{t+1} = theta_t - server_lr * v_t`` with
    ``beta = params["server_momentum"]``. When ``server_lr`` is not given it is ``1 - beta``
    (:func:`momentum_server_lr`): the effective step ``server_lr / (1 - beta)`` stays 1 whatever beta.
    A given ``server_lr`` is kept as it is.
    """

    def __init__(self, **params) -> None:
        super().__init__(**params)
        if params.get("server_lr") is None:
            self.params["server_lr"] = momentum_server_lr(self.params.get("server_momentum", 0.0))

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
    server_lr : float, default 1 - server_momentum (0.1)
        Server learning rate gamma. Unless given it is ``1 - beta``, so the effective step
        ``gamma / (1 - beta)`` is 1 (see Notes); a given value is used as it is.
    server_momentum : float, default 0.9
        Momentum beta, in [0, 1); "momentum beta = 0.9 is used for FedAvgM" (Hsu et al. 2020, sec. 6.5).
        With beta = 0 FedAvgM is FedAvg.

    Notes
    -----
    A constant update ``g`` moves the model by ``gamma / (1 - beta) * g`` per round once the momentum has
    built up. Hsu et al. 2020 (Appendix A.1, following Shallue et al. 2018) call ``eta / (1 - beta)`` the
    effective learning rate ``eta_eff`` of FedAvgM and, on CIFAR-10/100 with Dirichlet client splits, sweep
    ``eta_eff`` over {1e-3, 10^-2.5, ..., 1} and ``1 - beta`` over {10^-2.5, ..., 1}, reporting that
    ``eta_eff = 1e-2`` "works well in many situations"; their grid does not go beyond 1. (That appendix does
    not define eta further; here it is read as the server learning rate gamma.) The default
    gamma = 1 - beta is an effective step of 1, the top of that grid and the long-run step of FedAvg's
    plain average; gamma = 1 with beta = 0.9 (hetbench's former default) is an effective step of 10.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Measuring the effects of non-identical data distribution for
       federated visual classification", arXiv:1909.06335, 2019 (FedAvgM: FedAvg with server momentum).
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 5.1 and 6.5, and Appendix A.1 (the eta_eff sweep).

    Examples
    --------
    Two server steps with the same averaged update ``g_bar = -1``: 0.1 * 1, then 0.1 * (0.9 + 1).

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hetbench.train.algorithms import make_algorithm
    >>> fedavgm = make_algorithm("fedavgm")
    >>> fedavgm.params
    {'server_lr': 0.1, 'server_momentum': 0.9}
    >>> run = SimpleNamespace(global_params=torch.zeros(1))
    >>> for _ in range(2):
    ...     fedavgm.apply_server_update(run, torch.tensor([-1.0]))
    >>> run.global_params
    tensor([0.2900])
    >>> make_algorithm("fedavgm", server_momentum=0.99).params  # server_lr follows beta unless given
    {'server_lr': 0.01, 'server_momentum': 0.99}
    >>> make_algorithm("fedavgm", server_lr=1.0).params
    {'server_lr': 1.0, 'server_momentum': 0.9}
    """

    name = "fedavgm"
    citation = "Hsu, Qi, Brown 2019, Measuring the effects of non-identical data distribution (FedAvgM)"
    defaults = {"server_lr": 0.1, "server_momentum": 0.9}
