"""``hetbench train --log csv,tensorboard,wandb``: per-round metrics written as the rounds happen, equal to the
results JSON's curves, the same after ``--resume`` as in an uninterrupted run, and bad sinks refused before
any training."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from hetbench.sweep import default_split, sweep
from hetbench.train.algorithms import TrainConfig
from hetbench.train.results import EVAL_METRICS
from hetbench.train.round_log import TIMING_COLUMN, rounds_csv_path

FAST = ("--clients-per-round", "3", "--batch-size", "16", "--threads", "1", "-q")
CONFIG = TrainConfig(rounds=4, clients_per_round=3, batch_size=16, eval_every=2, checkpoint_every=2)


@pytest.fixture(scope="module")
def split() -> Path:
    return default_split(quiet=True)


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def _value(cell: str) -> float | None:
    return None if cell == "" else float(cell)


def _no_timing(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k != TIMING_COLUMN} for row in rows]


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of the TensorBoard events in ``folder``: {tag: [(step, value), ...]}."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})  # 0: keep every event
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def _csv_scalars(rows: list[dict[str, str]]) -> dict[str, list[tuple[int, float]]]:
    """The CSV as TensorBoard should hold it: every filled cell but the round and the timing."""
    out: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        for k, v in row.items():
            if k not in ("round", TIMING_COLUMN) and v != "":
                out.setdefault(k, []).append((int(row["round"]), float(v)))
    return out


def test_csv_rows_are_the_rounds_and_equal_the_results_curves_and_tensorboard(split, tmp_path, run_cli):
    pytest.importorskip("tensorboard")
    out = tmp_path / "out"
    code, _, err = run_cli("train", "--split", split, "--algo", "scaffold", "--rounds", "3", "--eval-every", "2",
                           *FAST, "--log", "csv,tensorboard", "--out", out)
    assert code == 0, err
    (result,) = out.rglob("*.json")
    doc = json.loads(result.read_text())
    columns, rows = _rows(rounds_csv_path(result))
    groups = doc["split"]["groups"]
    algo = sorted(doc["curves"]["algorithm"])
    assert algo == ["c_i_norm_mean", "c_norm"]  # SCAFFOLD's diagnostics
    assert columns == ["round", "train_loss", *EVAL_METRICS, *(f"group_accuracy/{g}" for g in groups),
                       *(f"algorithm/{k}" for k in algo), TIMING_COLUMN]
    curves = doc["curves"]
    assert [int(r["round"]) for r in rows] == curves["train_round"] == [1, 2, 3]
    assert [_value(r["train_loss"]) for r in rows] == curves["train_loss"]
    evaluated = {r: i for i, r in enumerate(curves["round"])}
    assert sorted(evaluated) == [2, 3]
    for row in rows:
        i = evaluated.get(int(row["round"]))
        for m in EVAL_METRICS:
            assert _value(row[m]) == (None if i is None else curves[m][i]), (row["round"], m)
        for g in groups:
            assert _value(row[f"group_accuracy/{g}"]) == (None if i is None else curves["group_accuracy"][g][i])
        for k in algo:
            assert _value(row[f"algorithm/{k}"]) == curves["algorithm"][k][int(row["round"]) - 1]
    elapsed = [float(r[TIMING_COLUMN]) for r in rows]
    assert elapsed == sorted(elapsed) and elapsed[0] >= 0

    # TensorBoard: one event folder per run, holding exactly the CSV's numbers (float32)
    tb = out / "tensorboard" / result.parent.name / result.stem
    assert tb.is_dir() and any(tb.glob("events.out.tfevents.*"))
    got, want = _scalars(tb), _csv_scalars(rows)
    assert sorted(got) == sorted(want)
    for tag, points in want.items():
        assert [s for s, _ in got[tag]] == [s for s, _ in points], tag
        assert [v for _, v in got[tag]] == pytest.approx([v for _, v in points], rel=1e-6, abs=1e-6), tag


class Killed(BaseException):
    """Stands for the process being killed in the middle of a run."""


def _kill_after(monkeypatch, round_index: int) -> None:
    """The next run dies right after round ``round_index`` has been reported (and logged)."""
    import hetbench.train.simulation as simulation

    real = simulation.run_training

    def dying(data, algo, config, *args, on_round=None, **kwargs):
        def hook(r, summary):
            on_round(r, summary)
            if r == round_index:
                raise Killed()
        return real(data, algo, config, *args, on_round=hook, **kwargs)

    monkeypatch.setattr(simulation, "run_training", dying)


def test_a_resumed_run_logs_the_rounds_of_an_uninterrupted_one_once(split, tmp_path, monkeypatch):
    """Killed after round 3 with a checkpoint at round 2: the CSV holds rounds 1-3; --resume continues at round
    3 and the CSV and TensorBoard events end with rounds 1-4, each once, as an uninterrupted run's."""
    pytest.importorskip("tensorboard")
    sinks = "csv,tensorboard"
    (whole,) = sweep(split, "fedavg", 0, CONFIG, out=tmp_path / "whole", quiet=True, threads=1, log=sinks)
    out = tmp_path / "killed"
    with monkeypatch.context() as m:
        _kill_after(m, 3)
        with pytest.raises(Killed):
            sweep(split, "fedavg", 0, CONFIG, out=out, quiet=True, threads=1, log=sinks)
    path = out / whole.path.relative_to(tmp_path / "whole")
    log = rounds_csv_path(path)
    assert not path.exists() and path.with_suffix(".ckpt").is_file()
    _, killed = _rows(log)
    assert [r["round"] for r in killed] == ["1", "2", "3"]  # flushed as the rounds happened
    (resumed,) = sweep(split, "fedavg", 0, CONFIG, out=out, quiet=True, threads=1, resume=True, log=sinks)
    assert resumed.resumed
    columns, rows = _rows(log)
    want_columns, want = _rows(rounds_csv_path(whole.path))
    assert columns == want_columns and columns[-1] == TIMING_COLUMN
    assert [r["round"] for r in rows] == ["1", "2", "3", "4"]
    assert _no_timing(rows) == _no_timing(want)  # deterministic apart from the wall clock
    assert [r[TIMING_COLUMN] for r in rows[:2]] == [r[TIMING_COLUMN] for r in killed[:2]]  # kept from the first try
    assert [_value(r["train_loss"]) for r in rows] == resumed.doc["curves"]["train_loss"]
    tb = out / "tensorboard" / path.parent.name / path.stem
    assert _scalars(tb) == _scalars(tmp_path / "whole" / "tensorboard" / path.parent.name / path.stem)
    assert all(len({s for s, _ in p}) == len(p) for p in _scalars(tb).values())  # no round twice


