"""docs/reproduce.md: its Python examples run and print what they show, and it documents every claim and
criterion that exists."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from hetbench.reproduce import CRITERIA, claim_ids

DOC = Path(__file__).resolve().parents[2] / "docs" / "reproduce.md"


def test_the_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```pycon\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, DOC.name, str(DOC), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0


def test_every_claim_and_criterion_is_documented():
    text = DOC.read_text(encoding="utf-8")
    for cid in claim_ids():
        assert f"### `{cid}`" in text
    for name in CRITERIA:
        assert f"`{name}`" in text


#: the committed seed sets (disjoint seeds), in the order the documents show them
SETS = ("quick-a", "quick-b")


def committed_sets() -> list[tuple[str, dict]]:
    """(label, claims.json) of each committed seed set; quick-a must exist."""
    import json

    root = DOC.parents[1] / "docs" / "claims"
    assert (root / SETS[0] / "claims.json").is_file(), "docs/claims/quick-a/claims.json is missing"
    return [(name, json.loads((root / name / "claims.json").read_text())) for name in SETS
            if (root / name / "claims.json").is_file()]


def test_the_documented_results_are_the_committed_claims_json():
    """docs/reproduce.md's results and the README's claim table are generated from the committed seed sets'
    claims.json (python -m hetbench.reproduce.docs): rendering them again changes nothing, and every claim
    has its region."""
    from hetbench.reproduce.docs import render_documents

    root = DOC.parents[1]
    sets = committed_sets()
    for _, doc in sets:
        assert doc["mode"] == "quick" and sorted(c["id"] for c in doc["claims"]) == claim_ids()
    for path in (DOC, root / "README.md"):
        text = path.read_text(encoding="utf-8")
        assert render_documents(sets, text, path.name) == text, f"{path.name} differs from the committed results"
    text = DOC.read_text(encoding="utf-8")
    for cid in claim_ids():
        assert f"<!-- claim-result: {cid} -->" in text
    assert "<!-- claims-table -->" in (root / "README.md").read_text(encoding="utf-8")


def test_the_seed_sets_are_disjoint_and_agree_on_every_claim_both_decide():
    """A verdict must survive a second seed set: a claim decided (reproduced, not reproduced or partially
    reproduced) in two committed sets gets the same verdict in both; their seeds never overlap."""
    from hetbench.reproduce.verdicts import DECIDED

    sets = committed_sets()
    for (a, doc_a), (b, doc_b) in zip(sets, sets[1:]):
        other = {c["id"]: c for c in doc_b["claims"]}
        for c in doc_a["claims"]:
            o = other[c["id"]]
            trained = c.get("runs", {}).get("needed", 0) > 0
            if trained:
                assert not set(c["seeds"]) & set(o["seeds"]), (c["id"], c["seeds"], o["seeds"])
            if c["verdict"] in DECIDED and o["verdict"] in DECIDED:
                assert c["verdict"] == o["verdict"], f"{c['id']}: {a} {c['verdict']}, {b} {o['verdict']}"


def test_render_documents_refuses_a_region_for_an_unknown_claim():
    import pytest

    from hetbench.errors import HetbenchError
    from hetbench.reproduce.docs import render_documents

    with pytest.raises(HetbenchError, match="names 'hsu-x', which the results do not hold"):
        render_documents([("quick-a", {"mode": "quick", "claims": []})],
                         "<!-- claim-result: hsu-x -->\n<!-- /claim-result -->", "doc.md")


def test_the_committed_run_is_of_the_claims_as_now_declared():
    """The committed seed sets were made with today's definitions: a claim whose settings, criteria or
    settle rule changed needs new runs (and the documents regenerated) before it lands. Seeds may differ
    between sets (--seeds)."""
    from hetbench.reproduce.claims import load_claim

    for name, doc in committed_sets():
        for record in doc["claims"]:
            claim = load_claim(record["id"])
            quick = {k: v for k, v in claim.settings["quick"].items() if k != "seeds"}
            have = {k: v for k, v in record["settings"].items() if k != "seeds"}
            assert have == quick, f"{name} {claim.id}: settings changed since the committed run"
            assert [c["criterion"] for c in record["checks"]] == [k.criterion for k in claim.checks], claim.id
            assert record.get("settling", {}).get("evaluations") == (claim.settle or {}).get("evaluations"), claim.id
            assert record.get("settling", {}).get("max_change") == (claim.settle or {}).get("max_change"), claim.id
            runs = record.get("runs", {})
            assert runs.get("done", 0) >= runs.get("needed", 0), \
                f"{name} {claim.id}: {record['runs']} runs: the committed record is not complete"
            if runs.get("done", 0) > runs.get("needed", 0):  # beyond the plan: only a rate that diverged and was left
                assert any(record["facts"].get("evaluation_fallbacks", {}).values()), f"{name} {claim.id}: {runs}"
