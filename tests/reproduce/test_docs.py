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


def test_the_documented_results_are_the_committed_claims_json():
    """docs/reproduce.md's results and the README's claim table are generated from the committed
    docs/claims/quick/claims.json (python -m hetbench.reproduce.docs): rendering them again changes
    nothing, and every claim has its region."""
    import json

    from hetbench.reproduce.docs import render_documents

    root = DOC.parents[1]
    doc = json.loads((root / "docs" / "claims" / "quick" / "claims.json").read_text())
    assert doc["mode"] == "quick" and sorted(c["id"] for c in doc["claims"]) == claim_ids()
    for path in (DOC, root / "README.md"):
        text = path.read_text(encoding="utf-8")
        assert render_documents(doc, text, path.name) == text, f"{path.name} differs from the committed results"
    text = DOC.read_text(encoding="utf-8")
    for cid in claim_ids():
        assert f"<!-- claim-result: {cid} -->" in text
    assert "<!-- claims-table -->" in (root / "README.md").read_text(encoding="utf-8")


def test_render_documents_refuses_a_region_for_an_unknown_claim():
    import pytest

    from hetbench.errors import HetbenchError
    from hetbench.reproduce.docs import render_documents

    with pytest.raises(HetbenchError, match="names 'hsu-x', which the results do not hold"):
        render_documents({"mode": "quick", "claims": []}, "<!-- claim-result: hsu-x -->\n<!-- /claim-result -->",
                         "doc.md")


def test_the_committed_run_is_of_the_claims_as_now_declared():
    """The committed quick run was made with today's definitions: a claim whose settings, criteria or
    settle rule changed needs a new run (and the documents regenerated) before it lands."""
    import json

    from hetbench.reproduce.claims import load_claim

    doc = json.loads((DOC.parents[1] / "docs" / "claims" / "quick" / "claims.json").read_text())
    for record in doc["claims"]:
        claim = load_claim(record["id"])
        assert record["settings"] == claim.settings["quick"], f"{claim.id}: settings changed since the committed run"
        assert [c["criterion"] for c in record["checks"]] == [k.criterion for k in claim.checks], claim.id
        assert record.get("settling", {}).get("evaluations") == (claim.settle or {}).get("evaluations"), claim.id
        assert record.get("settling", {}).get("max_change") == (claim.settle or {}).get("max_change"), claim.id
