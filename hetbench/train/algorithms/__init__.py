"""FL algorithms, one module each; :data:`ALGORITHMS` maps the ``--algo`` names to their classes and
:func:`make_algorithm` makes one, with its hyper-parameters range-checked.

Every algorithm follows Hsu et al. 2020, Algorithm 1 (SelectClients, ClientUpdate, AggregateClient) through
the hooks of :class:`~hetbench.train.algorithms.base.Algorithm`; a module overrides the parts its paper
changes.

Examples
--------
>>> from hetbench.train.algorithms import ALGORITHMS, make_algorithm
>>> ALGORITHMS.names()
('fedavg', 'fedavgm', 'fedprox', 'scaffold', 'qfedavg', 'fedir', 'fedvc', 'heteroswitch', 'dapperfl', 'central')
>>> make_algorithm("FedProx", mu=0.01, q=0.5).params  # q is q-FedAvg's: FedProx ignores it
{'server_lr': 1.0, 'mu': 0.01}
>>> make_algorithm("fedmagic")
Traceback (most recent call last):
...
hetbench.registry.UnknownNameError: unknown algorithm 'fedmagic' for --algo; choose one of: fedavg, fedavgm, ...
"""

from __future__ import annotations

import math

from hetbench.errors import HetbenchError
from hetbench.registry import Registry
from hetbench.train.algorithms.base import Algorithm, ClientUpdate, RunState, TrainConfig
from hetbench.train.algorithms.central import Central
from hetbench.train.algorithms.dapperfl import DapperFL
from hetbench.train.algorithms.fedavg import FedAvg, FedAvgM
from hetbench.train.algorithms.fedir import FedIR
from hetbench.train.algorithms.fedprox import FedProx
from hetbench.train.algorithms.fedvc import FedVC
from hetbench.train.algorithms.heteroswitch import HeteroSwitch
from hetbench.train.algorithms.qfedavg import QFedAvg
from hetbench.train.algorithms.scaffold import Scaffold

ALGORITHMS: Registry[type[Algorithm]] = Registry(
    "algorithm",
    {cls.name: cls for cls in (FedAvg, FedAvgM, FedProx, Scaffold, QFedAvg, FedIR, FedVC, HeteroSwitch, DapperFL,
                               Central)},
    option="--algo",
)
"""The algorithms by their ``--algo`` name, in the order ``hetbench train --help`` lists them."""


HYPER_RANGES: dict[str, tuple[float, float, bool]] = {  # name: (low, high, high included); low included
    "server_momentum": (0.0, 1.0, False), "mu": (0.0, math.inf, False), "q": (0.0, math.inf, False),
    "ema_alpha": (0.0, 1.0, True), "wb_degree": (0.0, 1.0, False), "gamma_degree": (0.0, 1.0, False),
    "alpha0": (0.0, 1.0, True), "alpha_min": (0.0, 1.0, True), "fusion_eps": (0.0, 1.0, True),
    "dar_gamma": (0.0, math.inf, False),
}


def check_hyper_parameters(params: dict) -> None:
    """Refuse hyper-parameters outside the range their equation allows (messages name the CLI flag)."""
    for key, v in params.items():
        if v is None:
            continue
        flag = "--" + key.replace("_", "-")
        if key in ("server_lr", "vc_size"):
            if not (math.isfinite(v) and v > 0):
                raise HetbenchError(f"{flag} must be a positive number (got {v})")
        elif key == "pruning_ratios":
            if not v or any(not 0.0 <= r < 1.0 for r in v):
                raise HetbenchError(f"{flag} needs ratios in [0, 1) (got {v})")
        elif key in HYPER_RANGES:
            low, high, closed = HYPER_RANGES[key]
            if not (math.isfinite(v) and v >= low and (v <= high if closed else v < high)):
                raise HetbenchError(f"{flag} must be in [{low:g}, {high:g}{']' if closed else ')'} (got {v})")


def make_algorithm(name: str, **params) -> Algorithm:
    """The algorithm ``name`` (case and surrounding spaces ignored) with the given hyper-parameters.

    Parameters
    ----------
    name : str
        One of :data:`ALGORITHMS`; any other raises :class:`~hetbench.registry.UnknownNameError` listing them.
    **params
        Hyper-parameters (None: the paper's default). Every given value is range-checked (messages name the
        ``hetbench train`` flag), then those the algorithm does not use are ignored.
    """
    check_hyper_parameters(params)
    cls = ALGORITHMS[name.strip().lower()]
    return cls(**{k: v for k, v in params.items() if k in cls.defaults})


__all__ = [
    "ALGORITHMS", "Algorithm", "ClientUpdate", "RunState", "TrainConfig", "check_hyper_parameters", "make_algorithm",
]
