"""What every claim runner is: declared settings and measurements, and ``run(settings, context)``.

A runner measures; it never decides. It turns a claim's settings (``quick`` or ``full``, from the claim's
yaml) into :class:`~hetbench.reproduce.criteria.Measurement` objects by calling the library (builders,
partitioners, :func:`hetbench.sweep.sweep`), and says how to plot each one. The verdicts come from the
claim's declared criteria (:mod:`hetbench.reproduce.criteria`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from hetbench.errors import HetbenchError, marked
from hetbench.reproduce.criteria import Measurement

if TYPE_CHECKING:
    from hetbench.reproduce.cost import Workload


@dataclass
class Context:
    """Where and how a runner works.

    ``work`` is a scratch folder (splits, caches) removed when the command ends; ``runs`` is where the
    runner's sweeps write their results files (the training results each number comes from). ``seeds`` are
    the seeds of this run (``--seeds`` or the mode's default); ``metadata`` is ``--metadata``; ``device`` is
    ``--device``; ``store`` is the run store every sweep of a runner passes on (``sweep(..., store=ctx.store)``:
    :mod:`hetbench.reproduce.store`), None outside ``reproduce``.
    """

    work: Path
    runs: Path
    seeds: list[int]
    mode: str
    quiet: bool = True
    device: str = "auto"
    metadata: str | None = None
    threads: int | None = None
    store: Any = None

    def note(self, text: str) -> None:
        """One indented progress line on stderr (nothing when ``quiet``)."""
        if not self.quiet:
            print(f"  {text}", file=sys.stderr, flush=True)


def last_k_accuracy(doc: Mapping[str, Any]) -> float:
    """The trainer's stable metric of a results document: the mean test accuracy (%) of the last k
    evaluations (``final.last_k.accuracy``).

    Examples
    --------
    >>> from hetbench.reproduce.runners.base import last_k_accuracy
    >>> last_k_accuracy({"final": {"last_k": {"k": 3, "accuracy": 71.5}}})
    71.5
    """
    return float(doc["final"]["last_k"]["accuracy"])


@dataclass
class Axes:
    """How a measurement is plotted: axis labels and log scales."""

    xlabel: str = ""
    ylabel: str = ""
    log_x: bool = False
    log_y: bool = False
    reverse_x: bool = False  # the grid runs from high to low (alpha 100 -> 0.05)
    scale: float = 1.0  # values are divided by this before plotting (1e6: millions)


@dataclass
class RunOutput:
    """A runner's measurements (by measurement name), how to plot them, and facts about the protocol as
    run (models, rounds, the number of test examples each number rests on, ...)."""

    measurements: dict[str, Measurement]
    axes: dict[str, Axes] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


#: a setting's kind -> (python types accepted, description for messages)
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "a positive integer"),
    "seed": ((int,), "a non-negative integer"),
    "fraction": ((int, float), "in (0, 1)"),
    "number": ((int, float), "a finite number"),
    "str": ((str,), "a string"),
    "numbers": ((list,), "a non-empty list of positive numbers"),
    "ints": ((list,), "a non-empty list of non-negative integers"),
    "strs": ((list,), "a non-empty list of distinct strings"),
    "mapping": ((dict,), "a mapping"),
}


def check_schema(settings: dict[str, Any], schema: Mapping[str, tuple[str, bool]], where: str) -> dict[str, Any]:
    """Check ``settings`` against ``schema`` (name -> (kind, required)); returns them.

    Examples
    --------
    >>> from hetbench.reproduce.runners.base import check_schema
    >>> check_schema({"rounds": 5}, {"rounds": ("int", True)}, "x")
    {'rounds': 5}
    >>> check_schema({"rounds": 0}, {"rounds": ("int", True)}, "x.yaml: settings.quick")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: settings.quick: 'rounds' must be a positive integer (got 0)
    """
    for key in settings:
        if key not in schema:
            raise HetbenchError(f"{where}: unknown setting '{key}' (settings: {', '.join(schema)})")
    for key, (kind, required) in schema.items():
        if key not in settings:
            if required:
                raise HetbenchError(f"{where}: missing setting '{key}'")
            continue
        v = settings[key]
        types, text = _KINDS[kind]
        ok = isinstance(v, types) and not isinstance(v, bool)
        if ok and kind == "int":
            ok = v > 0
        elif ok and kind == "seed":
            ok = v >= 0
        elif ok and kind == "fraction":
            ok = 0 < v < 1
        elif ok and kind == "number":
            ok = math.isfinite(v)
        elif ok and kind == "numbers":
            ok = bool(v) and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
                                 for x in v)
        elif ok and kind == "ints":
            ok = bool(v) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v)
        elif ok and kind == "strs":
            ok = bool(v) and all(isinstance(x, str) for x in v) and len(set(v)) == len(v)
        if not ok:
            raise HetbenchError(f"{where}: '{key}' must be {text} (got {v!r})")
    return settings


def test_rows_per_group(folder: Path, column: str = "device") -> dict[str, int]:
    """Test rows per value of ``column`` in a built split (its manifest's test files), sorted by value.

    Parameters
    ----------
    folder : Path
        A split folder written by a hetbench command (``hetbench.json`` lists its test files).
    column : str
        The group column (``device``, ``domain``, ...).

    Examples
    --------
    >>> from hetbench.reproduce.runners.base import test_rows_per_group
    >>> from hetbench.builders.iso_isp import build_iso_isp
    >>> folder, _ = build_iso_isp("rows_example", stages="wb", size=16, crops_per_photo=2, crop_size=64, quiet=True)
    >>> test_rows_per_group(folder)
    {'baseline': 3, 'wb=none': 3, 'wb=white-patch': 3}
    """
    import numpy as np

    from hetbench.contract import read_built_columns

    values, counts = np.unique(read_built_columns(folder, (column,), splits=("test",))["test"][column],
                               return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def require_test_rows(folder: Path, groups: list[str], minimum: int, column: str = "device",
                      named: str = "its devices") -> dict[str, int]:
    """Test rows per group of a built split (:func:`test_rows_per_group`), checked before any training:
    the groups must be exactly ``groups`` and each must have at least ``minimum`` test rows.

    Raises
    ------
    HetbenchError
        Naming the groups below ``minimum`` and their counts (the claim is then ``not run``), or the groups
        that differ from ``groups`` (``named`` says what those are, e.g. "the Table 3 variants").
    """
    test_rows = test_rows_per_group(folder, column)
    small = {d: n for d, n in test_rows.items() if n < minimum}
    if small:
        counts = ", ".join(f"{d} {n}" for d, n in sorted(small.items()))
        raise HetbenchError(f"the split's test sets are too small: {counts} test images (min_test_examples {minimum}); "
                            "raise crops_per_photo")
    if sorted(test_rows) != sorted(groups):
        raise HetbenchError(f"the split's test {column}s {sorted(test_rows)} are not {named} {sorted(groups)}")
    return test_rows


def check_render_settings(settings: Mapping[str, Any], where: str) -> None:
    """The render settings of a claim that builds from the embedded photographs: ``size`` (the builders'
    own output-size check) and ``crop_size`` (at least 32 pixels, as ``--crop-size``)."""
    from hetbench.builders.captures import check_size

    try:
        check_size(settings["size"])
    except HetbenchError as exc:
        raise HetbenchError(f"{where}: 'size': {marked(exc)}") from None
    if settings["crop_size"] < 32:
        raise HetbenchError(f"{where}: 'crop_size' must be at least 32 pixels (got {settings['crop_size']})")


class Runner(ABC):
    """A claim runner: ``measures`` (name -> what it is), ``schema`` (its settings), :meth:`run`."""

    measures: dict[str, str] = {}
    schema: dict[str, tuple[str, bool]] = {}
    trains: bool = False  # whether it trains models (then --device is checked before anything runs)
    #: whether its measurements vary with the seed (training, K-means, sampling): then a claim needs at
    #: least :data:`hetbench.reproduce.claims.MIN_SEEDS` seeds for its t intervals
    seeded: bool = False
    #: claims whose stored runs this runner's claim may take when it asks for a run of the same identity
    #: (:meth:`hetbench.reproduce.store.RunStore.begin_claim`)
    borrows_runs_from: tuple[str, ...] = ()

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        """Validate one mode's settings (``where`` names them in errors); returns them."""
        return check_schema(settings, self.schema, where)

    def workloads(self, settings: dict[str, Any], seeds: list[int]) -> list["Workload"]:
        """The model training this claim does with ``settings`` and ``seeds``, for the cost estimate of
        ``hetbench reproduce --dry-run`` (:mod:`hetbench.reproduce.cost`); none for a runner that trains
        nothing."""
        return []

    @abstractmethod
    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        """Build, train or measure what the claim needs; the measurements by name."""
