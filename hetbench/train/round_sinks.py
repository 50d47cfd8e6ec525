"""The sinks of a run's per-round metrics (``hetbench train --log``): the CSV file beside the results JSON,
TensorBoard and Weights & Biases. :class:`hetbench.train.round_log.RoundLog` makes the rows and writes each
to every sink it was asked for.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from hetbench.atomic import atomic_file

#: the wall-clock column, last in a row (left out of TensorBoard and wandb; a test drops it to compare two runs)
TIMING_COLUMN = "elapsed_s"


def _cell(value: Any) -> str:
    """A CSV cell: empty for null, the shortest text that reads back as the same float."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def _scalars(row: dict[str, Any]) -> dict[str, float]:
    """What TensorBoard and wandb get of a row: every non-null number but ``round`` and the timing."""
    return {k: float(v) for k, v in row.items()
            if k not in ("round", TIMING_COLUMN) and v is not None and not isinstance(v, bool)}


class CsvSink:
    """``<result stem>.rounds.csv``: the header from the first row (a later row with a new column rewrites the
    file with it), every row flushed as it is written."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.rows: list[dict[str, Any]] = []
        self.columns: list[str] = []
        self._fh: Any = None
        self._writer: Any = None

    def previous_timing(self) -> dict[int, str]:
        """``{round: elapsed_s}`` of the file a resumed run replaces (empty when there is none or it is not
        readable)."""
        try:
            with open(self.path, newline="", encoding="utf-8") as fh:
                return {int(r["round"]): r.get(TIMING_COLUMN) or "" for r in csv.DictReader(fh)}
        except (OSError, ValueError, KeyError, TypeError, csv.Error):
            return {}

    def start(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite the file with ``rows`` (a resumed run's restored rounds); none: the first row makes it."""
        self.rows, self.columns = [], []
        for row in rows:
            self.rows.append(row)
            self._widen(row)
        if self.rows:
            self._rewrite()

    def _widen(self, row: dict[str, Any]) -> bool:
        """Add the columns of ``row`` that :attr:`columns` lacks (``elapsed_s`` stays last); whether any were."""
        new = [c for c in row if c not in self.columns and c != TIMING_COLUMN]
        if not new and self.columns:
            return False
        self.columns = [c for c in self.columns if c != TIMING_COLUMN] + new + [TIMING_COLUMN]
        return True

    def _rewrite(self) -> None:
        """The whole file from :attr:`rows`, through a temporary file and a rename; then open for appending."""
        self.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(self.path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            if self.columns:
                writer.writerow(self.columns)
            writer.writerows([_cell(row.get(c)) for c in self.columns] for row in self.rows)
        self._fh = open(self.path, "a", newline="", encoding="utf-8")
        self._writer = csv.writer(self._fh)

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self._widen(row) or self._writer is None:
            self._rewrite()
            return
        self._writer.writerow([_cell(row.get(c)) for c in self.columns])
        self._fh.flush()

    def close(self, failed: bool = False) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = self._writer = None


class TensorBoardSink:
    """``<out>/tensorboard/<split folder>/<result stem>/``: one scalar per column, the round as the step."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._writer: Any = None

    def start(self, rows: list[dict[str, Any]]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        if self.folder.is_dir():  # an earlier (killed or replaced) run's events: this run rewrites them
            for old in self.folder.glob("events.out.tfevents.*"):
                old.unlink()
        self._writer = SummaryWriter(log_dir=str(self.folder))
        for row in rows:
            self.add(row, flush=False)
        self._writer.flush()

    def add(self, row: dict[str, Any], flush: bool = True) -> None:
        for tag, value in _scalars(row).items():
            self._writer.add_scalar(tag, value, global_step=int(row["round"]))
        if flush:
            self._writer.flush()

    def close(self, failed: bool = False) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class WandbSink:
    """One wandb run per results file, in ``<out>/wandb/``; offline unless ``WANDB_MODE`` is set."""

    def __init__(self, out: Path, name: str, config: dict[str, Any]) -> None:
        self.out, self.name, self.config = Path(out), name, config
        self._run: Any = None

    def start(self, rows: list[dict[str, Any]]) -> None:
        import wandb

        self.out.mkdir(parents=True, exist_ok=True)
        kwargs: dict[str, Any] = {} if os.environ.get("WANDB_MODE") else {"mode": "offline"}
        self._run = wandb.init(project=os.environ.get("WANDB_PROJECT") or "hetbench", name=self.name,
                               group=self.name.split("/")[0], dir=str(self.out), config=self.config, **kwargs)
        for row in rows:
            self.add(row)

    def add(self, row: dict[str, Any]) -> None:
        self._run.log(_scalars(row), step=int(row["round"]))

    def close(self, failed: bool = False) -> None:
        if self._run is not None:
            self._run.finish(exit_code=1 if failed else 0)
            self._run = None
