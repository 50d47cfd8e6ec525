"""What a Flower run of a hetbench algorithm is: the split, the algorithm and its options, as one flat
mapping of Flower config values (``bool | int | float | str``).

The same mapping is the ``[tool.flwr.app.config]`` table of a generated app project (deployment), the run
description the simulation hands its ServerApp, and the ``job`` ConfigRecord every train message carries to
the ClientApps, so every side rebuilds the same data view, model and algorithm from it.

Keys: ``split``, ``algo``, every non-None :class:`~hetbench.train.algorithms.TrainConfig` option with ``-``
for ``_`` (``clients-per-round``), every given hyper-parameter as ``hyper-<name>`` (``hyper-mu``), and
``results`` (where a deployed ServerApp writes the results JSON). Group lists and DapperFL's pruning
ratios travel as comma lists (a hyper-parameter declared as a sequence).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from hetbench.errors import HetbenchError

INSTALL = "pip install 'hetbench[flower]'"
_LISTS = ("train_groups", "test_groups")


def require_flower(simulation: bool = False) -> None:
    """Refuse to go on when Flower is not installed (one line naming the install command, exit 2).

    Parameters
    ----------
    simulation : bool
        Also require Flower's Simulation Runtime backend (Ray, ``flwr[simulation]``, part of the extra).

    Examples
    --------
    >>> require_flower(simulation=True)  # installed here (make test installs the flower extra)
    """
    # before Ray is imported (it reads this then): no native stack dump when SIGTERM ends a run, one line instead
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    try:
        import flwr  # noqa: F401
        import flwr.simulation  # noqa: F401

        if simulation:
            import ray  # noqa: F401
    except ImportError as exc:
        raise HetbenchError(f"the Flower engine needs Flower{' and Ray' if simulation else ''}, which is not "
                            f"installed ({exc}); run: {INSTALL}") from None


@dataclass
class FlowerJob:
    """One hetbench run on Flower.

    Parameters
    ----------
    split : str
        Built split folder or hub id (every SuperNode and the ServerApp read it: a path they all see).
    algo : str
        Algorithm name (any of :data:`hetbench.train.algorithms.ALGORITHMS` but ``central``).
    options : dict
        :class:`~hetbench.train.algorithms.TrainConfig` options (None values left out).
    hyper : dict
        Algorithm hyper-parameters (None values left out).
    results : str
        Results JSON a deployed ServerApp writes ("" in simulation, where the sweep writes it).

    Examples
    --------
    >>> job = FlowerJob("splits/x", "fedprox", {"rounds": 2, "train_groups": ("a", "b")}, {"mu": 0.01})
    >>> flat = job.to_config()
    >>> flat
    {'split': 'splits/x', 'algo': 'fedprox', 'results': '', 'rounds': 2, 'train-groups': 'a,b', 'hyper-mu': 0.01}
    >>> FlowerJob.from_config(flat) == job
    True
    """

    split: str
    algo: str
    options: dict[str, Any] = field(default_factory=dict)
    hyper: dict[str, Any] = field(default_factory=dict)
    results: str = ""

    @classmethod
    def make(cls, split: str, algo: str, config: Any, hyper: Mapping[str, Any] | None = None,
             results: str = "") -> "FlowerJob":
        """The job of ``config`` (a TrainConfig: options that do not affect what is computed are left out)."""
        options = {k: v for k, v in config.as_dict().items()
                   if v is not None and k not in ("checkpoint_every", "cache_dir", "workers")}
        if config.cache_dir:
            options["cache_dir"] = config.cache_dir
        hyper = {k: v for k, v in (hyper or {}).items() if v is not None}
        return cls(str(split), algo, options, hyper, results)

    def to_config(self) -> dict[str, bool | int | float | str]:
        out: dict[str, Any] = {"split": self.split, "algo": self.algo, "results": self.results}
        for key, value in self.options.items():
            out[key.replace("_", "-")] = ",".join(value) if key in _LISTS else value
        for key, value in self.hyper.items():
            out[f"hyper-{key.replace('_', '-')}"] = (",".join(repr(float(v)) for v in value)
                                                    if isinstance(value, (list, tuple)) else value)
        return out

    @classmethod
    def from_config(cls, flat: Mapping[str, Any]) -> "FlowerJob":
        from hetbench.train.algorithms import TrainConfig, hyper_options

        sequences = {k for k, takers in hyper_options().items() if takers[0][1].sequence}
        fields = {f.name for f in dataclasses.fields(TrainConfig)}
        options: dict[str, Any] = {}
        hyper: dict[str, Any] = {}
        for key, value in flat.items():
            name = key.replace("-", "_")
            if key in ("split", "algo", "results", "session-run"):  # session-run: a job's place in a FlowerSession
                continue
            if name.startswith("hyper_"):
                name = name[len("hyper_"):]
                hyper[name] = tuple(float(v) for v in str(value).split(",")) if name in sequences else value
            elif name in fields:
                options[name] = tuple(s for s in str(value).split(",") if s) if name in _LISTS else value
            else:
                raise HetbenchError(f"unknown hetbench option '{key}' in the Flower run config")
        if "split" not in flat or "algo" not in flat:
            raise HetbenchError("the Flower run config needs 'split' and 'algo'")
        return cls(str(flat["split"]), str(flat["algo"]), options, hyper, str(flat.get("results", "")))

    def train_config(self, **runtime: Any):
        """The :class:`~hetbench.train.algorithms.TrainConfig` (with ``runtime`` options such as ``workers``)."""
        from hetbench.train.algorithms import TrainConfig

        # a ClientApp trains the one client of each message and the ServerApp none: never in lockstep
        return TrainConfig(**{**self.options, "client_exec": "sequential", **runtime})

    def algorithm(self):
        """A fresh algorithm; ``central`` is refused (it trains one model on all data: nothing to federate)."""
        from hetbench.train.algorithms import check_hyper_parameters, make_algorithm, options_for

        if self.algo.strip().lower() == "central":
            raise HetbenchError("Flower runs federated algorithms; 'central' trains one model on the union "
                                "of the clients' data: run it with hetbench train `engine` local")
        name = self.algo.strip().lower()
        check_hyper_parameters([name], self.hyper)  # an option this algorithm does not take: one line, exit 2
        return make_algorithm(name, **options_for(name, self.hyper))

    def data(self, quiet: bool = True):
        """The run's view of the split: loaded, then restricted to its train/test groups."""
        from hetbench.train.checks import check_labels
        from hetbench.train.data import load_federated
        from hetbench.train.groups import restrict_groups

        o = self.options
        data = load_federated(self.split, o.get("image_size"), o.get("group_by"), quiet=quiet,
                              cache_dir=o.get("cache_dir"))
        check_labels(data, self.split)  # a label outside the classes: one line, not an IndexError in a ClientApp
        if o.get("train_groups") or o.get("test_groups"):
            data = restrict_groups(data, o.get("train_groups"), o.get("test_groups"))
        return data
