"""Loading: result files read and validated, malformed ones skipped and listed, duplicates dropped."""

from __future__ import annotations

import re

import pytest

from hetbench import leaderboard as lb
from leaderboard_results import result, write, tables_of, row


def test_corrupt_and_malformed_files_are_skipped_and_listed(tmp_path, run_lb):
    res = tmp_path / "results"
    write(res, "good.json", result())
    write(res, "sub/broken.json", '{"kind": "hetbench-train-result", ')
    write(res, "no_final.json", {k: v for k, v in result().items() if k != "final"})
    write(res, "bad_type.json", result(final={"accuracy": "high"}, curves={}))
    write(res, "other.json", {"kind": "hetbench-something-else", "x": 1})  # not a result: ignored, not listed
    write(res, "list.json", [1, 2, 3])
    write(res, "notes.txt", "not json at all")
    code, stdout, stderr = run_lb(res, "--out", tmp_path / "lb")
    assert code == 0
    warnings = stderr.strip().splitlines()
    assert len(warnings) == 3 and all(w.startswith("hetbench: warning: skipped ") for w in warnings)
    assert "sub/broken.json" in stderr and "no_final.json" in stderr and "bad_type.json" in stderr
    assert "other.json" not in stderr and "list.json" not in stderr
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    footer = md.strip().splitlines()[-1]
    assert footer.startswith("Skipped files (3):") and "sub/broken.json" in footer and "no_final.json" in footer
    assert "3 skipped" in stdout
    _, loaded = lb.build(res)
    assert len(loaded.results) == 1 and len(loaded.skipped) == 3 and loaded.ignored == 2


def test_duplicate_seed_is_skipped(tmp_path):
    write(tmp_path, "a.json", result(final={"accuracy": 80.0}))
    write(tmp_path, "b.json", result(final={"accuracy": 90.0}))
    tables, loaded = lb.build(tmp_path)
    assert tables[0].rows[0].stats["accuracy"].mean == 80.0
    assert [s.path for s in loaded.skipped] == ["b.json"] and "duplicate of a.json" in loaded.skipped[0].reason


def test_per_client_parameters_and_macs(tmp_path):
    write(tmp_path, "a.json", result(algorithm="hetero", client_parameters=[100, 200, 300], parameters=999))
    write(tmp_path, "b.json", result(algorithm="fedavg", parameters=999))
    (t,) = tables_of(tmp_path)
    assert row(t, "hetero").stats["parameters"].mean == 200.0
    assert row(t, "fedavg").stats["parameters"].mean == 999.0
    assert row(t, "fedavg").stats["macs"].mean == 5000.0


def test_params_and_config_keep_non_ascii_text(tmp_path):
    """The CSV's params/config cells are JSON that people read: "µ" stays "µ" (not "\\u00b5")."""
    write(tmp_path, "a.json", result(algorithm="fedprox", params={"µ": 0.1}, config={"group_by": "ß"}))
    assert lb.load.json_text({"µ": 0.1}) == '{"µ":0.1}'
    row_csv = lb.render_csv(tables_of(tmp_path)).splitlines()[1]
    assert '"{""µ"":0.1}"' in row_csv and '""group_by"":""ß""' in row_csv


@pytest.mark.parametrize("data, reason", [
    ({"schema_version": 3}, "schema_version 3 is not supported (this hetbench reads 1, 2)"),
    ({"schema_version": 2}, "missing 'final.best'"),
    ({"schema_version": True}, "schema_version True is not supported"),
    ({"algorithm": {"name": "fedavg", "params": [1]}}, "'algorithm.params' is not an object"),
    ({"split": {"name": "s"}}, "missing 'split.fingerprint'"),
    ({"config": {"rounds": 3}}, "missing 'config.seed'"),
    ({"final": {"loss": 0.1}}, "missing 'final.accuracy'"),
    ({"clients": {"parameters": 12}}, "clients.parameters is not a list"),
])
def test_malformed_results_say_why(data, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        lb.parse_result({**result(), **data})


def test_other_json_is_not_a_result():
    assert lb.parse_result([1, 2]) is None and lb.parse_result({"kind": "hetbench-split"}) is None


def test_deeply_nested_json_is_skipped_as_malformed(tmp_path):
    write(tmp_path, "good.json", result())
    write(tmp_path, "deep.json", '{"kind": "hetbench-train-result", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    deep = result()
    nested: list = []
    for _ in range(70):  # readable by json, but deeper than a result ever is
        nested = [nested]
    deep["algorithm"]["params"] = {"p": nested}
    write(tmp_path, "deep_params.json", deep)
    loaded = lb.load_results(tmp_path)
    assert [r.path for r in loaded.results] == ["good.json"]
    reasons = {s.path: s.reason for s in loaded.skipped}
    assert reasons == {"deep.json": "not valid JSON (nested more than 64 levels deep)",
                       "deep_params.json": "nested more than 64 levels deep"}
