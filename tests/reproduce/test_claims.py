"""Claim definitions: the shipped ones validate; a bad definition is one clear error naming the file."""

from __future__ import annotations

import copy

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import claim_ids, load_claim, parse_claim, select_claims
from claim_definitions import raw_claim

#: every claim id the issue names (part of the command-line interface)
ISSUE_IDS = ["borazjani-thesis", "borazjani-zeta", "dapperfl-ablation", "dapperfl-domains", "dapperfl-footprint", "defaults-learn",
             "heteroswitch-lodo", "heteroswitch-stage-drop", "heteroswitch-table2", "heteroswitch-table4", "hsu-fedavgm",
             "hsu-fedavgm-sensitivity", "hsu-fedvc-fedir",
             "hsu-geo-clients", "hsu-label-skew", "scaffold-collapse"]


def test_every_claim_of_the_issue_ships_and_validates():
    assert claim_ids() == ISSUE_IDS
    for cid in claim_ids():
        claim = load_claim(cid)
        assert claim.id == cid and claim.checks and set(claim.settings) == {"quick", "full", "smoke"}


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["checks"][0]["criterion"].update(name="roughly_equal"),
     "checks[0]: unknown criterion 'roughly_equal'; choose one of: monotone_decreasing"),
    (lambda d: d["checks"][0]["criterion"].pop("tolerance"), "checks[0]: criterion 'within_relative' needs tolerance"),
    (lambda d: d["checks"][0].update(measure="accuracy"), "runner 'dapperfl_footprint' makes no measurement 'accuracy'"),
    (lambda d: d.pop("claim"), "missing key 'claim'"),
    (lambda d: d.update(verdict="reproduced"), "unknown key 'verdict'"),
    (lambda d: d.update(runner="train_everything"), "unknown runner 'train_everything'"),
    (lambda d: d["settings"].pop("full"), "'settings' must have the modes quick, full and may have smoke"),
    (lambda d: d["settings"].update(tiny={}), "'settings' must have the modes quick, full and may have smoke"),
    (lambda d: d["settings"]["quick"].update(ratios=[]), "settings.quick: 'ratios' must be a non-empty list"),
    (lambda d: d["settings"]["quick"].update(published_flops=[1.0]), "'published_flops' needs one value per ratio"),
    (lambda d: d["settings"]["quick"].update(epochs=3), "settings.quick: unknown setting 'epochs'"),
    (lambda d: d.update(checks=[]), "'checks' must be a non-empty list"),
    (lambda d: d["checks"][0].update(paper={"values": [1.0]}), "checks[0].paper must have where (and optionally values)"),
    (lambda d: d["checks"][0].update(paper={"where": "Table 5", "values": [None]}),
     "checks[0].paper: 'values' must be a list of numbers or nulls with at least one number"),
    (lambda d: d["checks"][0].update(paper={"where": "Table 5", "value": 3}), "checks[0].paper must have where"),
])
def test_bad_definitions_are_refused_naming_the_file(edit, message):
    data = copy.deepcopy(raw_claim("dapperfl-footprint"))
    data["settings"]["quick"] = dict(data["settings"]["quick"])  # the yaml anchor shares one mapping
    edit(data)
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "manifests/claims/bad.yaml")
    assert str(exc.value).startswith("manifests/claims/bad.yaml: ") and message in str(exc.value)


def test_label_skew_train_options_are_checked():
    data = copy.deepcopy(raw_claim("hsu-label-skew"))
    data["settings"]["quick"]["train"]["rounds"] = 0
    with pytest.raises(HetbenchError, match=r"settings.quick.train: rounds must be a positive number"):
        parse_claim(data, "x.yaml")
    data = copy.deepcopy(raw_claim("hsu-label-skew"))
    data["settings"]["full"]["train"]["model"] = "vgg"
    with pytest.raises(HetbenchError, match=r"settings.full.train: unknown model 'vgg'"):
        parse_claim(data, "x.yaml")


def test_select_claims():
    assert select_claims("all") == claim_ids() == select_claims(None)
    assert select_claims("hsu-label-skew,dapperfl-footprint") == ["hsu-label-skew", "dapperfl-footprint"]
    for bad, message in (("hsu-fedmagic", "unknown claim 'hsu-fedmagic'; valid claims: " + ", ".join(ISSUE_IDS)),
                         (" , ", "claims is empty"), ("hsu-geo-clients,hsu-geo-clients", "names a claim twice")):
        with pytest.raises(HetbenchError, match=message):
            select_claims(bad)


@pytest.mark.parametrize("value", [-1, "0", True, [0]])
def test_label_skew_split_seed_is_one_non_negative_integer(value):
    data = copy.deepcopy(raw_claim("hsu-label-skew"))
    data["settings"]["quick"]["split_seed"] = value
    with pytest.raises(HetbenchError, match=r"settings.quick: 'split_seed' must be a non-negative integer"):
        parse_claim(data, "x.yaml")


