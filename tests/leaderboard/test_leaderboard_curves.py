"""Learning curves: tick values, inline SVG (nulls split a line) and the PNG per split."""

from __future__ import annotations

import pytest

from hetbench.leaderboard import aggregate, curves, parse_result
from leaderboard_results import result


def table_of(*runs):
    (t,) = aggregate([parse_result(r, f"{i}.json") for i, r in enumerate(runs)])
    return t


@pytest.mark.parametrize("lo, hi", [(0.0, 1.0), (12.3, 87.9), (1.0, 1.0), (-3.0, 250.0), (0.001, 0.0042)])
def test_ticks_cover_the_range(lo, hi):
    ticks = curves.nice_ticks(lo, hi)
    assert ticks[0] <= lo and ticks[-1] >= hi and ticks == sorted(ticks)
    assert 2 <= len(ticks) <= 12


def test_integer_ticks_are_whole():
    assert all(float(t).is_integer() for t in curves.nice_ticks(1, 7, 6, integer=True))


def test_svg_has_a_series_per_row_and_breaks_lines_at_nulls():
    t = table_of(result(algorithm="a", curves={"round": [1, 2, 3, 4], "accuracy": [1.0, 2.0, None, 4.0]}),
                 result(algorithm="b", curves={"round": [1, 2], "accuracy": [3.0, 5.0]}))
    svg = curves.curves_svg(t, "accuracy", "test accuracy (%)")
    assert svg.count('<g class="series"') == 2 and svg.count('<g class="legend-item"') == 2
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 1  # a: a line and a lone point; b: a line
    assert curves.curves_svg(t, "worst_group_accuracy", "") is None


def test_png_only_when_a_row_has_curves(tmp_path):
    t = table_of(result(curves={}))
    assert curves.plot_curves_png(t, tmp_path / "none.png") is False and not (tmp_path / "none.png").exists()
    t = table_of(result())
    assert curves.plot_curves_png(t, tmp_path / "c.png") is True
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
