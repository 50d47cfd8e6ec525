"""Claim definitions: the shipped ones validate; a bad definition is one clear error naming the file."""

from __future__ import annotations

import copy

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import claim_ids, load_claim, parse_claim, select_claims
from claim_definitions import raw_claim

#: every claim id the issue names (part of the command-line interface)
ISSUE_IDS = ["borazjani-zeta", "dapperfl-domains", "dapperfl-footprint", "defaults-learn", "heteroswitch-stage-drop", "heteroswitch-table4",
             "hsu-fedavgm", "hsu-fedvc-fedir", "hsu-geo-clients", "hsu-label-skew"]


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
    with pytest.raises(HetbenchError, match=r"settings.quick.train: --rounds must be a positive number"):
        parse_claim(data, "x.yaml")
    data = copy.deepcopy(raw_claim("hsu-label-skew"))
    data["settings"]["full"]["train"]["model"] = "vgg"
    with pytest.raises(HetbenchError, match=r"settings.full.train: unknown model 'vgg'"):
        parse_claim(data, "x.yaml")


def test_select_claims():
    assert select_claims("all") == claim_ids() == select_claims(None)
    assert select_claims("hsu-label-skew,dapperfl-footprint") == ["hsu-label-skew", "dapperfl-footprint"]
    for bad, message in (("hsu-fedmagic", "unknown claim 'hsu-fedmagic'; valid claims: " + ", ".join(ISSUE_IDS)),
                         (" , ", "--claims is empty"), ("hsu-geo-clients,hsu-geo-clients", "names a claim twice")):
        with pytest.raises(HetbenchError, match=message):
            select_claims(bad)


@pytest.mark.parametrize("value", [-1, "0", True, [0]])
def test_label_skew_split_seed_is_one_non_negative_integer(value):
    data = copy.deepcopy(raw_claim("hsu-label-skew"))
    data["settings"]["quick"]["split_seed"] = value
    with pytest.raises(HetbenchError, match=r"settings.quick: 'split_seed' must be a non-negative integer"):
        parse_claim(data, "x.yaml")
