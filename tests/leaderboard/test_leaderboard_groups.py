"""Group protocols in the leaderboard: train/test groups keep rows apart and show in labels; group tables."""

from __future__ import annotations

import csv

import pytest

from hetbench import leaderboard as lb
from leaderboard_results import result_v2, row, tables_of, write

GROUPS = ("a", "b", "c")
BASE = {"a": 90.0, "b": 80.0, "c": 60.0}


def _run(train_groups: list[str] | None, accs: dict[str, float], seed: int = 0, algorithm: str = "fedavg",
         params: dict | None = None) -> dict:
    """One evaluation (round 1) with the given per-group accuracies, 100 test rows each."""
    acc = sum(accs.values()) / len(accs)
    curves = {"round": [1], "accuracy": [acc], "client_accuracy": [None], "worst_group_accuracy": [min(accs.values())],
              "group_accuracy_variance": [0.0], "loss": [1.0], "group_accuracy": {g: [v] for g, v in accs.items()}}
    return result_v2(curves, train_groups=train_groups, seed=seed, algorithm=algorithm, params=params)


def _logo(folder, seeds=(0, 1), algorithm="fedavg", params=None):
    """Leave-one-group-out: the held-out group loses 30 points (seed 1: 32)."""
    for seed in seeds:
        for held in GROUPS:
            accs = dict(BASE)
            accs[held] -= 30.0 + 2.0 * seed
            write(folder, f"{algorithm}{params or ''}/{held}-s{seed}.json",
                  _run([g for g in GROUPS if g != held], accs, seed, algorithm, params))


def test_train_groups_keep_rows_apart_and_show_in_labels(tmp_path):
    write(tmp_path, "all.json", _run(None, BASE))
    write(tmp_path, "ab.json", _run(["a", "b"], BASE))
    write(tmp_path, "bc.json", _run(["b", "c"], BASE))
    write(tmp_path, "solo.json", _run(["a"], BASE, algorithm="fedprox"))
    (t,) = tables_of(tmp_path)
    assert sorted(r.label for r in t.rows) == [
        "fedavg (train_groups=a+b)", "fedavg (train_groups=all)", "fedavg (train_groups=b+c)",
        "fedprox (train_groups=a)",  # shown although no other fedprox row differs
    ]
    assert all(len(r.results) == 1 for r in t.rows)


def test_protocol_columns_only_where_a_row_has_them(tmp_path):
    write(tmp_path, "all.json", _run(None, BASE))
    (t,) = tables_of(tmp_path)
    assert "mean drop" not in lb.render_markdown([t]) and "unseen acc." not in lb.render_html([t])
    write(tmp_path, "a.json", _run(["a"], BASE))
    (t,) = tables_of(tmp_path)
    md = lb.render_markdown([t])
    main, groups = md.split("Trained on some groups only")[:2]
    assert "trained-on acc. ↑" not in main  # the main table ranks runs on every client only
    assert "trained-on acc. ↑" in groups and "unseen acc. ↑" in groups and "mean drop ↓" in groups
    assert "fedavg (train_groups=a)" in groups and "fedavg (train_groups=a)" not in main
    r = row(t, "fedavg (train_groups=a)")
    assert r.stats["trained_on_accuracy"].mean == 90.0
    assert r.stats["unseen_accuracy"].mean == 70.0  # b and c pooled (100 rows each)
    assert r.stats["mean_drop"].mean == pytest.approx(((90 - 80) + (90 - 60)) / 2)
    csv_rows = {c["algorithm"]: c for c in csv.DictReader(lb.render_csv([t]).splitlines())}
    assert float(csv_rows["fedavg (train_groups=a)"]["mean_drop_mean"]) == pytest.approx(20.0)
    assert csv_rows["fedavg (train_groups=all)"]["mean_drop_mean"] == ""


def test_rank_by_mean_drop(tmp_path):
    write(tmp_path, "good.json", _run(["a"], {"a": 90.0, "b": 88.0, "c": 86.0}, algorithm="good"))
    write(tmp_path, "bad.json", _run(["a"], {"a": 95.0, "b": 60.0, "c": 50.0}, algorithm="bad"))
    (t,) = tables_of(tmp_path, "mean_drop")
    assert [r.label.split(" ")[0] for r in t.rows] == ["good", "bad"]  # lower drop is better


