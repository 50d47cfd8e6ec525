"""FedAvg (McMahan et al. 2017) and FedAvgM (Hsu et al. 2019; Hsu et al. 2020 sec. 5.1).

FedAvg: the server averages the clients' updates with weights n_k / n over the reporting clients and
applies theta_{t+1} = theta_t - gamma * g_bar (server learning rate gamma, 1 by default).
FedAvgM: server momentum, v_t = beta * v_{t-1} + g_bar and theta_{t+1} = theta_t - gamma * v_t, beta = 0.9
(Hsu et al. 2020 sec. 6.5: "momentum beta = 0.9 is used for FedAvgM"). Hsu et al. keep the server step
gamma = 1 and fold the momentum into the client learning rate: their effective learning rate is
eta_eff = eta / (1 - beta) with eta the client rate (Hsu et al. 2020, Appendix A.1, following Shallue et
al. 2018). hetbench follows that convention: server_lr 1 and, unless ``--lr`` is given, a client rate of
(1 - beta) times FedAvg's, so that eta_eff equals FedAvg's client rate (0.005 for beta = 0.9).
"""

from __future__ import annotations

import torch

from hetbench.train.algorithms.base import Algorithm, RunState
from hetbench.train.algorithms.config import DEFAULT_LR
from hetbench.train.algorithms.hyper import SERVER_LR, Hyper


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
    hyper = {"server_lr": SERVER_LR}


#: server momentum beta (FedAvgM: 0.9; FedIR and FedVC: 0, plain FedAvg, unless given)
SERVER_MOMENTUM = Hyper(0.0, "Server momentum beta (FedAvgM 0.9; FedIR/FedVC 0). Unless --lr is given, the client "
                        "learning rate is (1 - beta) times the default, an effective rate eta / (1 - beta) equal to "
                        "FedAvg's.", "Hsu et al. 2020, sec. 5.1, 6.5 and Appendix A.1",
                        low=0.0, high=1.0, high_open=True)


def momentum_client_lr(beta: float, lr: float = DEFAULT_LR) -> float:
    """The default client learning rate under server momentum ``beta``: ``(1 - beta) * lr``, so that the
    effective rate ``eta / (1 - beta)`` of Hsu et al. 2020 (Appendix A.1) is ``lr`` (rounded to 12 decimals:
    0.005, not 0.0049999999999999975, for 0.9).

    Examples
    --------
    >>> momentum_client_lr(0.9), momentum_client_lr(0.99), momentum_client_lr(0.0)
    (0.005, 0.0005, 0.05)
    """
    return round((1.0 - float(beta)) * float(lr), 12)


class ServerMomentum:
    """Mixin: heavy-ball momentum on the server update (FedAvgM); beta = 0 is plain FedAvg.

    ``v_t = beta * v_{t-1} + g_bar`` and ``theta_{t+1} = theta_t - server_lr * v_t`` with
    ``beta = params["server_momentum"]`` and ``server_lr`` 1 unless given. The client learning rate when
    ``--lr`` is not given is ``(1 - beta)`` times the default (:func:`momentum_client_lr`), Hsu et al.'s
    convention: the effective rate ``eta / (1 - beta)`` is then FedAvg's client rate whatever beta.
    """

    def __init__(self, **params) -> None:
        super().__init__(**params)
        beta = float(self.params.get("server_momentum", 0.0))
        if beta:
            self.default_lr = momentum_client_lr(beta)

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
        Server learning rate gamma; Hsu et al. keep it at 1 (their server applies ``v_t`` as it is).
    server_momentum : float, default 0.9
        Momentum beta, in [0, 1); "momentum beta = 0.9 is used for FedAvgM" (Hsu et al. 2020, sec. 6.5).
        With beta = 0 FedAvgM is FedAvg.

    The client learning rate, unless ``--lr`` is given, is ``(1 - beta)`` times the default 0.05: 0.005 at
    beta = 0.9 (see Notes).

    Notes
    -----
    A constant update ``g`` moves the model by ``gamma / (1 - beta) * g`` per round once the momentum has
    built up, and a client update scales with the client rate ``eta``. Hsu et al. 2020 (Appendix A.1,
    following Shallue et al. 2018) define the effective learning rate of FedAvgM as
    ``eta_eff = eta / (1 - beta)`` with ``eta`` the client rate and the server step at 1, and sweep
    ``eta_eff`` over {1e-3, 10^-2.5, ..., 1} and ``1 - beta`` over {10^-2.5, ..., 1} on CIFAR-10/100
    Dirichlet splits, finding that ``eta_eff = 1e-2`` "works well in many situations". The default here
    keeps ``eta_eff`` at FedAvg's default client rate (0.05), so FedAvgM and FedAvg compare at the same
    effective step. hetbench's former default (server_lr = 1 - beta = 0.1 with the client rate 0.05)
    applied momentum to a server step ten times smaller and reached 34.2% where FedAvg reached 68.3% on
    the default split (20 rounds); ``hetbench reproduce --claims hsu-fedavgm`` tunes the effective step
    on a grid for both algorithms.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Measuring the effects of non-identical data distribution for
       federated visual classification", arXiv:1909.06335, 2019 (FedAvgM: FedAvg with server momentum).
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 5.1 and 6.5, and Appendix A.1 (the eta_eff sweep).

    Examples
    --------
    Two server steps with the same averaged update ``g_bar = -1``: 1 * 1, then 1 * (0.9 + 1).

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hetbench.train.algorithms import TrainConfig, make_algorithm
    >>> fedavgm = make_algorithm("fedavgm")
    >>> fedavgm.params, TrainConfig().for_algorithm(fedavgm).lr
    ({'server_lr': 1.0, 'server_momentum': 0.9}, 0.005)
    >>> run = SimpleNamespace(global_params=torch.zeros(1))
    >>> for _ in range(2):
    ...     fedavgm.apply_server_update(run, torch.tensor([-1.0]))
    >>> run.global_params
    tensor([2.9000])
    >>> TrainConfig().for_algorithm(make_algorithm("fedavgm", server_momentum=0.99)).lr  # follows beta
    0.0005
    >>> TrainConfig(lr=0.01).for_algorithm(fedavgm).lr  # a given --lr is used as it is
    0.01
    """

    name = "fedavgm"
    citation = "Hsu, Qi, Brown 2019, Measuring the effects of non-identical data distribution (FedAvgM)"
    hyper = {
        "server_lr": Hyper(1.0, "Server learning rate (1: the plain weighted average).",
                           "Hsu et al. 2020, sec. 5.1 (theta <- theta - gamma v); Hsu et al. 2019", low=0.0,
                           low_open=True),
        "server_momentum": Hyper(0.9, SERVER_MOMENTUM.help, "Hsu et al. 2020, sec. 6.5", low=0.0, high=1.0,
                                 high_open=True),
    }
