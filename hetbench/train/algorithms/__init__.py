"""FL algorithms, one module each; ``ALGORITHMS`` maps the ``--algo`` names to their classes."""

from __future__ import annotations

from hetbench.errors import HetbenchError
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

ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls
    for cls in (FedAvg, FedAvgM, FedProx, Scaffold, QFedAvg, FedIR, FedVC, HeteroSwitch, DapperFL, Central)
}


def make_algorithm(name: str, **params) -> Algorithm:
    """The algorithm ``name`` with the given hyper-parameters (None = the paper's default); parameters
    the algorithm does not use are ignored."""
    key = name.strip().lower()
    if key not in ALGORITHMS:
        raise HetbenchError(f"unknown algorithm '{name}'; choose from {', '.join(ALGORITHMS)}")
    cls = ALGORITHMS[key]
    return cls(**{k: v for k, v in params.items() if k in cls.defaults})


__all__ = ["ALGORITHMS", "Algorithm", "ClientUpdate", "RunState", "TrainConfig", "make_algorithm"]