def test_leave_one_group_out_table_per_algorithm(tmp_path):
    _logo(tmp_path)
    _logo(tmp_path, seeds=(0,), algorithm="fedprox", params={"mu": 0.1})
    (t,) = tables_of(tmp_path)
    tables = lb.group_tables(t)
    assert [(g.kind, g.label) for g in tables] == [("leave-one-group-out", "fedavg"),
                                                   ("leave-one-group-out", "fedprox")]
    fedavg = tables[0]
    lines = {x.group: x for x in fedavg.lines}
    assert list(lines) == ["a", "b", "c", "mean"]
    # held out a: seed 0 60 (trained b+c pooled 70, drop 10), seed 1 58 (drop 12)
    assert lines["a"].accuracy.mean == 59.0 and lines["a"].drop.mean == 11.0 and lines["a"].seeds == 2
    assert lines["a"].drop.std == pytest.approx(2 ** 0.5)
    assert lines["a"].trained_on_accuracy.mean == 70.0
    # held out c: 30 / 28 against a+b pooled 85
    assert lines["c"].accuracy.mean == 29.0 and lines["c"].drop.mean == 56.0
    assert lines["mean"].accuracy.mean == pytest.approx((59.0 + 49.0 + 29.0) / 3)
    md = lb.render_markdown([t])
    assert "### Leave one group out: fedavg" in md and "### Leave one group out: fedprox" in md
    assert "| held-out group | seeds | accuracy ↑ | drop ↓ | trained-on acc. ↑ |" in md
    assert "| a | 2 | 59.00 ± 1.41 | 11.00 ± 1.41 | 70.00 ± 0.00 |" in md
    assert "| mean | 2 | 45.67 ± 15.28 | 31.00 ± 22.91 | 76.67 ± 7.64 |" in md  # ± std over the held-out groups
    html = lb.render_html([t])
    assert "<h3>Leave one group out: fedavg</h3>" in html and "<td>59.00 ± 1.41</td>" in html


def test_train_on_the_baseline_table(tmp_path):
    """HeteroSwitch Fig. 3: train on the baseline ISP, test on each variant."""
    write(tmp_path, "fig3.json", _run(["a"], BASE))
    write(tmp_path, "fig3-s1.json", _run(["a"], {"a": 92.0, "b": 80.0, "c": 58.0}, seed=1))
    (t,) = tables_of(tmp_path)
    (gt,) = lb.group_tables(t)
    assert gt.kind == "train-groups" and gt.train_groups == ["a"]
    lines = {x.group: x for x in gt.lines}
    assert lines["a"].trained_on and not lines["b"].trained_on
    assert lines["a"].drop.mean == 0.0 and lines["b"].drop.mean == 11.0 and lines["c"].drop.mean == 32.0
    md = lb.render_markdown([t])
    assert "### Trained on a: fedavg (train_groups=a)" in md and "| c | no | 2 | 59.00 ± 1.41 | 32.00 ± 2.83 |" in md


def test_group_tables_follow_the_statistic(tmp_path):
    curves = {"round": [1, 2], "accuracy": [50.0, 40.0], "client_accuracy": [None, None],
              "worst_group_accuracy": [30.0, 20.0], "group_accuracy_variance": [1.0, 1.0], "loss": [1.0, 1.0],
              "group_accuracy": {"a": [70.0, 80.0], "b": [40.0, 20.0]}}
    write(tmp_path, "r.json", result_v2(curves, train_groups=["a"], last_k=2))
    drops = {}
    for statistic in ("final", "best", "last-k"):
        (t,) = tables_of(tmp_path, statistic=statistic)
        (gt,) = lb.group_tables(t)
        drops[statistic] = {x.group: (x.accuracy.mean, x.drop.mean) for x in gt.lines}["b"]
    assert drops == {"final": (20.0, 60.0), "best": (40.0, 30.0), "last-k": (30.0, 45.0)}
