"""A row's curves over its seeds: each metric's mean, minimum and maximum at every evaluated round, and the
algorithms' per-round diagnostics (``curves.algorithm.<name>``) against the rounds they were trained in."""

from __future__ import annotations

from typing import Any, Iterable

from hetbench.leaderboard.load import Result
from hetbench.leaderboard.statistics import number, summarize

#: the prefix of a row curve that is an algorithm's per-round diagnostic (``curves.algorithm.<name>``)
DIAGNOSTIC_PREFIX = "algorithm."


def _evaluated(curves: dict, key: str) -> tuple[Any, Any]:
    """(x, y) of a metric curve: ``curves.round`` and ``curves[key]``."""
    return curves.get("round"), curves.get(key)


def _trained(curves: dict, key: str) -> tuple[Any, Any]:
    """(x, y) of a diagnostic ``algorithm.<name>``: one value per trained round, against ``curves.train_round``
    when it has as many entries, else rounds 1, 2, ..."""
    log = curves.get("algorithm")
    ys = log.get(key[len(DIAGNOSTIC_PREFIX):]) if isinstance(log, dict) else None
    if not isinstance(ys, list):
        return None, None
    xs = curves.get("train_round")
    return (xs if isinstance(xs, list) and len(xs) == len(ys) else list(range(1, len(ys) + 1))), ys


def diagnostic_names(results: Iterable[Result]) -> list[str]:
    """The per-round diagnostics some result records: the lists of ``curves.algorithm`` (dicts there, such as
    DapperFL's ``achieved_pruning_ratio``, are not per round), sorted.

    Parameters
    ----------
    results : Iterable[Result]
        Results.

    Returns
    -------
    list[str]
        The names, without the ``algorithm.`` prefix.

    Examples
    --------
    >>> from hetbench.leaderboard.seed_curves import diagnostic_names
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> run = example_result(curves={"round": [1], "accuracy": [50.0],
    ...                              "algorithm": {"l_ema": [2.1], "achieved_pruning_ratio": {"0.2": 0.19}}})
    >>> diagnostic_names([parse_result(run)])
    ['l_ema']
    """
    names = set()
    for res in results:
        curves = res.data.get("curves")
        log = curves.get("algorithm") if isinstance(curves, dict) else None
        if isinstance(log, dict):
            names.update(k for k, v in log.items() if isinstance(k, str) and isinstance(v, list))
    return sorted(names)


def mean_curve(results: list[Result], key: str) -> tuple[list[float], list, list, list] | None:
    """(rounds, mean, min, max) over seeds of ``curves[key]`` against ``curves.round`` (of the diagnostic
    ``curves.algorithm.<name>`` against the trained rounds when ``key`` is ``algorithm.<name>``); None when no
    seed has it. min and max are None where fewer than two seeds have a value."""
    per_round: dict[float, list[float]] = {}
    found = False
    series = _trained if key.startswith(DIAGNOSTIC_PREFIX) else _evaluated
    for res in results:
        curves = res.data.get("curves")
        if not isinstance(curves, dict):
            continue
        xs, ys = series(curves, key)
        if not isinstance(xs, list) or not isinstance(ys, list) or len(xs) != len(ys):
            continue
        for x, y in zip(xs, ys):
            try:
                xf, yf = number(x, "round"), number(y, key)
            except ValueError:
                continue
            if xf is None:
                continue
            per_round.setdefault(xf, [])
            if yf is not None:
                per_round[xf].append(yf)
                found = True
    if not found:
        return None
    rounds = sorted(per_round)
    lo = [min(per_round[x]) if len(per_round[x]) > 1 else None for x in rounds]
    hi = [max(per_round[x]) if len(per_round[x]) > 1 else None for x in rounds]
    return rounds, [summarize(per_round[x]).mean for x in rounds], lo, hi
