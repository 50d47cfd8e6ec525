"""Per-round metrics of a training run, written as the rounds happen (``hetbench train --log``).

Sinks (``--log csv,tensorboard,wandb``, default none):

* ``csv``: ``<result stem>.rounds.csv`` beside the results JSON, one row per round, flushed after each
  row (``tail -f`` shows the run);
* ``tensorboard``: ``<out>/tensorboard/<split folder>/<result stem>/``, one scalar per column and round,
  written with ``torch.utils.tensorboard.SummaryWriter`` (``pip install 'hetbench[tensorboard]'``);
* ``wandb``: one Weights & Biases run per results file, in ``<out>/wandb/``, offline unless the user's
  ``WANDB_MODE`` says otherwise (``wandb`` is imported only when asked for).

A row holds ``round``, ``train_loss`` (the clients' mean training loss), the evaluation metrics of the
results' curves (empty on rounds that are not evaluated), each test group's accuracy
(``group_accuracy/<group>``), the algorithm's diagnostics (``algorithm/<name>``) and, last, ``elapsed_s``:
wall seconds since the run started, the one column that differs between two identical runs (TensorBoard and
wandb get everything but ``elapsed_s``). The values are the results JSON's, read from the same
:class:`~hetbench.train.document.History` (:func:`round_metrics`).

A resumed run (``--resume``) rewrites every sink from its checkpoint: the rounds the checkpoint holds
(rebuilt from its history, with the ``elapsed_s`` of the file they replace where it has them), then the
new ones, so the file equals an uninterrupted run's (``elapsed_s`` aside) and no round appears twice.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from hetbench.errors import HetbenchError
from hetbench.train.results import EVAL_METRICS
from hetbench.train.round_sinks import TIMING_COLUMN, CsvSink, TensorBoardSink, WandbSink

#: the sinks ``--log`` takes
SINKS = ("csv", "tensorboard", "wandb")
#: the columns every row starts with, in order
BASE_COLUMNS = ("round", "train_loss", *EVAL_METRICS)


def parse_sinks(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """The sinks of ``--log`` (a comma list, or a sequence), each once, in the order given.

    Parameters
    ----------
    text : str or sequence of str or None
        ``"csv,tensorboard"``; None or empty: no sink.

    Returns
    -------
    tuple of str
        Names of :data:`SINKS`.

    Raises
    ------
    HetbenchError
        For a name that is not a sink (one line).

    Examples
    --------
    >>> from hetbench.train.round_log import parse_sinks
    >>> parse_sinks("CSV, tensorboard,csv"), parse_sinks(None)
    (('csv', 'tensorboard'), ())
    >>> parse_sinks("csv,mlflow")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: log 'mlflow' is not one of csv, tensorboard, wandb
    """
    if text is None:
        return ()
    items = text.split(",") if isinstance(text, str) else list(text)
    names = [s.strip().lower() for s in items if s.strip()]
    for name in names:
        if name not in SINKS:
            raise HetbenchError(f"`log` '{name}' is not one of {', '.join(SINKS)}")
    return tuple(dict.fromkeys(names))


def check_sinks(sinks: Iterable[str]) -> None:
    """Refuse (one line, exit 2) a sink whose package cannot be imported; imports it, so call it only for the
    sinks asked for, before any training.

    Examples
    --------
    >>> from hetbench.train.round_log import check_sinks
    >>> check_sinks(["csv"])  # the standard library's csv: always there
    """
    for sink in sinks:
        try:
            if sink == "tensorboard":
                import tensorboard  # noqa: F401  (torch.utils.tensorboard needs it)
                from torch.utils.tensorboard import SummaryWriter  # noqa: F401
            elif sink == "wandb":
                import wandb  # noqa: F401
        except Exception as exc:  # ImportError, or a broken installation failing as it imports
            how = "pip install 'hetbench[tensorboard]'" if sink == "tensorboard" else "pip install wandb"
            why = (str(exc).strip().splitlines() or [""])[0][:120] or type(exc).__name__
            raise HetbenchError(f"`log` {sink} needs the {sink} package, which cannot be imported ({why}): "
                                f"{how}, or drop {sink} from `log`") from None


def _index(rounds: Sequence[int], round_index: int) -> int | None:
    """Where ``round_index`` is in ``rounds`` (searched from the end: the live round is the last)."""
    for i in range(len(rounds) - 1, -1, -1):
        if int(rounds[i]) == round_index:
            return i
    return None


def _scalar(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def round_metrics(round_index: int, history: Any, log: dict[str, list]) -> dict[str, Any]:
    """What round ``round_index`` measured, as the results' curves hold it.

    Parameters
    ----------
    round_index : int
        The round (1-based).
    history : History
        The run's :class:`~hetbench.train.document.History` (live, or restored from a checkpoint).
    log : dict
        The run's per-round algorithm diagnostics (``RunState.log``, one value per round).

    Returns
    -------
    dict
        ``train_loss``; on evaluated rounds each of ``EVAL_METRICS`` and ``group_accuracy`` (``{group: acc}``);
        ``algorithm`` (``{name: value}``, numbers and nulls only).

    Examples
    --------
    >>> from hetbench.train.document import History
    >>> h = History(["a"])
    >>> h.add_train(1, 2.5)
    >>> h.add_eval(1, {"accuracy": 40.0, "client_accuracy": None, "worst_group_accuracy": 40.0,
    ...                "group_accuracy_variance": 0.0, "loss": 1.5}, {"a": {"accuracy": 40.0}}, None)
    >>> m = round_metrics(1, h, {"c_norm": [0.25]})
    >>> m["train_loss"], m["accuracy"], m["group_accuracy"], m["algorithm"]
    (2.5, 40.0, {'a': 40.0}, {'c_norm': 0.25})
    """
    out: dict[str, Any] = {}
    i = _index(history.train_round, round_index)
    out["train_loss"] = history.train_loss[i] if i is not None else None
    j = _index(history.curves["round"], round_index)
    if j is not None:
        out.update({m: history.curves[m][j] for m in EVAL_METRICS})
        out["group_accuracy"] = {g: c[j] for g, c in history.group_curves.items() if j < len(c)}
    out["algorithm"] = {k: v[round_index - 1] for k, v in sorted(log.items())
                        if isinstance(v, list) and len(v) >= round_index and _scalar(v[round_index - 1])}
    return out


def flat_row(round_index: int, metrics: dict[str, Any], group_names: Sequence[str] = ()) -> dict[str, Any]:
    """One row of the round log: :data:`BASE_COLUMNS`, ``group_accuracy/<g>`` (every group of
    ``group_names``, null when not evaluated) and ``algorithm/<name>``; without ``elapsed_s``.

    Examples
    --------
    >>> from hetbench.train.round_log import flat_row
    >>> row = flat_row(2, {"train_loss": 1.25, "algorithm": {"c_norm": 0.5}}, ["mnist"])  # not evaluated
    >>> list(row)[:3], row["accuracy"], row["group_accuracy/mnist"], row["algorithm/c_norm"]
    (['round', 'train_loss', 'accuracy'], None, None, 0.5)
    """
    row: dict[str, Any] = {"round": int(round_index)}
    row.update({c: metrics.get(c) for c in BASE_COLUMNS[1:]})
    groups = metrics.get("group_accuracy") or {}
    for g in [*group_names, *(g for g in groups if g not in group_names)]:
        row[f"group_accuracy/{g}"] = groups.get(g)
    for k, v in (metrics.get("algorithm") or {}).items():
        row[f"algorithm/{k}"] = v
    return row


def rounds_csv_path(result_path: str | os.PathLike) -> Path:
    """The round log CSV of the run whose results go to ``result_path``: beside it, ``.rounds.csv``.

    Examples
    --------
    >>> rounds_csv_path("results/digits/fedavg-s0.json").as_posix()
    'results/digits/fedavg-s0.rounds.csv'
    """
    path = Path(result_path)
    return path.with_name(f"{path.stem}.rounds.csv")


def restored_rows(checkpoint: Path, group_names: Sequence[str] = ()) -> tuple[list[dict[str, Any]], float]:
    """The rows of the rounds a checkpoint holds (rebuilt from its history and diagnostics) and the wall
    seconds the run had spent when it was saved."""
    import torch

    from hetbench.train.checkpoint import decode
    from hetbench.train.document import History

    try:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        history = History(**decode(state["history"]))
        log = decode(state["log"])
        done = int(state["round"])
        spent = float(state["timing"].get("wall_s", 0.0))
    except Exception as err:  # torch raises many types for a damaged file
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
        raise HetbenchError(f"cannot resume: checkpoint '{checkpoint}' is damaged ({reason})") from None
    return [flat_row(r, round_metrics(r, history, log), group_names) for r in range(1, done + 1)], spent


class RoundLog:
    """The sinks of one run: :meth:`add` after every round; a context manager that closes them.

    Parameters
    ----------
    sinks : sequence of str
        Names of :data:`SINKS` (:func:`parse_sinks`; their packages checked by :func:`check_sinks`).
    result_path : Path
        The run's results JSON (``<out>/<split name>-<fingerprint>/<stem>.json``): the CSV goes beside it.
    out : Path
        The results folder: TensorBoard's events go to ``<out>/tensorboard/<split folder>/<stem>/``, wandb's
        run to ``<out>/wandb/``.
    group_names : sequence of str
        The run's test groups: a ``group_accuracy/<g>`` column each, from the first row on.
    resume_from : Path, optional
        The checkpoint the run resumes from: its rounds are written first (:func:`restored_rows`).
    config : dict, optional
        The run's options, for wandb's run config.

    Examples
    --------
    >>> import csv, pathlib
    >>> from hetbench.train.round_log import RoundLog
    >>> with RoundLog(["csv"], pathlib.Path("log_example/digits/fedavg-s0.json"), pathlib.Path("log_example"),
    ...               ["all"]) as log:
    ...     log.add(1, {"train_loss": 2.0, "accuracy": 35.5, "group_accuracy": {"all": 35.5}})
    >>> rows = list(csv.DictReader(open("log_example/digits/fedavg-s0.rounds.csv")))
    >>> rows[0]["round"], rows[0]["train_loss"], rows[0]["group_accuracy/all"], rows[0]["loss"]
    ('1', '2.0', '35.5', '')
    """

    def __init__(self, sinks: Sequence[str], result_path: Path, out: Path, group_names: Sequence[str] = (),
                 resume_from: Path | None = None, config: dict[str, Any] | None = None) -> None:
        self.group_names = list(group_names)
        result_path, out = Path(result_path), Path(out)
        try:
            name = result_path.with_suffix("").relative_to(out).as_posix()
        except ValueError:
            name = result_path.stem
        self.sinks: list[Any] = []
        self.csv: CsvSink | None = None
        for sink in parse_sinks(list(sinks)):
            if sink == "csv":
                self.csv = CsvSink(rounds_csv_path(result_path))
                self.sinks.append(self.csv)
            elif sink == "tensorboard":
                self.sinks.append(TensorBoardSink(out / "tensorboard" / name))
            else:
                self.sinks.append(WandbSink(out, name, dict(config or {})))
        restore = resume_from is not None and self.sinks
        rows, self._spent = restored_rows(resume_from, self.group_names) if restore else ([], 0.0)
        if rows:
            timing = self.csv.previous_timing() if self.csv is not None else {}
            for row in rows:
                row[TIMING_COLUMN] = _timing(timing.get(row["round"]))
        self._t0 = time.perf_counter()
        for sink in self.sinks:
            sink.start(rows)

    def add(self, round_index: int, metrics: dict[str, Any]) -> None:
        """Write round ``round_index``: ``metrics`` as ``run_training``'s ``on_round`` gives them
        (:func:`round_metrics`' keys)."""
        row = flat_row(round_index, metrics, self.group_names)
        row[TIMING_COLUMN] = round(self._spent + time.perf_counter() - self._t0, 3)
        for sink in self.sinks:
            sink.add(row)

    def close(self, failed: bool = False) -> None:
        for sink in self.sinks:
            sink.close(failed)

    def __enter__(self) -> "RoundLog":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close(failed=exc_type is not None)


def _timing(text: str | None) -> float | None:
    """An ``elapsed_s`` cell read back (None when missing or not a number)."""
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None