def test_a_replicated_claim_runs_every_seed_of_the_set_with_its_replicates_and_sets_stay_disjoint():
    """A mode's ``replicates: r`` (its sample size, declared from a pilot) makes ``--seeds 0,1,2,3,4`` run
    each seed s as s, s + 1000, ...: two disjoint sets below 1000 stay disjoint, so quick-a and quick-b never
    share a run, and the dry run's estimate counts every replicate's runs."""
    from hetbench.reproduce.cost import Timing
    from hetbench.reproduce.estimates import estimate_claims
    from hetbench.reproduce.run_inputs import seeds_of

    data = copy.deepcopy(raw_claim("dapperfl-domains"))
    data["settings"]["quick"]["replicates"] = 3
    claim = parse_claim(data, "x.yaml")
    a, b = seeds_of(claim, "quick", [0, 1, 2, 3, 4]), seeds_of(claim, "quick", [5, 6, 7, 8, 9])
    assert len(a) == len(b) == 15 and not set(a) & set(b)
    assert a[:5] == [0, 1, 2, 3, 4] and a[5:10] == [1000, 1001, 1002, 1003, 1004] and max(a) == 2004
    assert seeds_of(claim, "quick", None) == a  # the yaml's quick seeds are 0-4
    data["settings"]["quick"]["replicates"] = 1
    plain = parse_claim(data, "x.yaml")

    class Measured(dict):  # the same per-step seconds for every model: no calibration in a unit test
        def __contains__(self, key):
            return True

        def __missing__(self, key):
            return Timing(0.01, 0.002, 0.5, 1e-4)

    (once,), (thrice,) = (estimate_claims([c], "quick", [0, 1, 2, 3, 4], "cpu", timings=Measured())
                          for c in (plain, claim))
    assert once.seconds > 0 and thrice.runs == 3 * once.runs and thrice.seconds == pytest.approx(3 * once.seconds, rel=0.01)
    with pytest.raises(HetbenchError, match=r"dapperfl-domains runs every seed s as s, s \+ 1000, s \+ 2000 "
                                            r"\(replicates: 3\): its seeds must be below 1000 \(got 1004\)"):
        seeds_of(claim, "quick", [0, 1, 2, 3, 1004])


@pytest.mark.parametrize("value, message", [
    (0, "'replicates' must be an integer from 1 to 10 (got 0)"), (11, "from 1 to 10 (got 11)"),
    ("2", "from 1 to 10 (got '2')"), (True, "from 1 to 10 (got True)"), (2.0, "from 1 to 10 (got 2.0)"),
])
def test_bad_replicates_are_refused_in_one_line(value, message):
    data = copy.deepcopy(raw_claim("dapperfl-domains"))
    data["settings"]["quick"]["replicates"] = value
    with pytest.raises(HetbenchError) as exc:
        parse_claim(data, "x.yaml")
    assert str(exc.value) == f"x.yaml: settings.quick: {message}" or message in str(exc.value)


def test_replicates_are_refused_for_a_claim_whose_measurements_do_not_vary_with_the_seed():
    data = copy.deepcopy(raw_claim("dapperfl-footprint"))
    data["settings"]["quick"] = dict(data["settings"]["quick"], replicates=2)
    with pytest.raises(HetbenchError, match="'replicates' is for claims whose measurements vary with the seed"):
        parse_claim(data, "x.yaml")


def test_the_papers_printed_numbers_are_declared_where_a_check_measures_what_the_paper_prints():
    """Table 4's and Table 1's differences, as the measures compute them; figure-only claims say so."""
    paper = {(cid, k.measure): k.paper for cid in claim_ids() for k in load_claim(cid).checks}
    assert paper["heteroswitch-table4", "variance_change"]["values"] == [pytest.approx(1.77 - 8.63)]
    assert paper["heteroswitch-table4", "worst_device_change"]["values"] == [pytest.approx(64.71 - 61.17)]
    assert paper["heteroswitch-table4", "average_change"]["values"] == [pytest.approx(67.38 - 64.01)]
    table1 = ((96.25 + 86.30 + 82.45 + 37.26) - (95.89 + 86.84 + 78.39 + 33.63)) / 4
    assert paper["dapperfl-domains", "mean_gap"]["values"] == [pytest.approx(table1, abs=0.005)]
    assert paper["dapperfl-domains", "domain_wins"]["values"] == [3]
    assert "figure only" in paper["hsu-label-skew", "accuracy_vs_alpha"]["where"]
    assert "values" not in paper["heteroswitch-stage-drop", "wb_tone_minus_others"]
