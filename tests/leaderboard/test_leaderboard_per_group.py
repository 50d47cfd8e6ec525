"""The leaderboard's per-group table: every configuration's accuracy on each group, the test images it
rests on, their step and one run's binomial interval; absent where a split has a single group, and
not mixed with --train-groups runs."""

from __future__ import annotations

import math

import pytest

from hetbench.leaderboard.aggregate import aggregate
from hetbench.leaderboard.html import render_html
from hetbench.leaderboard.example_results import example_result
from hetbench.leaderboard.load import parse_result
from hetbench.leaderboard.per_group import binomial_half_width, per_group_table
from hetbench.leaderboard.text import render_markdown


def _run(algorithm, seed, groups, train_groups=None):
    doc = example_result(algorithm=algorithm, seed=seed, accuracy=sum(a for a, _ in groups.values()) / len(groups))
    doc["split"]["groups"] = list(groups)
    doc["groups"] = {g: {"accuracy": a, "num_test": n} for g, (a, n) in groups.items()}
    if train_groups is not None:
        doc["config"]["train_groups"] = train_groups
    return parse_result(doc)


def test_the_table_shows_each_groups_accuracy_with_its_test_images_and_interval():
    runs = [_run("fedavg", s, {"baseline": (80.0 + s, 42), "wb=none": (50.0 - s, 42)}) for s in (0, 2)]
    runs += [_run("heteroswitch", 0, {"baseline": (78.0, 42), "wb=none": (64.0, 42)})]
    (table,) = aggregate(runs, statistic="final")
    md = render_markdown([table])
    assert "### Accuracy per group" in md
    assert "| group | test images | step | ± one run | fedavg | heteroswitch |" in md
    assert "| baseline | 42 | 2.38 | 15.1 | 81.00 ± 1.41 | 78.00 |" in md
    assert "| wb=none | 42 | 2.38 | 15.1 | 49.00 ± 1.41 | 64.00 |" in md
    assert "Accuracy per group" in render_html([table]) and "<td>15.1</td>" in render_html([table])


@pytest.mark.parametrize("n", [1, 10, 42, 105, 10000])
def test_the_interval_is_the_widest_binomial_half_width_of_one_run(n):
    """196 sqrt(0.25 / n) points: p = 0.5 maximises p (1 - p)."""
    assert binomial_half_width(n) == pytest.approx(100 * 1.96 * math.sqrt(0.5 * 0.5 / n))
    assert all(binomial_half_width(n) >= 100 * 1.96 * math.sqrt(p * (1 - p) / n) for p in (0.1, 0.3, 0.7, 0.99))


def test_no_table_for_one_group_and_train_groups_runs_stay_out_of_it():
    (single,) = aggregate([_run("fedavg", 0, {"all": (70.0, 100)})], statistic="final")
    assert per_group_table(single) is None and "Accuracy per group" not in render_markdown([single])
    runs = [_run("fedavg", 0, {"a": (80.0, 30), "b": (60.0, 30)}),
            _run("fedavg", 0, {"a": (85.0, 30), "b": (40.0, 30)}, train_groups=["a"])]
    (table,) = aggregate(runs, statistic="final")
    pg = per_group_table(table)
    assert len(pg.labels) == 1 and pg.cells[(pg.labels[0], "b")].mean == 60.0
