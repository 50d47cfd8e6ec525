"""--statistic: ranking by the mean of the last k evaluations, the best one or the final one; schema 1 and 2."""

from __future__ import annotations

import pytest

from hetbench import leaderboard as lb
from hetbench.errors import HetbenchError
from leaderboard_results import read_csv, result, result_v2, row, tables_of, write

ROUNDS = [1, 2, 3, 4, 5, 6]
# "spiky" peaks early and collapses in its last round (the embedded demo's central run: 58 % -> 18 %);
# "steady" climbs and stays: best ranks spiky first, final and last-k rank steady first
SPIKY = [30.0, 45.0, 58.0, 52.0, 50.0, 18.0]
STEADY = [20.0, 30.0, 40.0, 44.0, 46.0, 47.0]


def _curves(acc: list[float]) -> dict:
    return {"round": ROUNDS, "accuracy": acc, "client_accuracy": [None] * len(acc),
            "worst_group_accuracy": [a - 5.0 for a in acc], "group_accuracy_variance": [4.0] * len(acc),
            "loss": [1.0] * len(acc), "group_accuracy": {"a": acc}}


@pytest.fixture(params=[1, 2], ids=["schema1", "schema2"])
def folder(request, tmp_path):
    """spiky and steady with two seeds each, as schema-1 files (statistics from curves) or schema-2 files, in
    ``tmp_path/results`` (a leaderboard's --out may not lie inside it)."""
    for seed, shift in ((0, 0.0), (1, 2.0)):
        for name, acc in (("spiky", SPIKY), ("steady", STEADY)):
            curves = _curves([a + shift for a in acc])
            if request.param == 2:
                data = result_v2(curves, algorithm=name, seed=seed)
            else:
                data = result(algorithm=name, seed=seed, curves=curves,
                              final={"accuracy": curves["accuracy"][-1],
                                     "worst_group_accuracy": curves["worst_group_accuracy"][-1]})
            write(tmp_path / "results", f"{name}-s{seed}.json", data)
    return tmp_path / "results"


def test_each_statistic_ranks_its_own_way(folder):
    (t,) = tables_of(folder, "accuracy", "last-k")
    assert [r.label for r in t.rows] == ["steady", "spiky"] and t.statistic == "last-k" and t.last_k == [3]
    assert row(t, "spiky").stats["accuracy"].mean == pytest.approx((52 + 50 + 18) / 3 + 1.0)
    assert row(t, "steady").stats["worst_group_accuracy"].mean == pytest.approx((44 + 46 + 47) / 3 - 5.0 + 1.0)
    (t,) = tables_of(folder, "accuracy", "best")
    assert [r.label for r in t.rows] == ["spiky", "steady"]
    assert row(t, "spiky").stats["accuracy"].mean == 59.0 and row(t, "spiky").stats["accuracy"].std == pytest.approx(2 ** 0.5)
    (t,) = tables_of(folder, "accuracy", "final")
    assert [r.label for r in t.rows] == ["steady", "spiky"]
    assert row(t, "spiky").stats["accuracy"].mean == 19.0
    # the default: mean of the last k
    assert [r.label for r in tables_of(folder)[0].rows] == ["steady", "spiky"]


def test_the_default_is_the_mean_of_the_last_k():
    assert lb.DEFAULT_STATISTIC == "last-k"


def test_every_output_says_which_statistic_and_metric_rank(folder, tmp_path, run_lb):
    out = tmp_path / "lb"
    code, stdout, _ = run_lb(folder, "--out", out, "--rank-by", "accuracy")
    assert code == 0
    assert "ranked by accuracy, mean of the last 3 evaluations" in stdout
    md = (out / "leaderboard.md").read_text()
    assert "Ranked by accuracy, mean of the last 3 evaluations (higher is better)." in md
    html = (out / "leaderboard.html").read_text()
    assert "Ranked by accuracy, mean of the last 3 evaluations (higher is better)." in html
    assert "each seed&#x27;s mean of the last 3 evaluations" in html  # the per-evaluation columns' tooltips
    rows = read_csv(out / "leaderboard.csv")
    assert {(r["rank_by"], r["statistic"], r["last_k"]) for r in rows} == {("accuracy", "last-k", "3")}
    assert [r["algorithm"] for r in rows] == ["steady", "spiky"]
    code, stdout, _ = run_lb(folder, "--out", out, "--rank-by", "accuracy", "--statistic", "best", "--overwrite")
    assert code == 0 and "ranked by accuracy, best evaluation" in stdout
    rows = read_csv(out / "leaderboard.csv")
    assert [r["algorithm"] for r in rows] == ["spiky", "steady"] and rows[0]["statistic"] == "best"
    assert float(rows[0]["accuracy_mean"]) == 59.0
    assert "Ranked by accuracy, best evaluation" in (out / "leaderboard.md").read_text()


def test_a_non_per_evaluation_rank_metric_names_the_columns_statistic(folder):
    (t,) = tables_of(folder, "wall_time_s", "best")
    line = lb.render_markdown([t])
    assert "Ranked by wall_time_s (lower is better). Accuracy, client acc., worst group and group var. are each seed's best evaluation" in line


def test_fewer_evaluations_than_k_say_the_k_used(tmp_path):
    write(tmp_path, "a.json", result_v2(_curves(SPIKY), algorithm="long", last_k=3))
    short = {k: (v[:2] if isinstance(v, list) else {g: c[:2] for g, c in v.items()}) for k, v in _curves(STEADY).items()}
    write(tmp_path, "b.json", result_v2(short, algorithm="short", last_k=3))
    (t,) = tables_of(tmp_path, "accuracy")
    assert t.last_k == [2, 3]
    assert row(t, "short").stats["accuracy"].mean == 25.0  # both of its two evaluations
    assert "mean of the last k evaluations (k = 2, 3)" in lb.render_markdown([t])


def test_unknown_statistic_is_exit_2(tmp_path, run_lb):
    write(tmp_path / "r", "a.json", result())
    code, _, stderr = run_lb(tmp_path / "r", "--out", tmp_path / "lb", "--statistic", "median")
    assert code == 2 and "median" in stderr and not (tmp_path / "lb").exists()
    with pytest.raises(HetbenchError, match="unknown statistic 'median'"):
        lb.build(tmp_path / "r", "accuracy", "median")


def test_schema_1_without_curves_has_no_statistic_but_its_final_values(tmp_path):
    write(tmp_path, "a.json", result(curves={}, final={"accuracy": 70.0}))
    (t,) = tables_of(tmp_path, "accuracy", "last-k")
    assert t.rows[0].stats["accuracy"].mean is None and t.rows[0].rank is None
    (t,) = tables_of(tmp_path, "accuracy", "final")
    assert t.rows[0].stats["accuracy"].mean == 70.0 and t.rows[0].rank == 1


def test_schema_2_values_are_read_from_final_not_recomputed(tmp_path):
    data = result_v2(_curves(SPIKY), algorithm="a")
    data["final"]["last_k"]["accuracy"] = 12.5  # what the document says wins
    write(tmp_path, "a.json", data)
    (t,) = tables_of(tmp_path, "accuracy")
    assert t.rows[0].stats["accuracy"].mean == 12.5
    data["final"]["best"]["accuracy"] = {"value": "high", "round": 3}
    write(tmp_path, "b.json", {**data, "algorithm": {"name": "b", "params": {}}})
    skipped = lb.load_results(tmp_path).skipped
    assert [(s.path, s.reason) for s in skipped] == [("b.json", "final.best.accuracy.value is not a number")]