def _one_line_exit_2(run_cli, out: Path, *args: str) -> str:
    code, stdout, err = run_cli("train", "--rounds", "1", *FAST, "--out", out, *args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not out.exists()  # refused before anything was read, trained or written
    return err


def test_an_unknown_sink_is_refused_before_training(tmp_path, run_cli):
    err = _one_line_exit_2(run_cli, tmp_path / "out", "--log", "csv,mlflow")
    assert "--log 'mlflow' is not one of csv, tensorboard, wandb" in err


def test_a_sink_whose_package_is_missing_is_refused_before_training(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # as when it is not installed (import raises ImportError)
    err = _one_line_exit_2(run_cli, tmp_path / "out", "--log", "csv,wandb")
    assert "--log wandb needs the wandb package" in err and "pip install wandb" in err
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    err = _one_line_exit_2(run_cli, tmp_path / "out", "--log", "tensorboard")
    assert "--log tensorboard needs the tensorboard package" in err and "hetbench[tensorboard]" in err


def test_importing_hetbench_imports_neither_wandb_nor_tensorboard():
    code = ("import sys, hetbench.cli.main, hetbench.sweep, hetbench.train.simulation, hetbench.train.round_log; "
            "print(sorted(m for m in ('wandb', 'tensorboard') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_wandb_gets_one_offline_run_per_result_with_the_csv_numbers(split, tmp_path, monkeypatch):
    """A stand-in ``wandb`` module records what the sink asks of it (the real package is not installed here)."""
    calls: dict = {"log": []}

    class Run:
        def log(self, data, step):
            calls["log"].append((step, data))

        def finish(self, exit_code=0):
            calls["finish"] = exit_code

    def init(**kwargs):
        calls["init"] = kwargs
        return Run()

    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(init=init))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    out = tmp_path / "out"
    config = dataclasses.replace(CONFIG, rounds=2, checkpoint_every=None)
    (run,) = sweep(split, "fedavg", 0, config, out=out, quiet=True, threads=1, log="csv,wandb")
    init = calls["init"]
    assert init["mode"] == "offline" and Path(init["dir"]) == out  # wandb writes <out>/wandb/
    assert init["name"] == run.path.relative_to(out).with_suffix("").as_posix()
    assert init["config"]["algorithm"] == "fedavg" and init["config"]["rounds"] == 2
    _, rows = _rows(rounds_csv_path(run.path))
    want = _csv_scalars(rows)
    got: dict = {}
    for step, data in calls["log"]:
        for k, v in data.items():
            got.setdefault(k, []).append((step, v))
    assert got == want and calls["finish"] == 0

    monkeypatch.setenv("WANDB_MODE", "online")  # the user's own setting wins
    sweep(split, "fedavg", 0, config, out=out, quiet=True, threads=1, log="wandb", overwrite=True)
    assert "mode" not in calls["init"]


@pytest.mark.slow
def test_the_flower_engine_logs_the_rounds_of_the_local_engine(split, tmp_path, run_cli, monkeypatch):
    pytest.importorskip("flwr")
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        pytest.skip("a shared Ray instance is up in this process")
    monkeypatch.setenv("RAY_ADDRESS", "local")  # a Ray of its own, even while a `ray start` cluster runs here
    args = ("--split", split, "--algo", "fedavg", "--rounds", "2", *FAST, "--log", "csv")
    code, _, err = run_cli("train", *args, "--out", tmp_path / "local")
    assert code == 0, err
    code, _, err = run_cli("train", *args, "--engine", "flower", "--flower-actors", "2", "--out", tmp_path / "flower")
    assert code == 0, err
    (local,) = (tmp_path / "local").rglob("*.rounds.csv")
    (flower,) = (tmp_path / "flower").rglob("*.rounds.csv")
    assert _rows(flower)[0] == _rows(local)[0]
    assert _no_timing(_rows(flower)[1]) == _no_timing(_rows(local)[1])
    assert [r["round"] for r in _rows(flower)[1]] == ["1", "2"]
