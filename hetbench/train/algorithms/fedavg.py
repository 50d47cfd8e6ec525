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
    name = "fedavg"
    citation = "McMahan et al. 2017, Communication-efficient learning of deep networks from decentralized data"
    defaults = {"server_lr": 1.0}


class ServerMomentum:
    """Mixin: heavy-ball momentum on the server update (FedAvgM); beta = 0 is plain FedAvg."""

    def apply_server_update(self, run: RunState, g_bar: torch.Tensor) -> None:
        beta = float(self.params.get("server_momentum", 0.0))
        if beta:
            v = getattr(self, "_velocity", None)
            self._velocity = g_bar.clone() if v is None else v.mul_(beta).add_(g_bar)
            g_bar = self._velocity
        run.global_params = run.global_params - float(self.params.get("server_lr", 1.0)) * g_bar


class FedAvgM(ServerMomentum, FedAvg):
    name = "fedavgm"
    citation = "Hsu, Qi, Brown 2019, Measuring the effects of non-identical data distribution (FedAvgM)"
    defaults = {"server_lr": 1.0, "server_momentum": 0.9}
