"""borazjani-zeta: the definition validates, the Eq. 4 floor is a true and attained bound, the runner's
measurements and facts on tiny settings, and the criteria decide from the numbers."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from hetbench.clustering import zeta
from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import load_claim, parse_claim
from hetbench.reproduce.criteria import evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.runners.embedding_zeta import eq4_floor, equal_groups_floor
from claim_definitions import raw_claim

TINY = {"source": "builtin:digits", "clients": 5, "clusters": 4, "embedder": "pixels:4", "alphas": [100, 0.05],
        "table1_groups": 16, "table1_published": [0.02, 0.109], "table1_pairs": ["low", "high"]}


def test_definition_validates():
    claim = load_claim("borazjani-zeta")
    assert [k.measure for k in claim.checks] == ["zeta", "emd_clusters", "emd_labels", "table1"]
    assert claim.settings["quick"]["alphas"] == [100, 1, 0.5, 0.1, 0.05]


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(table1_pairs=["a"]), "'table1_pairs' needs one name (a string) per 'table1_published' value"),
    (lambda s: s.update(alphas=[1]), "'alphas' must list at least two values"),
    (lambda s: s.update(table1_published=[0.5, 1.5] + [0.1] * 5), "'table1_published' values are Eq. 4 values"),
    (lambda s: s.update(clusters=1), "'clusters' must be at least 2"),
    (lambda s: s.update(rounds=3), "unknown setting 'rounds'"),
])
def test_bad_settings_are_one_clear_error(edit, message):
    data = copy.deepcopy(raw_claim("borazjani-zeta"))
    edit(data["settings"]["quick"])
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "x.yaml")
    assert str(exc.value).startswith("x.yaml: settings.quick: ") and message in str(exc.value)


@pytest.mark.parametrize("k, n", [(2, 40), (3, 31), (5, 60), (16, 203)])
def test_eq4_floor_bounds_every_pair_of_clusterings_and_is_attained(k, n):
    rng = np.random.default_rng(k * 1000 + n)
    floor = eq4_floor(k, n)
    for _ in range(300):  # random clusterings of at most k groups, skewed and balanced
        a = rng.choice(k, size=n, p=rng.dirichlet(np.full(k, rng.choice([0.05, 0.5, 5.0]))))
        b = rng.choice(k, size=n, p=rng.dirichlet(np.full(k, rng.choice([0.05, 0.5, 5.0]))))
        assert zeta(a, b) >= floor - 1e-12
    one, equal = np.zeros(n, int), np.arange(n) % k  # one group against k (nearly) equal groups attains it
    assert zeta(one, equal) == pytest.approx(floor)
    assert eq4_floor(k) == 1 / k and eq4_floor(k, n) <= 1 / k
    assert equal_groups_floor(k) == pytest.approx(1 - 2 / k + 2 / k**2)


def test_runner_measures_zeta_emd_and_table1_on_tiny_settings(tmp_path):
    runner = RUNNERS["embedding_zeta"]
    settings = runner.check_settings(dict(TINY), "tiny")
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick")
    ctx.work.mkdir()
    out = runner.run(settings, ctx)
    assert set(out.measurements) == set(runner.measures)
    z = out.measurements["zeta"]
    assert len(z.samples) == 1 and len(z.samples[0]) == 2
    assert all(eq4_floor(10, 1797) <= v <= 1 for v in z.samples[0])
    for name in ("emd_clusters", "emd_labels"):
        m = out.measurements[name]
        assert m.x == [100.0, 0.05] and [len(s) for s in m.samples] == [2, 2]
        assert all(0 <= v <= 2 for s in m.samples for v in s)
        assert m.means()[1] > m.means()[0]  # alpha 0.05 is far more skewed than alpha 100
    t = out.measurements["table1"]
    assert t.published == [0.02, 0.109] and t.means() == [0.0625, 0.109] and t.labels == ["low", "high"]
    facts = out.facts
    assert facts["seeds"] == [0, 1] and "1797 rows clustered" in facts["test_examples"]
    assert facts["table1_below_floor"] == ["low"] and facts["eq4_floor_table1"] == 0.0625
    for key in ("uncertainty", "metric", "cluster_sizes"):
        assert facts[key]
    # the declared criteria decide from these numbers
    result = evaluate(t, {"name": "within_relative", "tolerance": 0})
    assert result.verdict == "not reproduced" and result.numbers["within"] == 1


def test_missing_source_is_an_error_the_claim_reports_as_not_run(tmp_path):
    runner = RUNNERS["embedding_zeta"]
    ctx = Context(work=tmp_path, runs=tmp_path / "runs", seeds=[0], mode="quick")
    with pytest.raises(HetbenchError):
        runner.run({**TINY, "source": str(tmp_path / "missing.parquet")}, ctx)
