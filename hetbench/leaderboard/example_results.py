"""A minimal valid ``hetbench train`` result, for the leaderboard's examples and tests: the keys
:func:`hetbench.leaderboard.load.parse_result` needs and little more, its ``final`` statistics computed from
its ``curves`` as the trainer computes them."""

from __future__ import annotations

from typing import Any

from hetbench.train.result_stats import curve_statistics  # the producer's constants and statistics (no torch)
from hetbench.train.results import DEFAULT_LAST_K, RESULT_KIND, SCHEMA_VERSION


def example_result(split: str = "digits", algorithm: str = "fedavg", seed: Any = 0, accuracy: float = 90.0,
                   *, fingerprint: str = "f00d", params: dict | None = None, final: dict | None = None,
                   curves: dict | None = None) -> dict:
    """A minimal valid train result (schema 2), for examples: the keys :func:`parse_result` needs and little more.

    Its ``final.best`` and ``final.last_k`` are computed from ``curves`` (k = 3); without ``curves`` the
    run was evaluated once, at round 1, with the ``final`` values.

    Parameters
    ----------
    split : str
        ``split.name``.
    algorithm : str
        ``algorithm.name``.
    seed : Any
        ``config.seed``.
    accuracy : float
        ``final.accuracy``; ``final.worst_group_accuracy`` is 5 points lower unless ``final`` says otherwise.
    fingerprint : str
        ``split.fingerprint``.
    params : dict or None
        ``algorithm.params``.
    final : dict or None
        More ``final`` metrics (they win over ``accuracy``).
    curves : dict or None
        ``curves`` (``round`` and a list per metric); None: one evaluation with the ``final`` values.

    Returns
    -------
    dict
        The result as parsed JSON.

    Examples
    --------
    >>> from hetbench.leaderboard.example_results import example_result
    >>> r = example_result(seed=3)
    >>> r["final"]["worst_group_accuracy"], r["final"]["last_k"]["k"], r["curves"]["accuracy"]
    (85.0, 1, [90.0])
    """
    fin = {"accuracy": accuracy, "worst_group_accuracy": accuracy - 5.0, **(final or {})}
    if curves is None:
        curves = {"round": [1], **{m: [fin[m]] for m in ("accuracy", "worst_group_accuracy") if m in fin}}
    fin.update(curve_statistics(curves, {}, None, DEFAULT_LAST_K))
    return {
        "kind": RESULT_KIND, "schema_version": SCHEMA_VERSION,
        "split": {"name": split, "fingerprint": fingerprint},
        "algorithm": {"name": algorithm, "params": params or {}},
        "config": {"seed": seed},
        "curves": curves,
        "final": fin,
    }
