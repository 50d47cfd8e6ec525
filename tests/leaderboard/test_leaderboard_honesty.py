"""Leaderboard statistics that do not mislead (issue 31, item 1; issue 48, item 1): rounds to target counts the
seeds that missed as misses and only a fully reached row can be best; the target is in the column's header;
"never reached" is not "not applicable"; rows whose seed spreads overlap are marked as unresolved; a column
where every row ties has no bold cell."""

from __future__ import annotations

from hetbench.leaderboard.aggregate import aggregate
from hetbench.leaderboard.html import render_html
from hetbench.leaderboard.example_results import example_result
from hetbench.leaderboard.load import parse_result
from hetbench.leaderboard.rank import best_means, rank
from hetbench.leaderboard.text import render_markdown


def _run(algorithm, seed, accuracy, rounds_to_target, target=80.0):
    flat = {"round": [1, 2, 3, 4], "accuracy": [accuracy] * 4, "worst_group_accuracy": [accuracy - 5] * 4}  # settled
    doc = example_result(algorithm=algorithm, seed=seed, accuracy=accuracy, curves=flat,
                         final={"rounds_to_target": rounds_to_target, "worst_group_accuracy": accuracy - 5})
    doc["config"]["target_accuracy"] = target
    doc["model"] = {"name": "lenet", "parameters": 1000, "macs": 5000}
    return parse_result(doc)


def _tables():
    runs = [_run("fedavg", 0, 81.0, 16), _run("fedavg", 1, 78.0, None),   # reached on one seed of two
            _run("fedprox", 0, 80.0, 18), _run("fedprox", 1, 79.5, 19),   # reached on both
            _run("scaffold", 0, 60.0, None), _run("scaffold", 1, 61.0, None),
            _run("fedyogi", 0, 50.0, 22), _run("fedyogi", 1, 50.5, 24)]    # reached on both, later than fedprox
    return rank(aggregate(runs))


def test_rounds_to_target_counts_misses_and_only_a_fully_reached_row_is_best():
    md = render_markdown(_tables())
    rows = {line.split(" | ")[1]: line for line in md.splitlines() if line.startswith("| ") and (" | fed" in line or "scaffold" in line)}
    assert "16.0 (1/2 reached)" in rows["fedavg"] and "**16.0**" not in rows["fedavg"]
    assert "**18.5** ± 0.7" in rows["fedprox"] and "**23.0**" not in rows["fedyogi"]  # fully reached, fastest
    assert "never (0/2)" in rows["scaffold"]  # ran with a target and missed it on every seed
    assert "rounds to 80% ↓" in md and "at or above 80% test accuracy" in md
    html = render_html(_tables())
    assert "(1/2 reached)" in html and "at or above 80% test accuracy" in html


def test_overlapping_seed_spreads_are_marked_and_a_column_of_ties_has_no_best():
    tables = _tables()
    md = render_markdown(tables)
    ranked = [line.split(" | ")[0][2:] for line in md.splitlines() if line.startswith("| ") and ("fed" in line or "scaffold" in line)]
    assert ranked == ["1", "≈2", "3", "4"], ranked  # fedavg 76 ± 2.1 and fedprox 74.75 ± 0.35 (worst group) overlap
    assert "these seeds do not resolve their order" in md
    best = best_means(tables[0])
    assert "parameters" not in best and "macs" not in best  # one model: every row ties
    assert "**1,000**" not in md and "**1000**" not in md


def test_a_row_without_a_target_reads_not_applicable_and_no_target_hides_the_column():
    runs = [_run("fedavg", 0, 81.0, 16), _run("fedprox", 0, 80.0, None, target=None)]
    md = render_markdown(rank(aggregate(runs)))
    line = next(x for x in md.splitlines() if "| fedprox |" in x)
    assert "| n/a |" in line and "never" not in line
    none = [_run("fedavg", 0, 81.0, None, target=None), _run("fedprox", 0, 80.0, None, target=None)]
    assert "rounds to" not in render_markdown(rank(aggregate(none)))
