"""The criterion language: every verdict reachable from a synthetic measurement, and the numbers it used."""

from __future__ import annotations

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import (
    CRITERIA, NOT_REPRODUCED, NOT_RUN, PARTIAL, REPRODUCED, Measurement, check_criterion, combine, evaluate,
    loglog_slope,
)

MONO = {"name": "monotone_decreasing", "tolerance": 1.0, "sigmas": 2, "min_effect": 10}


@pytest.mark.parametrize("samples, verdict", [
    ([[95, 96], [90, 91], [80, 81], [60, 62]], REPRODUCED),
    ([[95, 96], [90, 91], [96, 97], [60, 62]], PARTIAL),  # a step up by 6 points, beyond 1 + 2 s.e.
    ([[95, 96], [94, 95], [93, 94], [92, 93]], NOT_REPRODUCED),  # falls, but by 3 points < 10
    ([[60, 61], [70, 71], [80, 81], [95, 96]], NOT_REPRODUCED),  # rises: the wrong direction
])
def test_monotone_decreasing_verdicts(samples, verdict):
    r = evaluate(Measurement(samples, x=[100, 1, 0.1, 0.05]), MONO)
    assert r.verdict == verdict
    assert r.numbers["min_effect"] == 10 and len(r.numbers["steps"]) == 3


def test_monotone_noise_allowance_comes_from_the_seeds_spread():
    # the same 3-point rise at one step: within noise when seeds disagree a lot, a violation when they agree
    noisy = Measurement([[95, 85], [93, 99], [70, 70]])
    tight = Measurement([[90, 90], [93, 93], [70, 70]])
    assert evaluate(noisy, MONO).verdict == REPRODUCED
    assert evaluate(tight, MONO).verdict == PARTIAL
    step = evaluate(noisy, MONO).numbers["steps"][0]
    assert step["allowed_wrong_way"] > 3 and step["ok"]


def test_monotone_increasing_is_the_mirror():
    up = {"name": "monotone_increasing", "tolerance": 0, "min_effect": 1}
    assert evaluate(Measurement([[1.0], [2.0], [3.0]]), up).verdict == REPRODUCED
    assert evaluate(Measurement([[3.0], [2.0], [1.0]]), up).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("name, samples, verdict", [
    ("less_than", [0.40, 0.42, 0.41], REPRODUCED),
    ("less_than", [0.90, 0.92, 0.91], PARTIAL),
    ("less_than", [1.05, 1.02, 1.04], NOT_REPRODUCED),
    ("greater_than", [1.5, 1.6, 1.55], REPRODUCED),
    ("greater_than", [1.1, 1.05, 1.08], PARTIAL),
    ("greater_than", [0.9, 0.95, 0.92], NOT_REPRODUCED),
])
def test_threshold_verdicts(name, samples, verdict):
    r = evaluate(Measurement([samples]), {"name": name, "threshold": 1.0, "min_effect": 0.2, "sigmas": 2})
    assert r.verdict == verdict
    assert {"value", "stderr", "threshold", "margin"} <= set(r.numbers)


def test_threshold_needs_significance_not_only_the_mean():
    # mean 0.5 is far below 1, but two seeds at 0 and 1 leave it within 2 standard errors of 0.8
    r = evaluate(Measurement([[0.0, 1.0]]), {"name": "less_than", "threshold": 1.0, "min_effect": 0.2})
    assert r.verdict == PARTIAL


def test_within_relative_verdicts():
    pub = [100.0, 200.0, 300.0]
    c = {"name": "within_relative", "tolerance": 0.02}
    assert evaluate(Measurement([[101], [198], [303]], published=pub), c).verdict == REPRODUCED
    assert evaluate(Measurement([[101], [150], [303]], published=pub), c).verdict == PARTIAL
    r = evaluate(Measurement([[150], [100], [400]], published=pub), c)
    assert r.verdict == NOT_REPRODUCED and r.numbers["within"] == 0
    exact = {"name": "within_relative", "tolerance": 0}
    assert evaluate(Measurement([[3607], [1209]], published=[3607, 1209]), exact).verdict == REPRODUCED
    assert evaluate(Measurement([[3606], [1209]], published=[3607, 1209]), exact).verdict == PARTIAL


def test_ratio_scaling_verdicts():
    c = {"name": "ratio_scaling", "slope_min": -1.15, "slope_max": -0.85}
    x = [30, 100, 300, 1000, 3000]
    assert evaluate(Measurement([[30000 / v] for v in x], x=x), c).verdict == REPRODUCED
    r = evaluate(Measurement([[3000 / v**0.5] for v in x], x=x), c)
    assert r.verdict == PARTIAL and r.numbers["slope"] == pytest.approx(-0.5)
    assert evaluate(Measurement([[v] for v in x], x=x), c).verdict == NOT_REPRODUCED
    assert evaluate(Measurement([[0], [1], [2], [3], [4]], x=x), c).verdict == NOT_REPRODUCED


def test_loglog_slope_of_tff_counts_is_minus_one():
    slope, se, r2 = loglog_slope([100, 300, 1000, 3000, 10000, 30000], [3607, 1209, 369, 136, 39, 12])
    assert slope == pytest.approx(-1.0, abs=0.01) and r2 > 0.99 and se < 0.05


def test_not_run_and_combine():
    assert evaluate(Measurement([], not_run="no files"), MONO).verdict == NOT_RUN
    assert combine([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert combine([REPRODUCED, NOT_REPRODUCED]) == PARTIAL
    assert combine([PARTIAL]) == PARTIAL
    assert combine([NOT_REPRODUCED, NOT_RUN]) == NOT_REPRODUCED
    assert combine([NOT_RUN, NOT_RUN]) == NOT_RUN


@pytest.mark.parametrize("spec, message", [
    ({"name": "monotone"}, "unknown criterion 'monotone'; choose one of: monotone_decreasing"),
    ({"tolerance": 1}, "a criterion is a mapping with a 'name'"),
    ("within_relative", "a criterion is a mapping with a 'name'"),
    ({"name": "within_relative"}, "criterion 'within_relative' needs tolerance"),
    ({"name": "within_relative", "tolerance": 0.1, "sigmas": 2}, "has no parameter 'sigmas'"),
    ({"name": "within_relative", "tolerance": "2%"}, "tolerance must be a finite number"),
    ({"name": "within_relative", "tolerance": -0.1}, "tolerance must not be negative"),
    ({"name": "ratio_scaling", "slope_min": -0.8, "slope_max": -1.2}, "slope_min is above slope_max"),
])
def test_bad_criteria_are_one_clear_error(spec, message):
    with pytest.raises(HetbenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_criterion(spec, "manifests/claims/x.yaml: checks[0]")


def test_every_criterion_has_a_doc_and_validates_its_own_required_parameters():
    for name, c in CRITERIA.items():
        assert c.fn.__doc__
        spec = {"name": name, **{k: 0.5 for k in c.required}}
        if name == "ratio_scaling":
            spec = {"name": name, "slope_min": -1.0, "slope_max": -0.5}
        assert check_criterion(spec, "x")["name"] == name
