"""Your own algorithm without a fork: the checks a plugin class passes, and ``MODULE:CLASS`` specs.

An algorithm is a subclass of :class:`~hetbench.train.algorithms.base.Algorithm` (usually of
:class:`~hetbench.train.algorithms.fedavg.FedAvg`) that overrides the hooks its paper changes and declares its
``name``, ``citation`` and ``hyper``. It joins :data:`hetbench.train.algorithms.ALGORITHMS` in one of three
ways, each checked here (:func:`check_algorithm_class`) before it is used:

- an entry point of the group ``hetbench.algorithms`` in the plugin package's metadata (``[project.entry-points
  ."hetbench.algorithms"] myalgo = "mypkg.algo:MyAlgo"``): every command sees it once the package is installed;
- ``--algo mypkg.algo:MyAlgo`` (Python: ``sweep(algorithms="mypkg.algo:MyAlgo")``): imported for that run
  (:func:`load_algorithm`);
- ``ALGORITHMS.register(MyAlgo.name, MyAlgo)`` in a program.

A plugin's hyper-parameters become ``hetbench train`` flags like the built-in ones; a name that is one of the
trainer's own settings (:data:`RESERVED`), or that another algorithm declares with another kind of value,
is refused, since one flag cannot mean two things.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from typing import Any, Mapping

from hetbench.errors import HetbenchError
from hetbench.train.algorithms.base import Algorithm
from hetbench.train.algorithms.config import TrainConfig
from hetbench.train.algorithms.hyper import Hyper

#: names a hyper-parameter may not take: the trainer's settings (TrainConfig's fields) and the sweep's own
RESERVED: frozenset[str] = frozenset({f.name for f in dataclasses.fields(TrainConfig)} | {
    "split", "algo", "algorithms", "seeds", "threads", "out", "overwrite", "quiet", "protocol", "skip_existing",
    "resume", "engine", "flower_actors", "log", "hyper", "config", "help"})
#: the names :func:`load_algorithm` registered in this process (a Flower ClientApp, in another, cannot see them)
LOADED_HERE: set[str] = set()
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def _kind(h: Hyper) -> tuple[bool, bool, tuple[str, ...] | None]:
    return h.sequence, h.integer, h.choices


def check_algorithm_class(name: str, cls: Any, registry: Mapping[str, Any]) -> None:
    """Refuse a plugin that is not an algorithm class, whose ``name`` differs from the one it registers under,
    or whose hyper-parameters clash with the trainer's settings or another algorithm's same-named option.

    Parameters
    ----------
    name : str
        The name it registers under (an entry point's name, or ``cls.name``).
    cls : Any
        The plugin.
    registry : Mapping[str, type]
        The algorithms registered so far (:data:`hetbench.train.algorithms.ALGORITHMS`).

    Raises
    ------
    HetbenchError
        Why it is refused, in one line.

    Examples
    --------
    >>> from hetbench.train.algorithms import ALGORITHMS
    >>> from hetbench.train.algorithms.fedavg import FedAvg
    >>> from hetbench.train.algorithms.hyper import Hyper
    >>> from hetbench.train.algorithms.plugins import check_algorithm_class
    >>> class Mine(FedAvg):
    ...     name = "mine"
    ...     hyper = {"lr": Hyper(0.1, "A step.")}
    >>> check_algorithm_class("mine", Mine, ALGORITHMS)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: algorithm plugin 'mine' declares the hyper-parameter 'lr', which is one of the trainer's own settings; rename it
    """
    if not isinstance(cls, type) or not issubclass(cls, Algorithm) or cls is Algorithm:
        raise HetbenchError(f"algorithm plugin '{name}' is {cls!r}, not a subclass of "
                            "hetbench.train.algorithms.base.Algorithm")
    own = cls.__dict__.get("name")
    if not isinstance(own, str) or not _NAME.fullmatch(own):
        raise HetbenchError(f"algorithm plugin {cls.__module__}.{cls.__qualname__} needs its own 'name': lower-case "
                            f"letters, digits and _ (got {own!r})")
    if own != name:
        raise HetbenchError(f"algorithm plugin {cls.__module__}.{cls.__qualname__} is named '{own}' but registers as "
                            f"'{name}'; use one name")
    others = {k: h for n, impl in registry.items() if n != name for k, h in impl.hyper.items()}
    for key, h in cls.hyper.items():
        if not isinstance(h, Hyper):
            raise HetbenchError(f"algorithm plugin '{name}' declares '{key}' as {h!r}, not a Hyper")
        if key in RESERVED or not _NAME.fullmatch(key):
            raise HetbenchError(f"algorithm plugin '{name}' declares the hyper-parameter '{key}', which is one of the "
                                "trainer's own settings; rename it" if key in RESERVED else
                                f"algorithm plugin '{name}' declares the hyper-parameter '{key}': use lower-case "
                                "letters, digits and _")
        if key in others and _kind(others[key]) != _kind(h):
            raise HetbenchError(f"algorithm plugin '{name}' declares '{key}' with another kind of value than the "
                                "algorithms that already take it; rename it")


def load_algorithm(spec: str, registry: Any) -> str:
    """Import the algorithm class of ``MODULE:CLASS``, register it (checked) and return its name.

    Parameters
    ----------
    spec : str
        ``package.module:ClassName``.
    registry : Registry
        Where it is registered (:data:`hetbench.train.algorithms.ALGORITHMS`; use
        :func:`hetbench.train.algorithms.load_algorithm`).

    Returns
    -------
    str
        The class's ``name``, as :data:`~hetbench.train.algorithms.ALGORITHMS` now holds it.

    Raises
    ------
    HetbenchError
        A malformed spec, a module that does not import, a missing class, or a class the checks refuse.

    Examples
    --------
    >>> from hetbench.train.algorithms import ALGORITHMS
    >>> from hetbench.train.algorithms.plugins import load_algorithm
    >>> load_algorithm("hetbench.train.algorithms.fedprox:FedProx", ALGORITHMS)  # a built-in is itself
    'fedprox'
    >>> load_algorithm("no_such_module:Algo", ALGORITHMS)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: algorithm 'no_such_module:Algo': the module no_such_module does not import (ModuleNotFoundError: No module named 'no_such_module')
    """
    if not _SPEC.fullmatch(spec.strip()):
        raise HetbenchError(f"algorithm '{spec}': a plugin is named as package.module:ClassName")
    module_name, _, attr = spec.strip().partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the plugin's own import error, whatever it is
        raise HetbenchError(f"algorithm '{spec}': the module {module_name} does not import "
                            f"({type(exc).__name__}: {exc})") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise HetbenchError(f"algorithm '{spec}': the module {module_name} has no {attr}")
    name = getattr(cls, "name", None) if isinstance(cls, type) else None
    if isinstance(name, str) and registry.get(name) is cls:
        return name
    registry.register(name if isinstance(name, str) else attr, cls)
    LOADED_HERE.add(cls.name)
    return cls.name


__all__ = ["LOADED_HERE", "RESERVED", "check_algorithm_class", "load_algorithm"]
