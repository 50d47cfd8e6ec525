"""Choosing a step on a tuning split: the grid search every tuned comparison of the claims shares.

Hsu et al. (ECCV 2020, Appendix A.1) and Karimireddy et al. (SCAFFOLD, ICML 2020, sec. 7: "we always use
global step-size eta_g = 1 and tune the local step-size eta_l individually for each algorithm") compare
algorithms each at its own best step of one grid. Here the step is chosen on a *tuning* split with tuning
seeds, never on the split the claim measures, so the evaluation numbers are not selected on themselves.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from hetbench.errors import HetbenchError


def check_seed_setting(settings: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    """A non-negative integer setting (a split seed); ``default`` when absent (None: required).

    Examples
    --------
    >>> from hetbench.reproduce.runners.tuning import check_seed_setting
    >>> check_seed_setting({"split_seed": 3}, "split_seed", "x")
    3
    >>> check_seed_setting({"split_seed": -1}, "split_seed", "x.yaml: settings.quick")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: settings.quick: 'split_seed' must be a non-negative integer (got -1)
    """
    if key not in settings:
        if default is None:
            raise HetbenchError(f"{where}: missing setting '{key}'")
        return default
    v = settings[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise HetbenchError(f"{where}: '{key}' must be a non-negative integer (got {v!r})")
    return v


def check_tuning_settings(settings: dict[str, Any], where: str, check_schema: Callable[[dict[str, Any], str], Any],
                          grid_key: str, lr_reason: str) -> None:
    """The checks every tuned comparison's settings share: ``split_seed`` and ``tune_split_seed`` (two
    different splits), the rest by ``check_schema`` (the runner's schema), a positive ``alpha``, a grid
    (``grid_key``) of distinct increasing values, and ``train`` options without ``lr`` (the grid sets the
    client rate; ``lr_reason`` says how).

    Examples
    --------
    >>> from hetbench.reproduce.runners.tuning import check_tuning_settings
    >>> s = {"split_seed": 0, "tune_split_seed": 0, "alpha": 0.5, "rates": [0.1], "train": {}}
    >>> check_tuning_settings(s, "x.yaml", lambda rest, where: rest, "rates", "")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: 'tune_split_seed' must differ from 'split_seed' (the step is chosen on another split than the one it is measured on)
    """
    from hetbench.reproduce.runners.label_skew import train_config

    split = check_seed_setting(settings, "split_seed", where)
    tune = check_seed_setting(settings, "tune_split_seed", where)
    check_schema({k: v for k, v in settings.items() if k not in ("split_seed", "tune_split_seed")}, where)
    if split == tune:
        raise HetbenchError(f"{where}: 'tune_split_seed' must differ from 'split_seed' (the step is chosen on "
                            "another split than the one it is measured on)")
    if settings["alpha"] <= 0:
        raise HetbenchError(f"{where}: 'alpha' must be a positive number (got {settings['alpha']!r})")
    grid = settings[grid_key]
    if len(set(grid)) != len(grid) or list(grid) != sorted(grid):
        raise HetbenchError(f"{where}: '{grid_key}' must be distinct and increasing (got {grid!r})")
    train_config(dict(settings["train"]), f"{where}.train")
    if "lr" in settings["train"]:
        raise HetbenchError(f"{where}.train: 'lr' is not a setting of this claim: {lr_reason}")


def choose_step(grid: list[float], accuracy: list[float]) -> float:
    """The step of ``grid`` with the highest accuracy (the first of the grid on a tie).

    Examples
    --------
    >>> from hetbench.reproduce.runners.tuning import choose_step
    >>> choose_step([0.3, 1.0, 3.0], [50.0, 61.0, 61.0])
    1.0
    """
    best = max(range(len(grid)), key=lambda i: (accuracy[i], -i))
    return grid[best]


def tune_on_grid(algorithms: Sequence[str], grid: list[float], train: Callable[[str, float], list[float]],
                 note: Callable[[str], None] = lambda text: None,
                 name: str = "step") -> tuple[dict[str, dict[str, float | str]], dict[str, float]]:
    """Train every algorithm at every step of ``grid`` and choose each one's best step.

    Parameters
    ----------
    algorithms : sequence of str
        The algorithms tuned, each on its own.
    grid : list of float
        The steps tried (increasing).
    train : callable
        ``train(algorithm, step)`` -> the tuning runs' accuracies (%); it raises
        :class:`hetbench.train.local.TrainingDiverged` when a run diverges: that step is reported as diverged
        and never chosen.
    note : callable
        Receives one progress line per step.
    name : str
        What a step is called in progress lines (``step``, ``lr``).

    Returns
    -------
    tuning, chosen
        Per algorithm, its mean tuning accuracy at every step (``"diverged"`` where it diverged, keyed by
        the step's ``%g`` text), and its chosen step (:func:`choose_step`).

    Raises
    ------
    HetbenchError
        When an algorithm diverged at every step of the grid.

    Examples
    --------
    >>> from hetbench.reproduce.runners.tuning import tune_on_grid
    >>> fake = {("a", 0.1): [50.0, 52.0], ("a", 1.0): [70.0, 72.0], ("b", 0.1): [60.0, 60.0], ("b", 1.0): [10.0, 12.0]}
    >>> tune_on_grid(["a", "b"], [0.1, 1.0], lambda algo, step: fake[algo, step])
    ({'a': {'0.1': 51.0, '1': 71.0}, 'b': {'0.1': 60.0, '1': 11.0}}, {'a': 1.0, 'b': 0.1})
    """
    from hetbench.train.local import TrainingDiverged

    tuning: dict[str, dict[str, float | str]] = {}
    chosen: dict[str, float] = {}
    for algo in algorithms:
        means = []
        for step in grid:
            try:
                acc = train(algo, step)
            except TrainingDiverged:  # a step of the grid too large to train: never chosen, reported
                means.append(float("-inf"))
                note(f"tuning {algo} {name} {step:g}: diverged")
                continue
            means.append(sum(acc) / len(acc))
            note(f"tuning {algo} {name} {step:g}: {means[-1]:.2f}%")
        if all(m == float("-inf") for m in means):
            raise HetbenchError(f"{algo} diverged at every {name} of the grid {grid}: lower the grid")
        tuning[algo] = {f"{s:g}": round(m, 4) if m > float("-inf") else "diverged" for s, m in zip(grid, means)}
        chosen[algo] = choose_step(grid, means)
    return tuning, chosen
