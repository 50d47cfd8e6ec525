"""Stable verdicts: two runs with disjoint seed sets agree on every claim both decide."""

from __future__ import annotations

import json

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.stability import compare_runs, main


def _run(seeds, verdicts, mode="quick"):
    return {"mode": mode, "claims": [{"id": f"claim-{i}", "verdict": v, "seeds": seeds} for i, v in enumerate(verdicts)]}


def test_only_claims_both_runs_decide_are_compared():
    a = _run([0, 1, 2, 3, 4], ["reproduced", "inconclusive", "not run", "partially reproduced", "not reproduced"])
    b = _run([5, 6, 7, 8, 9], ["reproduced", "not reproduced", "reproduced", "partially reproduced", "reproduced"])
    out = compare_runs(a, b)
    assert [c["status"] for c in out["claims"]] == ["same", "undecided", "undecided", "same", "differs"]
    assert out["differs"] == ["claim-4"]


@pytest.mark.parametrize("b, message", [
    (_run([5, 6, 7, 8, 9], ["reproduced"], mode="full"), "different modes (quick and full)"),
    (_run([5, 6, 7, 8, 9], ["reproduced", "reproduced"]), "different claims"),
    (_run([4, 5, 6, 7, 8], ["reproduced"]), "claim-0: the runs share seed(s) 4; stability needs disjoint seed sets"),
])
def test_runs_that_cannot_be_compared_are_refused(b, message):
    with pytest.raises(HetbenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare_runs(_run([0, 1, 2, 3, 4], ["reproduced"]), b)


def test_a_deterministic_claim_may_repeat_its_one_seed():
    assert compare_runs(_run([0], ["reproduced"]), _run([0], ["reproduced"]))["differs"] == []


def test_the_command_exits_0_1_or_2(tmp_path, capsys):
    paths = {}
    for name, doc in {"a": _run([0, 1, 2, 3, 4], ["reproduced", "reproduced"]),
                      "same": _run([5, 6, 7, 8, 9], ["reproduced", "inconclusive"]),
                      "flip": _run([5, 6, 7, 8, 9], ["not reproduced", "reproduced"]),
                      "overlap": _run([0, 5, 6, 7, 8], ["reproduced", "reproduced"])}.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(doc))
    assert main([str(paths["a"]), str(paths["same"])]) == 0
    assert "0 of 2 claims differ" in capsys.readouterr().out
    assert main([str(paths["a"]), str(paths["flip"])]) == 1
    assert "1 of 2 claims differ: claim-0" in capsys.readouterr().out
    assert main([str(paths["a"]), str(paths["overlap"])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hetbench: error: claim-0: the runs share seed(s) 0") and len(err.strip().splitlines()) == 1
    assert main([str(paths["a"]), str(tmp_path / "missing.json")]) == 2


@pytest.mark.slow
def test_borazjani_zeta_gives_the_same_verdict_with_disjoint_seeds(tmp_path, capsys):
    """A real claim run twice, with seeds 0-4 and 5-9 (K-means seeds and Dirichlet draws differ): the
    verdicts both runs decide agree."""
    from hetbench.reproduce import reproduce

    for name, seeds in (("a", "0,1,2,3,4"), ("b", "5,6,7,8,9")):
        reproduce("borazjani-zeta", seeds=seeds, out=tmp_path / name, quiet=True)
    code = main([str(tmp_path / "a" / "claims.json"), str(tmp_path / "b" / "claims.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 of 1 claims differ" in out
