"""The results document of one run (format: ``docs/output-contract.md``), from the run's :class:`History`.

:class:`History` is everything a run has measured so far (evaluation curves per metric and per group,
training loss per round, the last evaluation's per-row correctness); the simulation appends to it each
round, a checkpoint saves it, and :func:`results_document` turns it into the JSON document at the end.

Besides the last evaluation, the document's ``final`` gives every evaluated metric's best round
(``final.best``) and the mean of its last k evaluations (``final.last_k``), so that one bad last round
does not decide a comparison; with ``--train-groups`` it gives the trained-on and unseen accuracy and
the accuracy drop of every test group (:func:`hetbench.train.result_stats.group_protocol`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetbench import __version__
from hetbench.train.result_stats import curve_statistics, group_protocol
from hetbench.train.results import EVAL_METRICS, RESULT_KIND, SCHEMA_VERSION

__all__ = ["EVAL_METRICS", "History", "elapsed", "results_document", "rounds_to_target", "stable_final"]


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


def stable_final(history: History, groups: dict[str, dict], train_groups: Any, last_k: int) -> dict[str, Any]:
    """The ``final`` fields that do not hang on the last round alone: ``best`` and ``last_k``.

    Parameters
    ----------
    history : History
        The run's curves.
    groups : dict
        ``{group: {accuracy, num_test}}`` of the last evaluation (groups without test rows get nulls).
    train_groups : sequence of str or None
        ``config.train_groups``; when given, the trained-on / unseen accuracies and drops get statistics too.
    last_k : int
        ``config.last_k``: how many of the last evaluations ``last_k`` averages.

    Returns
    -------
    dict
        ``{"best": {metric: {"value", "round"}, "group_accuracy": {...}, ...}, "last_k": {"k", "rounds", metric: value, ...}}``
        (:func:`hetbench.train.result_stats.curve_statistics`).

    Examples
    --------
    >>> from hetbench.train.document import History, stable_final
    >>> h = History(["a"])
    >>> for r, acc in [(1, 40.0), (2, 58.0), (3, 18.0)]:
    ...     s = {"accuracy": acc, "client_accuracy": None, "worst_group_accuracy": acc,
    ...          "group_accuracy_variance": 0.0, "loss": 1.0}
    ...     h.add_eval(r, s, {"a": {"accuracy": acc, "num_test": 5}}, None)
    >>> out = stable_final(h, {"a": {"accuracy": 18.0, "num_test": 5}}, None, last_k=2)
    >>> out["best"]["accuracy"], out["last_k"]["accuracy"], out["last_k"]["group_accuracy"]
    ({'value': 58.0, 'round': 2}, 38.0, {'a': 38.0})
    """
    curves = {**history.curves, "group_accuracy": history.group_curves}
    return curve_statistics(curves, groups, train_groups, last_k)


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
    device: dict[str, Any] | None = None,
    engine: str | None = None,
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
    device : dict, optional
        Where the run ran (``hetbench.train.device.device_info``), written as ``device``; not part of ``timing``.
    engine : str, optional
        The engine that ran it when not the in-process one (``flower``), written as ``engine`` and as
        ``config.engine`` (so a leaderboard keeps its runs apart from the same configuration's local runs);
        None (the in-process engine, ``--engine local``): no ``engine`` key, readers take a missing one as
        ``local``.

    Returns
    -------
    dict
        The document: ``final`` holds the last evaluation, ``final.best`` and ``final.last_k``
        (:func:`stable_final`) and, when ``config.train_groups`` is set, ``trained_on_accuracy``,
        ``unseen_accuracy`` and ``mean_drop``; ``groups`` entries then carry ``trained_on`` and ``drop``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> from hetbench.train.algorithms.config import TrainConfig
    >>> from hetbench.train.document import History, results_document
    >>> h = History(["base", "dark"])
    >>> for r, (b, d) in enumerate([(60.0, 50.0), (80.0, 70.0), (90.0, 60.0)], 1):
    ...     s = {"accuracy": (b + d) / 2, "client_accuracy": None, "worst_group_accuracy": min(b, d),
    ...          "group_accuracy_variance": ((b - d) / 2) ** 2, "loss": 1.0 / r}
    ...     h.add_eval(r, s, {"base": {"accuracy": b}, "dark": {"accuracy": d}}, None)
    >>> groups = {"base": {"accuracy": 90.0, "num_test": 10}, "dark": {"accuracy": 60.0, "num_test": 10}}
    >>> data = NS(name="s", path="s", fingerprint="f", num_clients=2, num_train=20, num_test=20, num_classes=2,
    ...           image_size=8, group_by="domain", group_names=["base", "dark"])
    >>> algo = NS(name="fedavg", params={}, citation="")
    >>> doc = results_document(data=data, algorithm=algo, config=TrainConfig(rounds=3, last_k=2, train_groups=("base",)),
    ...     model_name="lenet", model_info={}, history=h, groups=groups, log={}, clients=None,
    ...     central_accuracy=None, timing={}, device={"type": "cpu"})
    >>> doc["schema_version"], doc["device"], doc["groups"]["dark"]["drop"], doc["final"]["mean_drop"]
    (2, {'type': 'cpu'}, 30.0, 30.0)
    >>> doc["final"]["best"]["accuracy"], doc["final"]["last_k"]["mean_drop"]  # a tie: the earliest round
    ({'value': 75.0, 'round': 2}, 20.0)
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
    train_groups = getattr(config, "train_groups", None)
    if train_groups is not None:
        groups, protocol = group_protocol(groups, train_groups)
        final.update(protocol)
    final.update(stable_final(history, groups, train_groups, int(getattr(config, "last_k", 3))))
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
        "config": {**{k: _json_value(v) for k, v in config.result_options().items()}, "model": model_name,
                   **({"engine": engine} if engine not in (None, "local") else {})},
        "model": {"name": model_name, **model_info},
        "curves": {**history.curves, "group_accuracy": history.group_curves, "train_round": history.train_round,
                   "train_loss": history.train_loss, **({"algorithm": extra} if extra else {})},
        "final": final,
        "groups": groups,
        "clients": clients or {"parameters": None, "macs": None},
        "timing": timing,
        **({"device": device} if device is not None else {}),
        **({"engine": engine} if engine not in (None, "local") else {}),
    }


def elapsed(t0: float) -> float:
    return round(time.perf_counter() - t0, 3)
