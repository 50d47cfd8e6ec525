"""The algorithms' per-round diagnostics (a result's ``curves.algorithm`` lists): averaged over seeds against
the trained rounds, and drawn as small panels under the learning curves (PNG and HTML) only when a result
records some."""

from __future__ import annotations

import json

import pytest

from hetbench.leaderboard import aggregate, curves, curves_png, parse_result, render_html, write_leaderboard
from hetbench.leaderboard.diagnostics import DIAGNOSTICS, diagnostic_panels
from hetbench.leaderboard.rank import rank
from hetbench.plotting import pyplot
from leaderboard_results import result

ACC = {"round": [2, 4], "accuracy": [40.0, 60.0], "worst_group_accuracy": [30.0, 50.0]}


def run(algorithm: str, seed: int, log: dict | None, **extra) -> dict:
    c = {**ACC, "train_round": [1, 2, 3, 4], **extra}
    if log is not None:
        c["algorithm"] = log
    return result(algorithm=algorithm, seed=seed, curves=c)


def table_of(*runs):
    (t,) = rank(aggregate([parse_result(r, f"{i}.json") for i, r in enumerate(runs)]))
    return t


@pytest.fixture
def mixed():
    """SCAFFOLD (two seeds), HeteroSwitch, DapperFL (with its per-level dict, not a per-round list) and FedAvg."""
    return table_of(
        run("scaffold", 0, {"c_norm": [0.5, 0.6, 0.7, 0.8], "c_i_norm_mean": [1.0, 1.0, 1.0, 1.0]}),
        run("scaffold", 1, {"c_norm": [0.7, 0.8, 0.9, None], "c_i_norm_mean": [2.0, 2.0, 2.0, 2.0]}),
        run("heteroswitch", 0, {"switch1_fraction": [0.0, 0.5, 0.5, 1.0], "switch2_fraction": [0.0, 0.0, 0.5, 0.5],
                                "l_ema": [2.0, 1.5, 1.2, 1.0]}),
        run("dapperfl", 0, {"fusion_alpha": [0.9, 0.72, 0.576, 0.4608], "pruned_fraction": [0.4] * 4,
                            "achieved_pruning_ratio": {"0.2": 0.19, "0.8": 0.79}}),
        run("fedavg", 0, {}),
    )


def test_diagnostics_are_the_mean_over_seeds_against_the_trained_rounds(mixed):
    scaffold = next(r for r in mixed.rows if r.algorithm == "scaffold")
    assert scaffold.curves["algorithm.c_norm"] == ([1.0, 2.0, 3.0, 4.0], [pytest.approx(0.6), pytest.approx(0.7),
                                                                            pytest.approx(0.8), 0.8])
    assert scaffold.bands["algorithm.c_i_norm_mean"] == ([1.0, 2.0, 3.0, 4.0], [1.0] * 4, [2.0] * 4)
    assert scaffold.bands["algorithm.c_norm"][1][3] is None  # one seed has round 4: no band there
    assert scaffold.curves["accuracy"][0] == [2.0, 4.0]  # the learning curves keep the evaluated rounds
    dapper = next(r for r in mixed.rows if r.algorithm == "dapperfl")
    assert "algorithm.achieved_pruning_ratio" not in dapper.curves  # per level, not per round
    fedavg = next(r for r in mixed.rows if r.algorithm == "fedavg")
    assert not [k for k in fedavg.curves if k.startswith("algorithm.")]


def test_without_train_round_a_diagnostic_counts_rounds_from_one():
    (row,) = table_of(result(curves={**ACC, "algorithm": {"l_ema": [3.0, 2.0, 1.0]}})).rows
    assert row.curves["algorithm.l_ema"] == ([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])


def test_the_png_has_one_labelled_panel_per_diagnostic_under_the_curves(mixed):
    plt = pyplot()
    fig = curves_png.curves_figure(mixed)
    try:
        titles = [ax.get_title() for ax in fig.axes]
        assert titles[:2] == ["test accuracy (%)", "worst-group accuracy (%)"]
        known = ["switch1_fraction", "switch2_fraction", "l_ema", "c_norm", "c_i_norm_mean", "fusion_alpha",
                 "pruned_fraction"]
        assert titles[2:] == [DIAGNOSTICS[k].title for k in known]  # the catalogue's order
        for ax, key in zip(fig.axes[2:], known):
            assert ax.get_ylabel() == DIAGNOSTICS[key].ylabel and ax.get_xlabel() == "round"
        c_norm = fig.axes[2 + known.index("c_norm")]
        assert [line.get_label() for line in c_norm.get_lines()] == ["scaffold"]  # only the rows that record it
        assert len(c_norm.collections) == 1  # scaffold's two seeds: a band
        fractions = fig.axes[2 + known.index("switch1_fraction")]
        assert fractions.get_ylim()[0] < 0 and fractions.get_ylim()[1] > 1  # the whole 0-1 range
        assert sorted(t.get_text() for t in fig.legends[0].get_texts()) == sorted(r.label for r in mixed.rows)
    finally:
        plt.close(fig)


def test_no_diagnostic_panels_without_log_entries():
    t = table_of(run("fedavg", 0, None), run("fedprox", 0, {}))
    assert diagnostic_panels(t) == []
    plt = pyplot()
    fig = curves_png.curves_figure(t)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["test accuracy (%)", "worst-group accuracy (%)"]
    finally:
        plt.close(fig)
    page = render_html([t])
    assert "Algorithm diagnostics" not in page and 'data-curve="algorithm.' not in page


def test_an_unknown_diagnostic_is_drawn_under_its_own_name_and_diagnostics_alone_make_a_png(tmp_path):
    t = table_of(result(curves={"round": [], "algorithm": {"server_step_norm": [0.3, 0.2], "zeta": [1.0, 2.0]}}))
    assert [k for k, _ in diagnostic_panels(t)] == ["algorithm.server_step_norm", "algorithm.zeta"]
    plt = pyplot()
    fig = curves_png.curves_figure(t)
    try:
        assert [ax.get_title() for ax in fig.axes] == [DIAGNOSTICS["server_step_norm"].title, "zeta"]
        assert fig.axes[1].get_ylabel() == "value per round"
    finally:
        plt.close(fig)
    assert curves_png.plot_curves_png(t, tmp_path / "d.png") and (tmp_path / "d.png").read_bytes()[:4] == b"\x89PNG"


def test_the_html_shows_the_diagnostics_as_labelled_svgs(mixed):
    page = render_html([mixed])
    assert page.count("<h3>Algorithm diagnostics</h3>") == 1
    section = page.split("<h3>Algorithm diagnostics</h3>")[1]
    for key in ("c_norm", "l_ema", "fusion_alpha", "switch1_fraction"):
        assert f'data-curve="algorithm.{key}"' in section
    assert '<text class="ylabel"' in section and "L2 norm (gradient units)" in section
    assert 'data-curve="accuracy"' not in section  # the learning curves come before it


def test_write_leaderboard_draws_the_diagnostics_of_real_result_files(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    for i, r in enumerate([run("scaffold", 0, {"c_norm": [0.5, 0.6, 0.7, 0.8]}), run("fedavg", 0, {})]):
        (folder / f"{i}.json").write_text(json.dumps(r))
    written = write_leaderboard(folder, tmp_path / "lb")
    assert any(f.startswith("curves_") and f.endswith(".png") for f in written.files)
    assert 'data-curve="algorithm.c_norm"' in (tmp_path / "lb" / "leaderboard.html").read_text()
