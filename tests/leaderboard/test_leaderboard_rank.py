"""Ranking: direction, ties, null rank metrics last, unknown --rank-by."""

from __future__ import annotations

import csv

import pytest

from hetbench import leaderboard as lb
from hetbench.errors import HetbenchError
from leaderboard_results import result, write, tables_of, row


def test_rank_direction_higher_and_lower_is_better(tmp_path):
    write(tmp_path, "a.json", result(algorithm="alpha", final={"worst_group_accuracy": 70.0, "group_accuracy_variance": 1.0}))
    write(tmp_path, "b.json", result(algorithm="beta", final={"worst_group_accuracy": 80.0, "group_accuracy_variance": 9.0}))
    write(tmp_path, "c.json", result(algorithm="gamma", final={"worst_group_accuracy": 75.0, "group_accuracy_variance": 4.0}))
    (t,) = tables_of(tmp_path)  # default: worst_group_accuracy, higher is better
    assert [r.label for r in t.rows] == ["beta", "gamma", "alpha"]
    assert [r.rank for r in t.rows] == [1, 2, 3]
    (t,) = tables_of(tmp_path, "group_accuracy_variance")  # lower is better
    assert [r.label for r in t.rows] == ["alpha", "gamma", "beta"]
    (t,) = tables_of(tmp_path, "wall_time_s")
    assert t.rank_by == "wall_time_s"


def test_ties_broken_by_accuracy_then_name(tmp_path):
    write(tmp_path, "1.json", result(algorithm="zeta", final={"worst_group_accuracy": 80.0, "accuracy": 90.0}))
    write(tmp_path, "2.json", result(algorithm="eta", final={"worst_group_accuracy": 80.0, "accuracy": 92.0}))
    write(tmp_path, "3.json", result(algorithm="beta", final={"worst_group_accuracy": 80.0, "accuracy": 90.0}))
    write(tmp_path, "4.json", result(algorithm="alpha", final={"worst_group_accuracy": 60.0, "accuracy": 99.0}))
    (t,) = tables_of(tmp_path)
    assert [r.label for r in t.rows] == ["eta", "beta", "zeta", "alpha"]
    assert [r.rank for r in t.rows] == [1, 2, 3, 4]


def test_nulls_ignored_all_null_dash_and_null_rank_metric_last(tmp_path):
    write(tmp_path, "a0.json", result(algorithm="alpha", seed=0, final={"client_accuracy_p10": None, "worst_group_accuracy": 70.0}))
    write(tmp_path, "a1.json", result(algorithm="alpha", seed=1, final={"client_accuracy_p10": 60.0, "worst_group_accuracy": 72.0}))
    write(tmp_path, "b0.json", result(algorithm="beta", seed=0, final={"worst_group_accuracy": None, "accuracy": 99.0}))
    write(tmp_path, "c0.json", result(algorithm="gamma", seed=0, final={"worst_group_accuracy": 50.0}))
    (t,) = tables_of(tmp_path)
    assert [r.label for r in t.rows] == ["alpha", "gamma", "beta"]
    assert row(t, "beta").rank is None
    p10 = row(t, "alpha").stats["client_accuracy_p10"]
    assert p10.mean == 60.0 and p10.std is None and p10.n == 1
    assert row(t, "alpha").stats["rounds_to_target"].mean is None
    md = lb.render_markdown([t])
    beta = next(line for line in md.splitlines() if "| beta |" in line)
    assert beta.startswith("| — | beta |")
    alpha = next(line for line in md.splitlines() if "| alpha |" in line)
    assert "—" in alpha  # rounds_to_target all null
    rows = list(csv.DictReader(lb.render_csv([t]).splitlines()))
    beta_csv = next(r for r in rows if r["algorithm"] == "beta")
    assert beta_csv["rank"] == "" and beta_csv["worst_group_accuracy_mean"] == "" and beta_csv["rounds_to_target_mean"] == ""


def test_unknown_rank_by_lists_valid_names():
    with pytest.raises(HetbenchError, match="worst_group_accuracy"):
        lb.check_rank_by("speed")
