"""Progress of ``hetbench train``: each run's bar shows the round, the latest training loss and test accuracy
and an ETA on stderr; ``--quiet`` prints nothing there; the bars change no result."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from hetbench.progress import (
    count_text,
    eta_seconds,
    format_duration,
    is_quiet,
    progress_bar,
    show_progress,
    train_status,
)

FAST = ("--rounds", "2", "--clients-per-round", "3", "--batch-size", "16", "--threads", "1")


def test_train_status_and_eta_formatting():
    assert train_status({"train_loss": 0.41234, "accuracy": 81.25}) == "loss 0.412  acc 81.2%"
    assert train_status({"train_loss": 2.5, "accuracy": None}) == "loss 2.500"
    assert train_status({"accuracy": 100.0}) == "acc 100.0%"
    assert train_status({}) == ""
    assert count_text(12, 50, "round") == "round 12/50" and count_text(1234, 5000) == "1,234/5,000"
    assert format_duration(20.0) == "0:00:20" and format_duration(3600 * 2 + 61) == "2:01:01"
    assert format_duration(None) == format_duration(float("nan")) == "-:--:--"
    # recent speed when rich has one, else the average so far (a round slower than rich's window)
    assert eta_seconds(50, 12, 24.0) == pytest.approx(76.0)
    assert eta_seconds(50, 12, 24.0, speed=0.25) == pytest.approx(152.0)
    assert eta_seconds(50, 0, 5.0) is None and eta_seconds(None, 3, 5.0) is None and eta_seconds(5, 5, 1.0) == 0.0


def test_bar_line_has_round_loss_accuracy_and_eta(capsys):
    with progress_bar("fedavg s0", 50, quiet=False, unit="round") as bar:
        bar.update(advance=1, status=train_status({"train_loss": 0.9}))
        time.sleep(0.02)
        bar.update(advance=11, status=train_status({"train_loss": 0.41234, "accuracy": 81.25}))
    out, err = capsys.readouterr()
    assert out == ""  # bars go to stderr only
    (line,) = [x for x in err.splitlines() if x.strip()]  # not a terminal: the final state, once
    assert re.search(r"fedavg s0 .*round 12/50 +loss 0\.412  acc 81\.2% +\d:\d\d:\d\d +eta \d:\d\d:\d\d$", line.rstrip()), line


def test_quiet_and_default_bars_print_nothing(capsys):
    for quiet in (True, None):  # None: silent outside show_progress
        with progress_bar("x", 3, quiet=quiet) as bar:
            bar.update(advance=3, status="loss 1.000")
            bar.finish()
    assert capsys.readouterr() == ("", "")
    with show_progress():
        assert not is_quiet(None) and is_quiet(True)
        with show_progress(False):
            assert is_quiet(None)
    assert is_quiet(None)


def test_nested_bar_is_a_line_of_the_open_display(capsys):
    with progress_bar("outer", 2, quiet=False) as outer:
        with progress_bar("inner", 5, quiet=False) as inner:  # no 'only one live display' error
            inner.update(advance=5)
        outer.update(advance=2)
    err = capsys.readouterr().err
    assert "outer" in err and "2/2" in err and "inner" not in err  # the inner line is gone when it closes



def _docs(folder: Path) -> dict[str, dict]:
    docs = {}
    for p in sorted(folder.rglob("*.json")):
        doc = json.loads(p.read_text())
        doc.pop("timing")
        docs[p.name] = doc
    return docs


def test_train_bars_on_stderr_quiet_silent_and_results_unchanged(digits_split, tmp_path, run_cli):
    code, out, err = run_cli("train", "--split", digits_split, "--algo", "fedavg,fedprox", *FAST, "--out", tmp_path / "a")
    assert code == 0, err
    for algo in ("fedavg", "fedprox"):  # stderr is not a terminal here: each run's final line, once
        (line,) = [x for x in err.splitlines() if x.startswith(f"{algo} s0 ")]
        assert re.search(r"round 2/2 +loss \d+\.\d{3}  acc \d+\.\d%", line), line
    assert "round 2/2" not in out and "loss" not in out  # stdout has the summary table only
    code, out_q, err_q = run_cli("train", "--split", digits_split, "--algo", "fedavg,fedprox", *FAST, "-q",
                                 "--out", tmp_path / "b")
    assert code == 0 and err_q == "" and out_q == ""
    assert _docs(tmp_path / "a") == _docs(tmp_path / "b")  # the bars change no result
