"""Bad input: one clear line on stderr, exit code 2, no output folder left behind."""

from __future__ import annotations

import pytest


def _write_csv(path, header, rows):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def csvs(tmp_path):
    no_label = _write_csv(tmp_path / "nolabel.csv", "x,y", [f"{i},{i % 3}" for i in range(30)])
    floats = _write_csv(tmp_path / "floats.csv", "x,label", [f"{i},{i * 0.5}" for i in range(30)])
    return {"no_label": no_label, "floats": floats}


CASES = {
    "missing label column": (["dirichlet", "--dataset", "{no_label}"], "label"),
    "named label column missing": (["dirichlet", "--dataset", "{no_label}", "--label-col", "species"], "species"),
    "alpha < 0": (["dirichlet", "--alpha", "-0.5"], "alpha"),
    "more clients than samples": (["dirichlet", "--clients", "5000"], "more clients"),
    "iid more clients than samples": (["iid", "--clients", "5000"], "more clients"),
    "sizes do not sum": (["iid", "--clients", "3", "--sizes", "10,10,10"], "sum"),
    "sizes wrong count": (["dirichlet", "--clients", "3", "--sizes", "10,10"], "3 clients"),
    "unknown dataset path": (["iid", "--dataset", "no/such/folder.parquet"], "not found"),
    "unknown builtin": (["iid", "--dataset", "builtin:cifar"], "built-in"),
    "float labels": (["iid", "--dataset", "{floats}"], "float"),
    "impossible min size": (["dirichlet", "--scheme", "class", "--min-size", "500"], "impossible"),
    "bad test fraction": (["iid", "--test-split", "client", "--test-fraction", "1.5"], "test-fraction"),
    "natural policy without natural key": (["iid", "--test-split", "natural"], "natural"),
    "global policy without test split": (["iid", "--test-split", "global"], "test split"),
    "natural-id missing column": (["natural-id", "--column", "writer"], "writer"),
    "natural-id min samples too high": (["natural-id", "--min-samples", "100000"], "min-samples"),
    "too many classes per client": (["classes-per-client", "--classes", "11"], "between 1 and 10"),
    "bad sizes text": (["iid", "--sizes", "a,b"], "comma"),
    "not a number": (["dirichlet", "--alpha", "lots"], "alpha"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2(case, tmp_path, csvs, run_cli):
    args, needle = CASES[case]
    args = [a.format(**csvs) for a in args]
    out = tmp_path / "out"
    code, stdout, err = run_cli("partition", *args, "--out", out)
    assert code == 2, (case, stdout, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hetbench: error:")
    assert needle.lower() in lines[0].lower(), lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_existing_out_without_overwrite(tmp_path, run_cli):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run_cli("partition", "iid", "--out", out)
    assert code == 2 and "--overwrite" in err
    assert (out / "keep.txt").read_text() == "mine"


def test_verify_on_a_non_build(tmp_path, run_cli):
    code, _, err = run_cli("verify", tmp_path)
    assert code == 2 and "not a hetbench build" in err


def test_corrupt_parquet_source(tmp_path, run_cli):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    code, _, err = run_cli("partition", "iid", "--dataset", bad, "--out", tmp_path / "o")
    assert code == 2 and "could not read" in err and len(err.strip().splitlines()) == 1
