"""Written to a file or a pipe (nohup, SLURM, CI), a long step prints a plain progress line at every tenth of
its steps and every LOG_EVERY seconds, with its count, share, rate and ETA (issue 31, item 2); a short step
prints only its final line, so a failing one leaves just the error."""

from __future__ import annotations

import subprocess
import sys

import hetbench.progress as progress


def test_a_long_step_logs_each_tenth_with_count_share_rate_and_eta(monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_AFTER", 0.0)
    with progress.progress_bar("rendering", 40, quiet=False, unit="capture") as bar:
        for _ in range(40):
            bar.update(1, status="ok")
    lines = capsys.readouterr().err.splitlines()
    logged = [line for line in lines if line.startswith("rendering: ")]
    assert [line.split("(")[1].split(")")[0] for line in logged] == [f"{p}%" for p in range(10, 100, 10)]
    assert all("capture" in line and "/s" in line and "eta " in line and "elapsed " in line for line in logged)
    assert "40/40" in lines[-1]  # and the final line once


def test_the_interval_logs_a_step_without_a_known_total(monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_AFTER", 0.0)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    with progress.progress_bar("reading", None, quiet=False) as bar:
        for _ in range(3):
            bar.update(1)
    logged = [line for line in capsys.readouterr().err.splitlines() if line.startswith("reading: ")]
    assert [line.split("  ")[0] for line in logged] == ["reading: 1/?", "reading: 2/?", "reading: 3/?"]


def test_a_short_step_prints_only_its_final_line_to_a_file(tmp_path):
    code = ("from hetbench.progress import progress_bar\n"
            "with progress_bar('short', 10, quiet=False) as bar:\n"
            "    [bar.update(1) for _ in range(10)]\n")
    with open(tmp_path / "log.txt", "w") as log:
        subprocess.run([sys.executable, "-c", code], stderr=log, check=True, timeout=60)
    lines = (tmp_path / "log.txt").read_text().splitlines()
    assert len(lines) == 1 and "10/10" in lines[0]
