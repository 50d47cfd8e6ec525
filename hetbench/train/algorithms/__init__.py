"""FL algorithms, one module each; :data:`ALGORITHMS` maps the ``--algo`` names to their classes and
:func:`make_algorithm` makes one, with its hyper-parameters range-checked.

Every algorithm follows Hsu et al. 2020, Algorithm 1 (SelectClients, ClientUpdate, AggregateClient) through
the hooks of :class:`~hetbench.train.algorithms.base.Algorithm`; a module overrides the parts its paper
changes.

Examples
--------
>>> from hetbench.train.algorithms import ALGORITHMS, make_algorithm
>>> ALGORITHMS.names()
('fedavg', 'fedavgm', 'fedprox', 'scaffold', 'qfedavg', 'fedir', 'fedvc', 'heteroswitch', 'dapperfl', 'fedbn',
 'fedadam', 'fedyogi', 'fedadagrad', 'central')
>>> make_algorithm("FedProx", mu=0.01).params
{'server_lr': 1.0, 'mu': 0.01}
>>> make_algorithm("FedProx", q=0.5)  # q is q-FedAvg's option
Traceback (most recent call last):
...
hetbench.errors.HetbenchError: fedprox takes no option q (options: server_lr, mu)
>>> make_algorithm("fedmagic")
Traceback (most recent call last):
...
hetbench.registry.UnknownNameError: unknown algorithm 'fedmagic' for algo; choose one of: fedavg, fedavgm, ...
"""

from __future__ import annotations

from hetbench.errors import HetbenchError
from hetbench.registry import Registry
from hetbench.train.algorithms.base import Algorithm, ClientUpdate, RunState
from hetbench.train.algorithms.config import DEFAULT_NORM, TrainConfig
from hetbench.train.algorithms.central import Central
from hetbench.train.algorithms.dapperfl import DapperFL
from hetbench.train.algorithms.fedavg import FedAvg, FedAvgM
from hetbench.train.algorithms.fedbn import FedBN
from hetbench.train.algorithms.fedir import FedIR
from hetbench.train.algorithms.fedopt import FedAdagrad, FedAdam, FedYogi
from hetbench.train.algorithms.fedprox import FedProx
from hetbench.train.algorithms.fedvc import FedVC
from hetbench.train.algorithms.heteroswitch import HeteroSwitch
from hetbench.train.algorithms.hyper import Hyper
from hetbench.train.algorithms.plugins import check_algorithm_class
from hetbench.train.algorithms.plugins import load_algorithm as _load_algorithm
from hetbench.train.algorithms.qfedavg import QFedAvg
from hetbench.train.algorithms.scaffold import Scaffold

def _check_plugin(name: str, cls: object) -> None:
    check_algorithm_class(name, cls, ALGORITHMS)


ALGORITHMS: Registry[type[Algorithm]] = Registry(
    "algorithm",
    {cls.name: cls for cls in (FedAvg, FedAvgM, FedProx, Scaffold, QFedAvg, FedIR, FedVC, HeteroSwitch, DapperFL,
                               FedBN, FedAdam, FedYogi, FedAdagrad, Central)},
    option="`algo`", plugins="hetbench.algorithms", validate=_check_plugin,
)
"""The algorithms by their ``--algo`` name, in the order ``hetbench train --help`` lists them: the built-ins,
then the plugins of the entry-point group ``hetbench.algorithms`` (:mod:`hetbench.train.algorithms.plugins`)."""


def hyper_options() -> dict[str, list[tuple[str, Hyper]]]:
    """Every hyper-parameter name any algorithm declares, with the algorithms that take it and their
    declarations, in registry order (what ``hetbench train`` makes its flags from).

    Examples
    --------
    >>> [name for name, _ in hyper_options()["server_momentum"]]
    ['fedavgm', 'fedir', 'fedvc']
    """
    out: dict[str, list[tuple[str, Hyper]]] = {}
    for name in ALGORITHMS.names():
        for key, spec in ALGORITHMS[name].hyper.items():
            out.setdefault(key, []).append((name, spec))
    return out


