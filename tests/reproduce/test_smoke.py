"""``hetbench reproduce --smoke``: every claim with its toy settings through the code path of ``--quick``, in
seconds, and marked so that nobody reads a verdict into it: every check is ``no verdict (smoke run)``,
with what its criterion gave at that scale kept beside it; the seed-set documentation and the stability
check refuse a smoke run."""

from __future__ import annotations

import json

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce import claim_ids, load_claim
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import CHECK_VERDICTS, NO_VERDICT, NOT_RUN
from hetbench.reproduce.docs import render_documents
from hetbench.reproduce.runners import RUNNERS
from hetbench.reproduce.stability import compare_runs


@pytest.mark.slow
def test_every_claim_smokes_through_the_quick_code_path_and_decides_nothing(run_cli, tmp_path):
    out = tmp_path / "smoke"
    code, stdout, err = run_cli("reproduce", "--smoke", "--out", out)
    assert code == 0, err
    doc = json.loads((out / "claims.json").read_text())
    assert doc["mode"] == "smoke" and [c["id"] for c in doc["claims"]] == claim_ids()
    for claim in doc["claims"]:
        assert claim["verdict"] == NO_VERDICT, claim["id"]
        assert claim["settings"] == load_claim(claim["id"]).settings["smoke"]
        for check in claim["checks"]:
            assert check["verdict"] in (NO_VERDICT, NOT_RUN)  # a check whose data is missing stays not run
            if check["verdict"] == NO_VERDICT:  # what the criterion gave at toy scale is kept, never shown as one
                assert check["numbers"]["smoke_verdict"] in CHECK_VERDICTS
                assert check["reason"].startswith("smoke run:")
    trained = [c for c in doc["claims"] if RUNNERS[c["runner"]].trains]
    assert len(trained) == 13 and all(c["settling"]["runs"] for c in trained)  # each trained through the store
    assert sum(1 for _ in (out / "runs").rglob("*.json")) > len(trained)
    md = (out / "claims.md").read_text()
    assert "**Smoke run:" in md and "reproduced**" not in md
    assert "Smoke run:" in (out / "claims.html").read_text()
    summary = {line.split()[0]: line for line in stdout.splitlines() if line.split() and line.split()[0] in claim_ids()}
    assert sorted(summary) == claim_ids() and all("no verdict (smoke run)" in line for line in summary.values())

    with pytest.raises(HetbenchError, match="smoke run, whose numbers decide nothing"):
        render_documents([("", doc)], "text", "docs/reproduce.md")
    other = {**doc, "claims": [{**c, "seeds": [s + 100 for s in c["seeds"]]} for c in doc["claims"]]}
    with pytest.raises(HetbenchError, match="smoke runs"):
        compare_runs(doc, other)


def test_a_claim_that_trains_must_declare_its_smoke_settings():
    import yaml
    from importlib import resources

    data = yaml.safe_load(resources.files("hetbench.manifests").joinpath("claims", "hsu-label-skew.yaml").read_text())
    del data["settings"]["smoke"]
    with pytest.raises(HetbenchError, match="'settings' must have the modes quick, full, smoke"):
        parse_claim(data, "x.yaml")


def test_a_claim_that_trains_nothing_smokes_with_its_quick_settings():
    claim = load_claim("dapperfl-footprint")
    assert claim.settings["smoke"] == claim.settings["quick"]


def test_smoke_and_full_exclude_each_other(run_cli, tmp_path):
    code, _, err = run_cli("reproduce", "--smoke", "--full", "--out", tmp_path / "o")
    assert code == 2 and "--smoke and --full exclude each other" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_smoke_run_takes_any_seeds(run_cli, tmp_path):
    code, _, err = run_cli("reproduce", "--smoke", "--claims", "hsu-fedavgm", "--seeds", "3", "--out", tmp_path / "o",
                           "-q")
    assert code == 0, err
    doc = json.loads((tmp_path / "o" / "claims.json").read_text())
    assert doc["claims"][0]["seeds"] == [3] and doc["claims"][0]["verdict"] == NO_VERDICT
