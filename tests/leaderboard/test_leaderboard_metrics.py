"""The columns: names, directions, number formats and ``--rank-by``."""

from __future__ import annotations

import pytest

from hetbench.errors import HetbenchError
from hetbench.leaderboard import metrics


def test_every_metric_has_a_unique_name_and_the_default_rank_is_one_of_them():
    assert len(set(metrics.METRIC_NAMES)) == len(metrics.METRICS)
    assert metrics.DEFAULT_RANK_BY in metrics.METRIC_NAMES
    assert metrics.FINAL_METRICS == tuple(n for n in metrics.METRIC_NAMES if n not in ("wall_time_s", "parameters", "macs"))
    assert set(metrics.PER_EVALUATION) == {"accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance",
                                           "trained_on_accuracy", "unseen_accuracy", "mean_drop"}
    assert metrics.DEFAULT_STATISTIC == "last-k" and set(metrics.STATISTICS) == {"last-k", "best", "final"}
    assert {key for key, _ in metrics.CURVES} <= set(metrics.METRIC_NAMES)


@pytest.mark.parametrize("x, text", [(0.5, "0.5"), (890, "890"), (1000, "1K"), (1234567, "1.23M"), (2.5e9, "2.5G"), (3e12, "3T")])
def test_counts_are_shortened(x, text):
    assert metrics.fmt_count(x) == text


def test_a_seconds_std_follows_its_mean():
    wall = metrics.METRIC_BY_NAME["wall_time_s"]
    assert (wall.fmt(9.999), wall.fmt(10.0)) == ("10.00", "10.0")
    assert wall.format_std(5.0, 12.34) == "12.34" and wall.format_std(50.0, 1.234) == "1.2"
    assert metrics.METRIC_BY_NAME["relative_accuracy"].format_std(0.9, 0.01234) == "0.012"


def test_directions():
    lower = {m.name for m in metrics.METRICS if not m.higher_is_better}
    assert lower == {"group_accuracy_variance", "rounds_to_target", "wall_time_s", "parameters", "macs", "mean_drop"}
    assert {m.arrow for m in metrics.METRICS} == {"↑", "↓"}


def test_unknown_rank_by_lists_every_name():
    with pytest.raises(HetbenchError) as exc:
        metrics.check_rank_by("speed")
    assert all(name in str(exc.value) for name in metrics.METRIC_NAMES)