def options_for(name: str, params: dict) -> dict:
    """The options of ``params`` that algorithm ``name`` takes (the others are other algorithms' options
    of the same sweep).

    Examples
    --------
    >>> options_for("fedprox", {"mu": 0.01, "q": 0.5, "server_lr": None})
    {'mu': 0.01, 'server_lr': None}
    """
    cls = ALGORITHMS[name.strip().lower()]
    return {k: v for k, v in params.items() if k in cls.hyper}


def check_hyper_parameters(names: list[str], params: dict) -> None:
    """Refuse options that none of the algorithms ``names`` takes, and values out of the range their
    equation allows (messages name the CLI flag; exit 2).

    Examples
    --------
    >>> check_hyper_parameters(["fedavg", "fedprox"], {"mu": 0.01})
    >>> check_hyper_parameters(["fedavg", "fedprox"], {"tau": 0.01})
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: tau is not an option of fedavg or fedprox
    """
    for key, value in params.items():
        if value is None:
            continue
        takers = [n for n in names if key in ALGORITHMS[n].hyper]
        if not takers:
            raise HetbenchError(f"`{key}` is not an option of {' or '.join(names)}")
        for n in takers:
            ALGORITHMS[n].hyper[key].check(key, value)


def check_models(names: list[str], model_name: str, norm: str | None) -> None:
    """Refuse, before anything is trained or written, a model that an algorithm of ``names`` cannot run on:
    each algorithm's ``check_model`` says (FedBN needs normalisation layers, which ``digits-cnn``, ``lenet``
    and every model with ``--norm none`` lack; one line, exit 2).
    ``model_name`` is the resolved model (``TrainConfig.model_for(image_size)``, not ``auto``); ``norm`` None
    is each algorithm's own default (``default_norm``, else ``group``).

    Examples
    --------
    >>> check_models(["fedavg"], "lenet", "group")
    >>> check_models(["fedavg", "fedbn"], "lenet", "group")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: fedbn keeps each client's normalisation layers, but the model lenet has none; use model resnet10, resnet18 or mobilenetv3-small with norm batch or group
    """
    for name in names:
        algorithm = ALGORITHMS[name.strip().lower()]
        algorithm.check_model(model_name, norm if norm is not None else algorithm.default_norm or DEFAULT_NORM)


def load_algorithm(spec: str) -> str:
    """Import the algorithm class of ``package.module:ClassName``, register it in :data:`ALGORITHMS` (checked:
    :mod:`hetbench.train.algorithms.plugins`) and return its name.

    Examples
    --------
    >>> load_algorithm("hetbench.train.algorithms.scaffold:Scaffold")
    'scaffold'
    """
    return _load_algorithm(spec, ALGORITHMS)


def make_algorithm(name: str, **params) -> Algorithm:
    """The algorithm ``name`` (case and surrounding spaces ignored) with the given hyper-parameters.

    Parameters
    ----------
    name : str
        One of :data:`ALGORITHMS`; any other raises :class:`~hetbench.registry.UnknownNameError` listing them.
    **params
        Hyper-parameters (None: the paper's default). Each is range-checked against the algorithm's
        declaration; an option the algorithm does not take is refused (messages name the ``hetbench train``
        flag, exit 2). A sweep of several algorithms passes each one its own (:func:`options_for`).
    """
    if ":" in name:  # package.module:Class, a plugin imported for this run
        name = load_algorithm(name)
    cls = ALGORITHMS[name.strip().lower()]
    return cls(**params)


__all__ = [
    "ALGORITHMS", "Algorithm", "ClientUpdate", "Hyper", "RunState", "TrainConfig", "check_hyper_parameters",
    "check_models", "hyper_options", "load_algorithm", "make_algorithm", "options_for",
]
