"""Markdown and CSV: the best mean in bold (not in the CSV), the tidy CSV."""

from __future__ import annotations

import json
import math

import pytest

from hetbench import leaderboard as lb
from leaderboard_results import FP_A, FP_B, result, write, tables_of, read_csv


def test_best_mean_is_bold_in_markdown_and_html_not_csv(tmp_path):
    write(tmp_path, "a.json", result(algorithm="alpha", final={"accuracy": 91.0, "group_accuracy_variance": 2.5}, wall_time_s=30.0))
    write(tmp_path, "b.json", result(algorithm="beta", final={"accuracy": 88.0, "group_accuracy_variance": 7.5}, wall_time_s=12.0))
    tables = tables_of(tmp_path)
    md = lb.render_markdown(tables)
    alpha = next(line for line in md.splitlines() if "| alpha |" in line)
    beta = next(line for line in md.splitlines() if "| beta |" in line)
    assert "**91.00**" in alpha and "**88.00**" not in beta
    assert "**2.50**" in alpha and "**7.50**" not in beta  # variance: lower is better
    assert "**12.0**" not in beta and "**30.0**" not in alpha  # wall time of one seed: no spread, no best
    # a column where every row has the same mean has no best (issue 31): nothing is bold there
    assert "**85.00**" not in alpha and "**85.00**" not in beta
    page = lb.render_html(tables)
    # the HTML's compact cells: one decimal for percentages and variances under 100
    assert "<b>91.0</b>" in page and "<b>88.0</b>" not in page and "<b>2.5</b>" not in page.replace("<b>2.5</b>", "", 1)
    assert "**" not in lb.render_csv(tables) and "<b>" not in lb.render_csv(tables)


def test_csv_is_tidy_and_readable(tmp_path, run_lb):
    res = tmp_path / "results"
    write(res, "a.json", result(algorithm="fedavg", final={"accuracy": 80.0}))
    write(res, "b.json", result(algorithm="fedavg", final={"accuracy": 84.0}, seed=1))
    write(res, "c.json", result(algorithm="fedprox", params={"mu": 0.1}))
    write(res, "d.json", result(split="digits", fingerprint=FP_B))
    assert run_lb(res, "--out", tmp_path / "lb")[0] == 0
    rows = read_csv(tmp_path / "lb" / "leaderboard.csv")
    assert len(rows) == 3
    for col in ["split", "fingerprint", "rank", "algorithm", "seeds"] + [f"{m}_{s}" for m in lb.METRIC_NAMES for s in ("mean", "std")]:
        assert col in rows[0]
    fedavg = next(r for r in rows if r["algorithm"] == "fedavg" and r["split"] == "iso-isp-wb-tone")
    assert fedavg["fingerprint"] == FP_A and fedavg["seeds"] == "2"
    assert float(fedavg["accuracy_mean"]) == 82.0 and float(fedavg["accuracy_std"]) == pytest.approx(math.sqrt(8))
    fedprox = next(r for r in rows if r["algorithm"] == "fedprox")
    assert fedprox["accuracy_std"] == "" and json.loads(fedprox["params"]) == {"mu": 0.1}
    assert {r["rank"] for r in rows if r["split"] == "iso-isp-wb-tone"} == {"1", "2"}


def test_wall_time_is_bold_only_when_its_difference_exceeds_the_spread(tmp_path):
    """Shared cores make wall time vary run to run: the fastest row is bold only when its mean ± std over seeds is
    apart from every other row's (issue 48)."""
    def board(times_b):
        folder = tmp_path / str(times_b)
        for seed, (ta, tb) in enumerate(zip([30.0, 32.0, 31.0], times_b)):
            write(folder, f"a{seed}.json", result(algorithm="alpha", seed=seed, wall_time_s=ta))
            write(folder, f"b{seed}.json", result(algorithm="beta", seed=seed, wall_time_s=tb))
        md = lb.render_markdown(tables_of(folder))
        return next(line for line in md.splitlines() if "| beta |" in line)

    assert "**12.0**" in board([11.0, 13.0, 12.0])  # 12 ± 1 against 31 ± 1: apart
    assert "**" not in board([20.0, 40.0, 12.0]).split("|")[-4]  # 24 ± 14.4 overlaps 31 ± 1: no best
