"""Aggregation: mean and sample std over seeds, mean curves, relative accuracy, labels, split keys."""

from __future__ import annotations

import math

import pytest

from hetbench import leaderboard as lb
from leaderboard_results import FP_A, FP_B, result, write, tables_of, row


def test_mean_and_sample_std_over_seeds(tmp_path):
    for seed, acc in enumerate([80.0, 82.0, 84.0]):
        write(tmp_path, f"fedavg/s{seed}.json", result(seed=seed, final={"accuracy": acc}))
    write(tmp_path, "fedprox/s0.json", result(algorithm="fedprox", params={"mu": 0.1}, final={"accuracy": 70.0}))
    (t,) = tables_of(tmp_path)
    s = row(t, "fedavg").stats["accuracy"]
    assert s.n == 3 and s.mean == pytest.approx(82.0) and s.std == pytest.approx(2.0)  # ddof=1
    assert row(t, "fedavg").stats["worst_group_accuracy"].std == pytest.approx(0.0)
    one = row(t, "fedprox").stats["accuracy"]
    assert one.mean == 70.0 and one.std is None
    md = lb.render_markdown([t])
    assert "**82.00** ± 2.00" in md  # best mean bold, std plain
    fedprox_line = next(line for line in md.splitlines() if "| fedprox |" in line)
    assert "70.00" in fedprox_line and "70.00 ±" not in fedprox_line  # one seed: the mean alone
    assert len(row(t, "fedavg").results) == 3


def test_mean_curves_over_seeds(tmp_path):
    write(tmp_path, "a.json", result(seed=0, curves={"round": [1, 2], "accuracy": [10.0, 20.0]}))
    write(tmp_path, "b.json", result(seed=1, curves={"round": [1, 2], "accuracy": [30.0, None]}))
    (t,) = tables_of(tmp_path)
    rounds, mean = t.rows[0].curves["accuracy"]
    assert rounds == [1.0, 2.0] and mean == [20.0, 20.0]
    assert "worst_group_accuracy" not in t.rows[0].curves


def test_relative_accuracy_from_the_central_run_per_seed(tmp_path):
    write(tmp_path, "c0.json", result(algorithm="central", seed=0, final={"accuracy": 100.0}))
    write(tmp_path, "c1.json", result(algorithm="central", seed=1, final={"accuracy": 80.0}))
    write(tmp_path, "f0.json", result(algorithm="fedavg", seed=0, final={"accuracy": 90.0}))
    write(tmp_path, "f1.json", result(algorithm="fedavg", seed=1, final={"accuracy": 76.0}))
    write(tmp_path, "f2.json", result(algorithm="fedavg", seed=2, final={"accuracy": 50.0}))  # no central seed 2
    write(tmp_path, "p0.json", result(algorithm="fedprox", seed=0, final={"accuracy": 90.0, "relative_accuracy": 0.5}))  # given: kept
    (t,) = tables_of(tmp_path, statistic="final")
    rel = row(t, "fedavg").stats["relative_accuracy"]
    assert rel.n == 2 and rel.mean == pytest.approx((0.90 + 0.95) / 2)
    assert rel.std == pytest.approx(math.sqrt(2) * 0.025)
    assert row(t, "central").stats["relative_accuracy"].mean == pytest.approx(1.0)
    assert row(t, "fedprox").stats["relative_accuracy"].mean == 0.5
    assert t.reference == "central"
    # another statistic: the given (final-round) ratio does not apply, both accuracies take the statistic
    (t,) = tables_of(tmp_path, statistic="best")
    assert row(t, "fedprox").stats["relative_accuracy"].mean == pytest.approx(0.9)
    assert row(t, "fedavg").stats["relative_accuracy"].mean == pytest.approx((0.90 + 0.95) / 2)


def test_relative_accuracy_needs_a_central_run_of_the_same_split(tmp_path):
    write(tmp_path, "c0.json", result(algorithm="central", fingerprint=FP_B, final={"accuracy": 100.0}))
    write(tmp_path, "f0.json", result(algorithm="fedavg", final={"accuracy": 90.0}))
    tables = tables_of(tmp_path)
    assert len(tables) == 2
    fedavg_table = next(t for t in tables if t.fingerprint == FP_A)
    assert fedavg_table.rows[0].stats["relative_accuracy"].mean is None


def test_two_configurations_of_one_algorithm_get_distinct_labels(tmp_path):
    write(tmp_path, "a.json", result(algorithm="fedprox", params={"mu": 0.01}))
    write(tmp_path, "b.json", result(algorithm="fedprox", params={"mu": 0.1}))
    write(tmp_path, "c.json", result(algorithm="fedprox", params={"mu": 0.1}, config={"lr": 0.01}))
    write(tmp_path, "d.json", result(algorithm="fedavg", config={"lr": 0.01}))
    write(tmp_path, "e.json", result(algorithm="fedavg", config={"lr": 0.01}, seed=1))  # same configuration, other seed
    (t,) = tables_of(tmp_path)
    labels = sorted(r.label for r in t.rows)
    assert labels == ["fedavg", "fedprox (mu=0.01, lr=0.05)", "fedprox (mu=0.1, lr=0.01)", "fedprox (mu=0.1, lr=0.05)"]
    assert len(row(t, "fedavg").results) == 2


def test_splits_are_keyed_by_name_and_fingerprint(tmp_path):
    write(tmp_path, "a.json", result(fingerprint=FP_A))
    write(tmp_path, "b.json", result(fingerprint=FP_B))
    write(tmp_path, "c.json", result(split="digits", fingerprint=FP_B))
    tables = tables_of(tmp_path)
    assert sorted(t.title for t in tables) == ["digits", "iso-isp-wb-tone (3fa20000)", "iso-isp-wb-tone (9c1d1111)"]
