"""Results files: one JSON per (split, algorithm, seed), written atomically (format: ``docs/output-contract.md``).

Layout: ``<out>/<split name>-<fingerprint[:12]>/<algorithm>[-<non-default params>][-<groups>]-s<seed>.json``
(:func:`results_folder_name`: two splits that share a name never share a folder). The document is stable:
keys sorted, floats rounded, so two runs with the same inputs, options and seed give the same file except
for the ``timing`` block (wall-clock seconds).

The document's derived figures are computed here too, from plain lists (no torch), so that the
leaderboard computes the same numbers from a schema-1 document's curves: :func:`curve_statistics` (each
metric's best round and the mean of its last k evaluations) and :func:`group_protocol` (which test groups
were trained on, and each group's accuracy drop from them).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from hetbench.atomic import write_atomic
from hetbench.errors import HetbenchError

#: what every results document says it is, and the version of its layout (``docs/output-contract.md``);
#: the leaderboard reads documents of this kind and of these versions (1: no ``final.best`` /
#: ``final.last_k``, the leaderboard computes them from the curves)
RESULT_KIND = "hetbench-train-result"
SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)

#: the metrics every evaluation records (one curve each), in the order of the curves
EVAL_METRICS = ("accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss")
#: the group-protocol metrics (``--train-groups``), one value per evaluation
PROTOCOL_METRICS = ("trained_on_accuracy", "unseen_accuracy", "mean_drop")
#: metrics whose best value is the lowest (the rest: the highest); per-group drops too
LOWER_IS_BETTER = frozenset({"loss", "group_accuracy_variance", "mean_drop", "group_drop"})
#: the default k of the "mean of the last k evaluations" statistic (``--last-k``)
DEFAULT_LAST_K = 3
#: decimals of the derived statistics (means, pooled accuracies, drops)
DIGITS = 6


#: the longest name :func:`_safe` returns: a longer one keeps its start and a digest of the whole (a split
#: named with 300 characters made every result path too long for the file system)
MAX_SAFE_NAME = 120


def _safe(text: str) -> str:
    """``text`` as one file or folder name: letters, digits and ``._+=-``, at most :data:`MAX_SAFE_NAME` long.

    Examples
    --------
    >>> _safe("digits-iid-n10-s0"), _safe("my split/v2")
    ('digits-iid-n10-s0', 'my_split_v2')
    >>> len(_safe("a" * 300)), _safe("a" * 300)[-12:]
    (120, 'a-9835fa6bf4')
    """
    safe = re.sub(r"[^A-Za-z0-9._+=-]+", "_", str(text)).strip("._") or "split"
    if len(safe) <= MAX_SAFE_NAME:
        return safe
    import hashlib

    digest = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe[: MAX_SAFE_NAME - 11]}-{digest}"


def _fmt(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "_".join(_fmt(x) for x in v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


#: hex digits of the split fingerprint in a results folder's name (as many as in the split's shard file names)
FINGERPRINT_DIGITS = 12


def results_folder_name(split_name: str, fingerprint: str) -> str:
    """A split's results folder, ``<split name>-<fingerprint[:12]>``: splits that share a name (two iso-isp
    builds with other ``--clients``) get two folders, the same split (its manifest's ``split_fingerprint``)
    always the same one, where ``--resume`` and ``--skip-existing`` find its results.

    >>> results_folder_name("iso-isp-wb+tone-s0", "0f3a9c27d1b84e55aa"), results_folder_name("my split/v2", "")
    ('iso-isp-wb+tone-s0-0f3a9c27d1b8', 'my_split_v2')
    """
    short = re.sub(r"[^A-Za-z0-9]+", "", str(fingerprint or ""))[:FINGERPRINT_DIGITS]
    return f"{_safe(split_name)}-{short}" if short else _safe(split_name)


def result_path(out: str | os.PathLike, split_name: str, algorithm: str, params: dict, defaults: dict, seed: int,
                *, fingerprint: str) -> Path:
    """Where the result of one run goes: the split's folder (:func:`results_folder_name`), a file named by the
    algorithm, the parameters that differ from the paper's defaults and the seed.

    >>> result_path("res", "digits-n4", "fedprox", {"mu": 0.1}, {"mu": 0.01}, 0, fingerprint="5e1d0c9b8a7f6e").as_posix()
    'res/digits-n4-5e1d0c9b8a7f/fedprox-mu0.1-s0.json'
    """
    changed = [
        f"{k}{_fmt(v)}" for k, v in sorted(params.items())
        if k in defaults and _fmt(v) != _fmt(defaults[k])
    ]
    stem = "-".join([algorithm, *changed, f"s{seed}"])
    return Path(out) / results_folder_name(split_name, fingerprint) / f"{_safe(stem)}.json"


def existing_result(path: Path, overwrite: bool) -> bool:
    """Whether a result file exists at ``path``; with ``overwrite`` it must be a hetbench train result (a JSON
    object whose ``kind`` is ``hetbench-train-result``), or it is refused: ``--overwrite`` never replaces a
    file hetbench did not write.

    Parameters
    ----------
    path : Path
        Where one run's result goes.
    overwrite : bool
        Whether the caller means to replace it.

    Returns
    -------
    bool
        True when ``path`` exists (and, with ``overwrite``, may be replaced).

    Examples
    --------
    >>> import pathlib
    >>> p = pathlib.Path("existing_example.json")
    >>> existing_result(p, overwrite=True)
    False
    >>> _ = p.write_text("my notes")
    >>> existing_result(p, overwrite=True)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: 'existing_example.json' is not a hetbench train result; --overwrite replaces only result files hetbench train wrote
    """
    from hetbench.outputs import file_problem

    if not path.exists():
        return False
    if not path.is_file():
        raise HetbenchError(f"'{path}' exists and is not a file")
    problem = file_problem(path, "train-result") if overwrite else None
    if problem is not None:
        raise HetbenchError(f"'{path}' {problem}; --overwrite replaces only result files hetbench train wrote")
    return True


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n"


def write_result(doc: dict, path: Path) -> None:
    """Write ``doc`` to ``path`` through a temporary file and an atomic rename.

    Parameters
    ----------
    doc : dict
        The results document.
    path : Path
        Where it goes; missing folders are made.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        When it cannot be written (a full or read-only disk, ...): one line; no partial file is left, nor a
        folder made for it.

    Examples
    --------
    >>> write_result({"kind": "hetbench-train-result"}, Path("results/split/fedavg-s0.json"))
    >>> json.loads(Path("results/split/fedavg-s0.json").read_text())
    {'kind': 'hetbench-train-result'}
    """
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, dumps(doc))
    except OSError as exc:
        for folder in missing:  # deepest first: only the folders made for this file, if still empty
            try:
                folder.rmdir()
            except OSError:
                break
        raise HetbenchError(f"cannot write the result '{path}': {exc.strerror or exc}") from None


def _finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else None (null, NaN, not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def best_of(rounds: list, values: list, lower_is_better: bool = False) -> dict[str, Any] | None:
    """The best value of a curve and the first evaluated round that reached it.

    Parameters
    ----------
    rounds : list of int
        The evaluated rounds.
    values : list of float or None
        The curve, one value per evaluated round (nulls are skipped).
    lower_is_better : bool
        Best = lowest (loss, variance, drops); else highest (accuracies).

    Returns
    -------
    dict or None
        ``{"value": v, "round": r}``; None when the curve has no finite value.

    Examples
    --------
    >>> from hetbench.train.results import best_of
    >>> best_of([1, 2, 3, 4], [50.0, 80.0, 80.0, 60.0])  # ties: the earliest round
    {'value': 80.0, 'round': 2}
    >>> best_of([1, 2], [0.9, 0.4], lower_is_better=True), best_of([1], [None])
    ({'value': 0.4, 'round': 2}, None)
    """
    best: dict[str, Any] | None = None
    for r, v in zip(rounds, values):
        v = _finite(v)
        if v is None:
            continue
        if best is None or (v < best["value"] if lower_is_better else v > best["value"]):
            best = {"value": v, "round": int(r)}
    return best


def mean_last(values: list, k: int) -> float | None:
    """Mean of the last ``k`` evaluations of a curve (fewer when it has fewer), nulls skipped.

    Parameters
    ----------
    values : list of float or None
        The curve, one value per evaluation.
    k : int
        How many evaluations, counted from the last.

    Returns
    -------
    float or None
        The mean, rounded to :data:`DIGITS` decimals; None when those evaluations have no finite value.

    Examples
    --------
    >>> from hetbench.train.results import mean_last
    >>> mean_last([10.0, 58.0, 40.0, 18.0], 3), mean_last([70.0], 3), mean_last([None, None], 2)
    (38.666667, 70.0, None)
    """
    window = [v for v in (_finite(x) for x in values[max(len(values) - int(k), 0):]) if v is not None]
    return round(math.fsum(window) / len(window), DIGITS) if window else None


def pooled_accuracy(accuracies: list, counts: list) -> float | None:
    """Accuracy of several groups' test rows pooled: their accuracies weighted by their test rows.

    Parameters
    ----------
    accuracies : list of float or None
        Each group's accuracy (percent).
    counts : list of int
        Each group's number of test rows; groups without rows or accuracy are left out.

    Returns
    -------
    float or None
        The pooled accuracy (percent, :data:`DIGITS` decimals); None when no group is left.

    Examples
    --------
    >>> from hetbench.train.results import pooled_accuracy
    >>> pooled_accuracy([90.0, 60.0], [300, 100]), pooled_accuracy([50.0], [0])
    (82.5, None)
    """
    pairs = [(a, n) for a, n in zip((_finite(a) for a in accuracies), counts) if a is not None and n > 0]
    total = sum(n for _, n in pairs)
    return round(math.fsum(a * n for a, n in pairs) / total, DIGITS) if total else None


def _group_split(groups: dict[str, dict], train_groups: Any) -> tuple[list[str], list[str]]:
    """(trained-on groups, unseen groups) among the ``groups`` entries that have test rows."""
    trained = {str(g) for g in train_groups}
    with_rows = [g for g in sorted(groups) if int(groups[g].get("num_test") or 0) > 0]
    return [g for g in with_rows if g in trained], [g for g in with_rows if g not in trained]


def protocol_curves(group_curves: dict[str, list], groups: dict[str, dict], train_groups: Any) -> dict[str, Any]:
    """Per evaluation: trained-on accuracy, unseen accuracy, mean drop, and every group's drop.

    The trained-on accuracy is the pooled accuracy of the test rows of the groups in ``train_groups``;
    the unseen accuracy that of the other groups; a group's drop is the trained-on accuracy minus the
    group's accuracy (points, positive = worse than on the trained-on groups); the mean drop is the
    unweighted mean of the unseen groups' drops (HeteroSwitch Fig. 3: train on the baseline ISP, test
    on each variant). Groups without test rows are left out.

    Parameters
    ----------
    group_curves : dict[str, list]
        ``curves.group_accuracy``: each group's accuracy per evaluation.
    groups : dict[str, dict]
        The document's ``groups`` (their ``num_test`` weigh the pooling).
    train_groups : sequence of str
        ``config.train_groups``.

    Returns
    -------
    dict
        ``{"trained_on_accuracy": [...], "unseen_accuracy": [...], "mean_drop": [...], "group_drop": {g: [...]}}``.

    Examples
    --------
    >>> from hetbench.train.results import protocol_curves
    >>> groups = {"base": {"num_test": 100}, "v1": {"num_test": 100}, "v2": {"num_test": 300}}
    >>> c = protocol_curves({"base": [50.0, 90.0], "v1": [40.0, 80.0], "v2": [50.0, 60.0]}, groups, ["base"])
    >>> c["unseen_accuracy"], c["group_drop"]["v2"], c["mean_drop"]
    ([47.5, 65.0], [0.0, 30.0], [5.0, 20.0])
    """
    trained, unseen = _group_split(groups, train_groups)
    n = max((len(v) for v in group_curves.values()), default=0)
    counts = {g: int(groups[g]["num_test"]) for g in trained + unseen}

    def at(g: str, i: int) -> float | None:
        curve = group_curves.get(g) or []
        return _finite(curve[i]) if i < len(curve) else None

    out: dict[str, Any] = {"trained_on_accuracy": [], "unseen_accuracy": [], "mean_drop": [],
                           "group_drop": {g: [] for g in trained + unseen}}
    for i in range(n):
        base = pooled_accuracy([at(g, i) for g in trained], [counts[g] for g in trained])
        out["trained_on_accuracy"].append(base)
        out["unseen_accuracy"].append(pooled_accuracy([at(g, i) for g in unseen], [counts[g] for g in unseen]))
        drops = {}
        for g in trained + unseen:
            a = at(g, i)
            drops[g] = round(base - a, DIGITS) if base is not None and a is not None else None
            out["group_drop"][g].append(drops[g])
        unseen_drops = [drops[g] for g in unseen if drops[g] is not None]
        out["mean_drop"].append(round(math.fsum(unseen_drops) / len(unseen_drops), DIGITS) if unseen_drops else None)
    return out


def group_protocol(groups: dict[str, dict], train_groups: Any) -> tuple[dict[str, dict], dict[str, Any]]:
    """The ``groups`` entries with ``trained_on`` and ``drop``, and the ``final`` fields of a group protocol.

    Parameters
    ----------
    groups : dict[str, dict]
        ``{group: {"accuracy", "num_test"}}`` of the last evaluation.
    train_groups : sequence of str
        ``config.train_groups`` (the groups whose clients trained).

    Returns
    -------
    tuple[dict, dict]
        The groups, each with ``trained_on`` (bool) and ``drop`` (trained-on pooled accuracy minus the
        group's, in points; null without test rows or without trained-on test rows), and
        ``{"trained_on_accuracy", "unseen_accuracy", "mean_drop"}`` (see :func:`protocol_curves`).

    Examples
    --------
    >>> from hetbench.train.results import group_protocol
    >>> groups = {"base": {"accuracy": 90.0, "num_test": 100}, "dark": {"accuracy": 70.5, "num_test": 50}}
    >>> out, final = group_protocol(groups, ["base"])
    >>> out["dark"], final
    ({'accuracy': 70.5, 'num_test': 50, 'trained_on': False, 'drop': 19.5}, {'mean_drop': 19.5, 'trained_on_accuracy': 90.0, 'unseen_accuracy': 70.5})
    """
    trained = {str(g) for g in train_groups}
    curves = protocol_curves({g: [v.get("accuracy")] for g, v in groups.items()}, groups, train_groups)
    out = {}
    for g, v in sorted(groups.items()):
        drop = curves["group_drop"].get(g)
        out[g] = {**v, "trained_on": g in trained, "drop": drop[0] if drop else None}
    final = {k: (curves[k][0] if curves[k] else None) for k in sorted(PROTOCOL_METRICS)}
    return out, final


def curve_statistics(curves: dict[str, Any], groups: dict[str, dict], train_groups: Any = None,
                     last_k: int = DEFAULT_LAST_K) -> dict[str, dict]:
    """Every metric's best evaluation and the mean of its last ``last_k`` evaluations.

    The metrics are :data:`EVAL_METRICS`, each group's accuracy and, with ``train_groups``, the
    :func:`protocol_curves` (trained-on and unseen accuracy, mean drop, each group's drop). Best =
    highest for accuracies, lowest for loss, variance and drops, at the first round that reached it.
    With fewer than ``last_k`` evaluations the mean is over all of them (``k`` says how many).

    Parameters
    ----------
    curves : dict
        The document's ``curves`` (``round``, a list per metric, ``group_accuracy``).
    groups : dict[str, dict]
        The document's ``groups`` (groups without test rows get null statistics).
    train_groups : sequence of str, optional
        ``config.train_groups``; None: no protocol metrics.
    last_k : int
        k of the mean of the last k evaluations.

    Returns
    -------
    dict
        ``{"best": {metric: {"value", "round"} or None, "group_accuracy": {g: ...}, ...},
        "last_k": {"k": k, "rounds": [...], metric: value or None, "group_accuracy": {g: ...}, ...}}``.

    Examples
    --------
    >>> from hetbench.train.results import curve_statistics
    >>> curves = {"round": [2, 4, 6, 8], "accuracy": [30.0, 58.0, 40.0, 18.0], "loss": [2.0, 1.1, 1.3, 2.2],
    ...           "group_accuracy": {"a": [30.0, 58.0, 40.0, 18.0]}}
    >>> s = curve_statistics(curves, {"a": {"num_test": 10}}, last_k=3)
    >>> s["best"]["accuracy"], s["best"]["loss"], s["last_k"]["k"], s["last_k"]["rounds"], s["last_k"]["accuracy"]
    ({'value': 58.0, 'round': 4}, {'value': 1.1, 'round': 4}, 3, [4, 6, 8], 38.666667)
    """
    rounds = [int(r) for r in curves.get("round") or []]
    n = len(rounds)
    k = min(int(last_k), n)

    def usable(values: Any) -> list:
        return values if isinstance(values, list) and len(values) == n else [None] * n

    series: dict[str, list] = {m: usable(curves.get(m)) for m in EVAL_METRICS}
    group_curves = curves.get("group_accuracy") if isinstance(curves.get("group_accuracy"), dict) else {}
    has_rows = {g for g, v in groups.items() if int(v.get("num_test") or 0) > 0}
    per_group = {"group_accuracy": {g: usable(group_curves.get(g)) if g in has_rows else [None] * n
                                    for g in sorted(groups)}}
    if train_groups is not None:
        pc = protocol_curves({g: usable(group_curves.get(g)) for g in groups}, groups, train_groups)
        series.update({m: pc[m] for m in PROTOCOL_METRICS})
        per_group["group_drop"] = {g: pc["group_drop"].get(g, [None] * n) for g in sorted(groups)}
    best: dict[str, Any] = {m: best_of(rounds, v, m in LOWER_IS_BETTER) for m, v in series.items()}
    last: dict[str, Any] = {"k": k, "rounds": rounds[n - k:] if k else []}
    last.update({m: mean_last(v, k) for m, v in series.items()})
    for key, by_group in per_group.items():
        best[key] = {g: best_of(rounds, v, key in LOWER_IS_BETTER) for g, v in by_group.items()}
        last[key] = {g: mean_last(v, k) for g, v in by_group.items()}
    return {"best": best, "last_k": last}
