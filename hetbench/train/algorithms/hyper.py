"""Hyper-parameter declarations: each algorithm module states its options, their defaults, the paper (and
section) each default comes from, and the range its equation allows.

:class:`Hyper` is one option; an algorithm's ``hyper`` maps option names to them. The ``hetbench train``
flags, the range checks and the "this algorithm takes no such option" refusal are all derived from these
declarations, so an option exists in exactly one place: the module of the algorithm that takes it.

Examples
--------
>>> beta = Hyper(0.9, "Server momentum beta.", "Hsu et al. 2019, sec. 3", low=0.0, high=1.0, high_open=True)
>>> beta.check("server_momentum", 0.5)
0.5
>>> beta.check("server_momentum", 1.0)
Traceback (most recent call last):
...
hetbench.errors.HetbenchError: server_momentum must be in [0, 1) (got 1.0)
>>> beta.flag("server_momentum")
'--server-momentum'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hetbench.errors import HetbenchError


@dataclass(frozen=True)
class Hyper:
    """One hyper-parameter of an algorithm.

    Parameters
    ----------
    default : float, int, str or tuple of float
        The paper's value (None: derived from the others when the run is made; the help says how).
    help : str
        One sentence for ``hetbench train --help``.
    source : str
        Where the default comes from (paper, section, table or equation).
    low, high : float, optional
        The range the equation allows (None: unbounded on that side).
    low_open, high_open : bool
        Whether ``low`` / ``high`` themselves are excluded.
    integer : bool
        The value is a whole number (``--vc-size``).
    choices : tuple of str, optional
        The value is one of these words (``--dar-form``).
    sequence : bool
        The value is a comma list of numbers, each in the range (``--pruning-ratios``).
    """

    default: Any
    help: str
    source: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    choices: tuple[str, ...] | None = None
    sequence: bool = False

    @staticmethod
    def flag(name: str) -> str:
        """The ``hetbench train`` flag of option ``name``."""
        return "--" + name.replace("_", "-")

    def describe_range(self) -> str:
        """The allowed range as an interval (``[0, 1)``, ``(0, inf)``)."""
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return (f"{'(' if self.low_open or self.low is None else '['}{low}, {high}"
                f"{')' if self.high_open or self.high is None else ']'}")

    def _in_range(self, v: float) -> bool:
        if not math.isfinite(v):
            return False
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            return False
        return self.high is None or (v < self.high if self.high_open else v <= self.high)

    def check(self, name: str, value: Any) -> Any:
        """``value`` if the equation allows it, else :class:`HetbenchError` naming the parameter (exit 2; the
        command line names its flag)."""
        flag = f"`{name}`"
        if self.choices is not None:
            if value not in self.choices:
                raise HetbenchError(f"{flag} must be one of {', '.join(self.choices)} (got {value!r})")
            return value
        if self.sequence:
            values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
            if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not self._in_range(v)
                                 for v in values):
                raise HetbenchError(f"{flag} needs numbers in {self.describe_range()} (got {value})")
            return tuple(float(v) for v in values)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise HetbenchError(f"{flag} must be a number (got {value!r})")
        if self.integer and int(value) != value:
            raise HetbenchError(f"{flag} must be a whole number (got {value})")
        if not self._in_range(float(value)):
            if self.low == 0 and self.low_open and self.high is None:
                raise HetbenchError(f"{flag} must be a positive number (got {value})")
            raise HetbenchError(f"{flag} must be in {self.describe_range()} (got {value})")
        return int(value) if self.integer else value


#: the server learning rate gamma of Hsu et al. 2020, Algorithm 1 (1: McMahan et al.'s plain average)
SERVER_LR = Hyper(1.0, "Server learning rate (1: the plain weighted average).",
                  "Hsu et al. 2020, Algorithm 1; McMahan et al. 2017, Algorithm 1", low=0.0, low_open=True)
