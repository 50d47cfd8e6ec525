"""The results document of one run (format: ``docs/output-contract.md``), from the run's :class:`History`.

:class:`History` is everything a run has measured so far (evaluation curves per metric and per group,
training loss per round, the last evaluation's per-row correctness); the simulation appends to it each
round, a checkpoint saves it, and :func:`results_document` turns it into the JSON document at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetbench import __version__
from hetbench.train.results import RESULT_KIND, SCHEMA_VERSION

#: the metrics every evaluation records, in the order of the curves
EVAL_METRICS = ("accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss")


def _json_value(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_json_value(x) for x in v]
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


def rounds_to_target(rounds: list[int], accuracy: list[float], target: float | None) -> int | None:
    """First evaluated round whose accuracy reaches ``target`` (percent), else None.

    Examples
    --------
    >>> rounds_to_target([1, 2, 3], [40.0, 71.5, 80.0], 70.0)
    2
    >>> rounds_to_target([1, 2], [10.0, 20.0], 50.0) is None
    True
    """
    if target is None:
        return None
    for r, a in zip(rounds, accuracy):
        if a >= target:
            return int(r)
    return None


@dataclass
class History:
    """What a run has measured so far.

    ``curves`` holds ``round`` and one list per :data:`EVAL_METRICS` entry (one value per evaluation);
    ``group_curves`` one accuracy list per test group; ``train_round`` / ``train_loss`` one value per
    round; ``last_correct`` / ``last_summary`` the latest evaluation (per test row, and its summary).
    """

    group_names: list[str]
    curves: dict[str, list] = field(default_factory=dict)
    group_curves: dict[str, list] = field(default_factory=dict)
    train_round: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    last_correct: np.ndarray | None = None
    last_summary: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        for key in ("round", *EVAL_METRICS):
            self.curves.setdefault(key, [])
        for g in self.group_names:
            self.group_curves.setdefault(g, [])

    def add_train(self, round_index: int, loss: float) -> None:
        self.train_round.append(int(round_index))
        self.train_loss.append(round(float(loss), 6))

    def add_eval(self, round_index: int, summary: dict[str, Any], groups: dict[str, dict], correct: np.ndarray) -> None:
        self.curves["round"].append(int(round_index))
        for key in EVAL_METRICS:
            self.curves[key].append(summary[key])
        for name, g in groups.items():
            self.group_curves[name].append(g["accuracy"])
        self.last_correct = correct
        self.last_summary = dict(summary)


def results_document(
    *,
    data,
    algorithm,
    config,
    model_name: str,
    model_info: dict[str, Any],
    history: History,
    groups: dict[str, dict],
    log: dict[str, list],
    clients: dict[str, list] | None,
    central_accuracy: float | None,
    timing: dict[str, Any],
) -> dict[str, Any]:
    """The results document of a finished run.

    Parameters
    ----------
    data : FederatedData
        The split the run trained on (name, fingerprint, sizes, groups).
    algorithm : Algorithm
        The algorithm (name, params, citation; ``client_footprints`` / ``achieved`` where it has them).
    config : TrainConfig
        The run's options; ``workers`` is left out (results do not depend on it).
    model_name, model_info : str, dict
        The model and its ``{"parameters", "macs", "norm"}``.
    history : History
        The run's curves; its last evaluation gives ``final``.
    groups : dict
        ``{group: {accuracy, num_test}}`` of the last evaluation.
    log : dict
        Per-round algorithm diagnostics (``curves.algorithm``).
    clients : dict, optional
        Per-client model footprints (DapperFL's pruned models); None: every client runs the full model.
    central_accuracy : float, optional
        The centralised run's final accuracy: gives ``relative_accuracy`` and the default target.
    timing : dict
        Wall-clock figures (the one block that differs between identical runs).
    """
    summary = history.last_summary or {}
    target = config.target_accuracy
    if target is None and central_accuracy is not None and algorithm.name != "central":
        target = round(0.9 * central_accuracy, 4)
    final = dict(summary)
    final["relative_accuracy"] = (
        1.0 if algorithm.name == "central"
        else round(summary["accuracy"] / central_accuracy, 6) if central_accuracy else None
    )
    final["target_accuracy"] = target
    final["rounds_to_target"] = rounds_to_target(history.curves["round"], history.curves["accuracy"], target)
    extra = dict(log)
    if hasattr(algorithm, "achieved"):
        extra["achieved_pruning_ratio"] = {str(k): round(v, 6) for k, v in sorted(algorithm.achieved.items())}
    return {
        "kind": RESULT_KIND,
        "schema_version": SCHEMA_VERSION,
        "hetbench_version": __version__,
        "split": {
            "name": data.name,
            "path": data.path,
            "fingerprint": data.fingerprint,
            "num_clients": data.num_clients,
            "num_train": int(data.num_train),
            "num_test": int(data.num_test),
            "num_classes": data.num_classes,
            "image_size": data.image_size,
            "group_by": data.group_by,
            "groups": list(data.group_names),
        },
        "algorithm": {
            "name": algorithm.name,
            "params": {k: _json_value(v) for k, v in sorted(algorithm.params.items())},
            "citation": algorithm.citation,
        },
        "config": {**{k: _json_value(v) for k, v in config.result_options().items()}, "model": model_name},
        "model": {"name": model_name, **model_info},
        "curves": {**history.curves, "group_accuracy": history.group_curves, "train_round": history.train_round,
                   "train_loss": history.train_loss, **({"algorithm": extra} if extra else {})},
        "final": final,
        "groups": groups,
        "clients": clients or {"parameters": None, "macs": None},
        "timing": timing,
    }


def elapsed(t0: float) -> float:
    return round(time.perf_counter() - t0, 3)
