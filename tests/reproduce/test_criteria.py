"""The criterion language: every verdict reachable from a synthetic measurement, the intervals it rests on,
and the numbers it used."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import (
    CRITERIA, INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, PARTIAL, REPRODUCED, Measurement, check_criterion, combine,
    evaluate, loglog_slope, spearman, t_interval,
)

MONO = {"name": "monotone_decreasing", "tolerance": 1.0, "min_effect": 10}


def test_t_interval_matches_the_textbook_formula():
    values = [61.2, 58.4, 63.0, 60.1, 59.7]
    ci = t_interval(values)
    half = 2.7764451051977987 * np.std(values, ddof=1) / math.sqrt(5)  # t(0.975, 4)
    assert ci.mean == pytest.approx(np.mean(values))
    assert (ci.low, ci.high) == pytest.approx((ci.mean - half, ci.mean + half))
    wider = t_interval(values, level=0.99)
    assert wider.low < ci.low and wider.high > ci.high


def test_a_t_interval_covers_the_true_mean_at_its_level():
    # 4,000 samples of 5 normal values: the 95% interval holds the true mean 95% of the time (± 1.1%)
    rng = np.random.default_rng(0)
    hits = sum(ci.low <= 3.0 <= ci.high for ci in (t_interval(rng.normal(3.0, 2.0, 5)) for _ in range(4000)))
    assert 0.939 <= hits / 4000 <= 0.961


@pytest.mark.parametrize("samples, verdict", [
    ([[95, 96, 95], [90, 91, 90], [80, 81, 80], [60, 62, 61]], REPRODUCED),
    ([[95, 96, 95], [90, 91, 90], [96, 97, 96], [60, 62, 61]], NOT_REPRODUCED),  # every seed rises 6 points at one step
    ([[95, 96, 95], [94, 95, 94], [93, 94, 93], [92, 93, 92]], NOT_REPRODUCED),  # falls, but by 3 points < 10
    ([[60, 61, 60], [70, 71, 70], [80, 81, 80], [95, 96, 95]], NOT_REPRODUCED),  # rises: the wrong direction
    ([[95, 85, 90], [93, 99, 91], [70, 70, 70], [60, 61, 60]], INCONCLUSIVE),  # one step's interval straddles +1
])
def test_monotone_decreasing_verdicts(samples, verdict):
    r = evaluate(Measurement(samples, x=[100, 1, 0.1, 0.05]), MONO)
    assert r.verdict == verdict, r.reason
    assert r.numbers["min_effect"] == 10 and len(r.numbers["steps"]) == 3 and r.numbers["level"] == 0.95


def test_monotone_steps_are_paired_by_seed():
    # seed offsets of ±10 points are shared by every point: paired, each step is a clean -5 for every seed
    offsets = np.array([-10.0, 0.0, 10.0, 5.0, -5.0])
    samples = [list(80 + offsets), list(75 + offsets), list(70 + offsets), list(65 + offsets)]
    r = evaluate(Measurement(samples), {**MONO, "min_effect": 10})
    assert r.verdict == REPRODUCED
    assert all(s["change"]["low"] == s["change"]["high"] == -5 for s in r.numbers["steps"])


def test_monotone_small_wrong_way_steps_are_seen_when_the_seeds_agree():
    # a 3-point rise at one step, the same for all 5 seeds: the old "tolerance + 2 s.e. of the points"
    # allowance of about 8 points hid it; the paired step interval does not
    rng = np.random.default_rng(1)
    base = rng.normal(0, 4, 5)
    samples = [list(90 + base), list(93 + base + rng.normal(0, 0.3, 5)), list(70 + base)]
    r = evaluate(Measurement(samples), MONO)
    assert r.verdict == NOT_REPRODUCED and r.numbers["steps"][0]["verdict"] == NOT_REPRODUCED


def test_monotone_trend_is_a_rank_correlation_per_seed():
    # a curve that falls overall by more than min_effect but zigzags: every step's interval is undecided
    r = evaluate(Measurement([[90, 80], [91, 75], [70, 72], [71, 60]]), MONO)
    assert r.numbers["trend"]["n"] == 2
    assert r.numbers["trend"]["mean"] == pytest.approx((spearman([-90, -91, -70, -71]) + spearman([-80, -75, -72, -60])) / 2)


def test_monotone_increasing_is_the_mirror():
    up = {"name": "monotone_increasing", "tolerance": 0, "min_effect": 1}
    assert evaluate(Measurement([[1.0], [2.0], [3.0]]), up).verdict == REPRODUCED
    assert evaluate(Measurement([[3.0], [2.0], [1.0]]), up).verdict == NOT_REPRODUCED


def test_monotone_needs_the_same_seeds_at_every_point():
    with pytest.raises(HetbenchError, match="different numbers of seeds"):
        evaluate(Measurement([[1.0, 2.0], [3.0]]), MONO)


@pytest.mark.parametrize("name, samples, verdict", [
    ("less_than", [0.40, 0.42, 0.41], REPRODUCED),
    ("less_than", [0.70, 0.90, 0.80], INCONCLUSIVE),  # the interval straddles 0.8 (threshold - min_effect)
    ("less_than", [0.90, 0.92, 0.91], NOT_REPRODUCED),  # below the threshold, but surely not by 0.2
    ("greater_than", [1.5, 1.6, 1.55], REPRODUCED),
    ("greater_than", [1.1, 1.3, 1.2], INCONCLUSIVE),
    ("greater_than", [0.9, 0.95, 0.92], NOT_REPRODUCED),
])
def test_threshold_verdicts(name, samples, verdict):
    r = evaluate(Measurement([samples]), {"name": name, "threshold": 1.0, "min_effect": 0.2})
    assert r.verdict == verdict, r.reason
    assert {"value", "stderr", "threshold", "margin"} <= set(r.numbers)
    assert r.numbers["margin"] == pytest.approx(1.2 if name == "greater_than" else 0.8)


def test_a_positive_mean_is_not_a_verdict():
    # mean +0.5 from two seeds at 0 and 1: the 95% interval [-5.9, 6.9] straddles 0
    r = evaluate(Measurement([[0.0, 1.0]]), {"name": "greater_than", "threshold": 0.0})
    assert r.verdict == INCONCLUSIVE and "straddles" in r.reason


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=2, max_size=8), st.floats(-50, 50), st.floats(0, 10))
def test_greater_and_less_than_mirror_each_other(values, threshold, min_effect):
    up = evaluate(Measurement([values]), {"name": "greater_than", "threshold": threshold, "min_effect": min_effect})
    down = evaluate(Measurement([[-v for v in values]]), {"name": "less_than", "threshold": -threshold,
                                                           "min_effect": min_effect})
    assert up.verdict == down.verdict


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=2, max_size=8), st.floats(-50, 50))
def test_a_higher_level_never_turns_a_verdict_around(values, threshold):
    # a wider interval can only move reproduced / not reproduced to inconclusive, never to the opposite
    verdicts = [evaluate(Measurement([values]), {"name": "greater_than", "threshold": threshold, "level": lv}).verdict
                for lv in (0.8, 0.95, 0.99)]
    for lower, higher in zip(verdicts, verdicts[1:]):
        assert higher in (lower, INCONCLUSIVE)


def test_within_relative_verdicts():
    pub = [100.0, 200.0, 300.0]
    c = {"name": "within_relative", "tolerance": 0.02}
    assert evaluate(Measurement([[101], [198], [303]], published=pub), c).verdict == REPRODUCED
    r = evaluate(Measurement([[101], [150], [303]], published=pub), c)
    assert r.verdict == NOT_REPRODUCED and r.numbers["within"] == 2 and "1 of 3" in r.reason
    exact = {"name": "within_relative", "tolerance": 0}
    assert evaluate(Measurement([[3607], [1209]], published=[3607, 1209]), exact).verdict == REPRODUCED
    assert evaluate(Measurement([[3606], [1209]], published=[3607, 1209]), exact).verdict == NOT_REPRODUCED


def test_ratio_scaling_verdicts():
    c = {"name": "ratio_scaling", "slope_min": -1.15, "slope_max": -0.85}
    x = [30, 100, 300, 1000, 3000]
    assert evaluate(Measurement([[30000 / v] for v in x], x=x), c).verdict == REPRODUCED
    r = evaluate(Measurement([[3000 / v**0.5] for v in x], x=x), c)
    assert r.verdict == NOT_REPRODUCED and r.numbers["slope"]["mean"] == pytest.approx(-0.5)
    # slope -1 with a large scatter: the interval reaches beyond [-1.15, -0.85]
    noisy = [30000 / v * f for v, f in zip(x, (1.0, 2.5, 0.4, 2.0, 0.6))]
    assert evaluate(Measurement([[v] for v in noisy], x=x), c).verdict == INCONCLUSIVE
    assert evaluate(Measurement([[v] for v in x], x=x), c).verdict == NOT_REPRODUCED
    assert evaluate(Measurement([[0], [1], [2], [3], [4]], x=x), c).verdict == NOT_REPRODUCED


def test_loglog_slope_of_tff_counts_is_minus_one():
    slope, se, r2 = loglog_slope([100, 300, 1000, 3000, 10000, 30000], [3607, 1209, 369, 136, 39, 12])
    assert slope == pytest.approx(-1.0, abs=0.01) and r2 > 0.99 and se < 0.05


def test_unsettled_runs_make_a_check_inconclusive_and_keep_what_the_numbers_said():
    m = Measurement([[5.0, 6.0, 5.5]], unsettled=["fedavg-s0", "fedavg-s1"])
    r = evaluate(m, {"name": "greater_than", "threshold": 0})
    assert r.verdict == INCONCLUSIVE and r.numbers["unsettled_verdict"] == REPRODUCED
    assert "2 training run(s) had not settled" in r.reason
    assert m.as_dict()["unsettled"] == ["fedavg-s0", "fedavg-s1"]


def test_not_run_and_combine():
    assert evaluate(Measurement([], not_run="no files"), MONO).verdict == NOT_RUN
    assert combine([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert combine([REPRODUCED, NOT_REPRODUCED]) == PARTIAL  # separate checks disagree
    assert combine([REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE]) == PARTIAL
    assert combine([REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine([NOT_REPRODUCED, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine([NOT_REPRODUCED, NOT_RUN]) == NOT_REPRODUCED
    assert combine([NOT_RUN, NOT_RUN]) == NOT_RUN


def test_measurement_records_intervals_beside_the_samples():
    point = Measurement([[1.0, 2.0, 3.0, 4.0, 5.0]], unit="points").as_dict()["points"][0]
    assert point["n"] == 5 and point["mean"] == 3
    assert (point["low"], point["high"]) == pytest.approx((1.03676, 4.96324))


@pytest.mark.parametrize("spec, message", [
    ({"name": "monotone"}, "unknown criterion 'monotone'; choose one of: monotone_decreasing"),
    ({"tolerance": 1}, "a criterion is a mapping with a 'name'"),
    ("within_relative", "a criterion is a mapping with a 'name'"),
    ({"name": "within_relative"}, "criterion 'within_relative' needs tolerance"),
    ({"name": "within_relative", "tolerance": 0.1, "sigmas": 2}, "has no parameter 'sigmas'"),
    ({"name": "greater_than", "threshold": 0, "sigmas": 2}, "has no parameter 'sigmas'"),
    ({"name": "within_relative", "tolerance": "2%"}, "tolerance must be a finite number"),
    ({"name": "within_relative", "tolerance": -0.1}, "tolerance must not be negative"),
    ({"name": "greater_than", "threshold": 0, "level": 1.0}, "level must be in [0.5, 1)"),
    ({"name": "ratio_scaling", "slope_min": -0.8, "slope_max": -1.2}, "slope_min is above slope_max"),
])
def test_bad_criteria_are_one_clear_error(spec, message):
    import re

    with pytest.raises(HetbenchError, match=re.escape(message)):
        check_criterion(spec, "manifests/claims/x.yaml: checks[0]")


def test_every_criterion_has_a_doc_and_validates_its_own_required_parameters():
    for name, c in CRITERIA.items():
        assert c.fn.__doc__
        spec = {"name": name, **{k: 0.5 for k in c.required}}
        if name == "ratio_scaling":
            spec = {"name": name, "slope_min": -1.0, "slope_max": -0.5}
        assert check_criterion(spec, "x")["name"] == name


def test_a_claim_plot_draws_the_papers_number_beside_the_measured_one(tmp_path, monkeypatch):
    from hetbench.plotting import pyplot
    from hetbench.reproduce.plots import Panel, plot_claim
    from hetbench.reproduce.runners.base import Axes

    drawn = []
    plt = pyplot()
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (drawn.append(fig), close(fig)))
    m = Measurement([[-1.2, -0.4, -2.0, 0.3, -1.5]])
    c = {"name": "greater_than", "threshold": 0, "min_effect": 1}
    note = Measurement([[2.0, 3.0, 2.0, 3.0, 2.0]])
    panels = [Panel("mean_gap", m, Axes(), c, evaluate(m, c), {"where": "Table 1", "values": [1.88]}),
              Panel("wins", note, Axes(), c, evaluate(note, c), {"where": "Fig. 2, figure only"})]
    assert plot_claim("demo", "not reproduced", panels, [], tmp_path / "demo.png")
    gap, wins = drawn[0].axes[:2]
    star = [line for line in gap.get_lines() if line.get_label().startswith("paper: Table 1")]
    assert len(star) == 1 and list(star[0].get_ydata()) == [1.88] and gap.get_ylim()[1] > 1.88
    assert any(t.get_text() == "1.88" for t in gap.texts)  # the number written beside the star
    legend = [t.get_text() for t in wins.get_legend().get_texts()]
    assert any(t.startswith("paper: Fig. 2, figure only") for t in legend)  # says why nothing is drawn
