"""Learning curves: tick values, inline SVG (nulls split a line), the PNG per split, the seeds' band."""

from __future__ import annotations

import pytest

from hetbench.leaderboard import aggregate, curves, curves_png, parse_result
from hetbench.plotting import pyplot
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
    assert curves_png.plot_curves_png(t, tmp_path / "none.png") is False and not (tmp_path / "none.png").exists()
    t = table_of(result())
    assert curves_png.plot_curves_png(t, tmp_path / "c.png") is True
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _seeds(algorithm: str, *accs: list) -> list[dict]:
    return [result(algorithm=algorithm, seed=s, curves={"round": [1, 2, 3], "accuracy": a}) for s, a in enumerate(accs)]


def test_seeds_spread_is_a_min_max_band_around_the_mean():
    t = table_of(*_seeds("a", [10.0, 20.0, 30.0], [14.0, 30.0, 32.0], [12.0, 22.0, None]),
                 *_seeds("b", [50.0, 60.0, 70.0]))
    a, b = t.rows
    assert a.curves["accuracy"] == ([1.0, 2.0, 3.0], [12.0, 24.0, 31.0])
    assert a.bands["accuracy"] == ([1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [14.0, 30.0, 32.0])
    assert b.bands["accuracy"] == ([1.0, 2.0, 3.0], [None] * 3, [None] * 3)  # one seed: no band
    assert curves.has_band(t, "accuracy")


def test_the_png_draws_one_band_per_multi_seed_row_with_the_seeds_extremes():
    t = table_of(*_seeds("a", [10.0, 20.0, 30.0], [14.0, 30.0, 32.0]), *_seeds("b", [50.0, 60.0, 70.0]))
    plt = pyplot()
    fig = curves_png.curves_figure(t)
    try:
        ax = fig.axes[0]
        (band,) = ax.collections  # row a only: b has one seed
        verts = band.get_paths()[0].vertices
        assert {tuple(v) for v in verts} >= {(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (1.0, 14.0), (2.0, 30.0), (3.0, 32.0)}
        assert [line.get_label() for line in ax.get_lines()] == ["a", "b"]
        assert list(ax.get_lines()[0].get_ydata()) == [12.0, 25.0, 31.0]  # the mean line
        assert "band: min–max over seeds" in fig._suptitle.get_text()
    finally:
        plt.close(fig)
    one = table_of(*_seeds("b", [50.0, 60.0, 70.0]))
    fig = curves_png.curves_figure(one)
    try:
        assert len(fig.axes[0].collections) == 0 and "band" not in fig._suptitle.get_text()
    finally:
        plt.close(fig)


def test_the_svg_draws_the_band_under_the_lines():
    t = table_of(*_seeds("a", [10.0, 20.0, 30.0], [14.0, 30.0, 32.0]), *_seeds("b", [50.0, 60.0, 70.0]))
    svg = curves.curves_svg(t, "accuracy", "test accuracy (%)")
    assert svg.count('<polygon class="band"') == 1 and svg.count("<polyline") == 2
    assert svg.index('<polygon class="band"') < svg.index('<g class="series"')
    assert "band: min–max over seeds" in svg
    polygon = svg.split('<polygon class="band" points="')[1].split('"')[0].split()
    assert len(polygon) == 6  # 3 rounds along the top, 3 back along the bottom


def test_twelve_rows_each_have_their_own_colour_and_dash_in_the_png_and_the_svg():
    """A leave-one-group-out sweep of 3 algorithms on 4 groups gives 12 rows: past the palette's 10 colours, a
    colour comes back with a dash, so no two lines (nor their legend entries) look alike."""
    t = table_of(*[result(algorithm=f"algo{i}", curves={"round": [1, 2], "accuracy": [10.0 + i, 20.0 + i]})
                   for i in range(12)])
    plt = pyplot()
    fig = curves_png.curves_figure(t)
    try:
        looks = [(line.get_color(), line.get_linestyle()) for line in fig.axes[0].get_lines()]
        assert len(looks) == 12 and len(set(looks)) == 12
        legend = [(h.get_color(), h.get_linestyle()) for h in fig.legends[0].legend_handles]
        assert sorted(legend) == sorted(looks)
    finally:
        plt.close(fig)
    svg = curves.curves_svg(t, "accuracy", "test accuracy (%)")
    import re

    series = re.findall(r'<g class="series" data-series="[^"]*" stroke="([^"]+)" fill="[^"]+"'
                        r'( stroke-dasharray="[^"]+")?>', svg)
    legend = re.findall(r'<line [^>]*stroke="([^"]+)" stroke-width="2.5"( stroke-dasharray="[^"]+")?/>', svg)
    assert len(series) == 12 and len(set(series)) == 12 and sorted(legend) == sorted(series)
