"""Every embedded output is byte-identical to the recorded fingerprints (tests/output_fingerprints.py).

A change that alters what a user gets (a parquet row, a manifest key, a report number, a plot) fails
here; re-record only when the change is meant, and say so in the commit.
"""

from __future__ import annotations

import json

import pytest

from output_fingerprints import RECORD, build_all, compare, versions


@pytest.mark.slow
def test_every_embedded_output_matches_its_recorded_fingerprint(tmp_path, run_cli):
    recorded = json.loads(RECORD.read_text())

    def run(*args):
        code, out, err = run_cli(*args)
        assert code == 0, f"hetbench {' '.join(args)} exited {code}: {err}"

    now = build_all(tmp_path, run)
    same = {lib: versions()[lib] == recorded["versions"][lib] for lib in ("pyarrow", "matplotlib")}
    problems = compare(recorded, now, same)
    assert not problems, "outputs changed:\n" + "\n".join(problems)
    assert set(now) == set(recorded["outputs"])


def test_compare_names_what_changed():
    recorded = {"outputs": {"a": {"x.json": {"bytes": "1"}, "d.parquet": {"bytes": "2", "content": "c"}}}}
    now = {"a": {"x.json": {"bytes": "9"}, "d.parquet": {"bytes": "3", "content": "c"}, "y.png": {"bytes": "0"}}}
    assert compare(recorded, now, {"pyarrow": True, "matplotlib": True}) == [
        "a/d.parquet: differs", "a/x.json: differs", "a/y.png: new file"]
    # another pyarrow: parquet compared by content only
    assert compare(recorded, now, {"pyarrow": False, "matplotlib": True}) == ["a/x.json: differs", "a/y.png: new file"]
