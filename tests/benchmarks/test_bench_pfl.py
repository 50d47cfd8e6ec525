"""benchmarks/bench_pfl.py without pfl (never a dependency of hetbench): it says how to set pfl up, prints a
``skipped:`` line and exits 0; its options and its choice of timed rounds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        import bench_pfl
    finally:
        sys.path.remove(str(BENCH))
    return bench_pfl


def test_without_a_pfl_environment_it_skips_and_exits_0(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PFL_PYTHON"}
    results = tmp_path / "results.txt"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_pfl.py"), "--results", str(results)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1].startswith("skipped: pfl comparison")
    assert "pip install pfl==0.6.0" in proc.stdout and "PFL_PYTHON=" in proc.stdout
    assert not results.exists()


def test_a_python_without_pfl_is_a_skip_too(bench, tmp_path, capsys):
    # this interpreter is hetbench's, which must not have pfl
    assert bench.main(["--pfl-python", sys.executable, "--results", str(tmp_path / "r.txt")]) == 0
    out = capsys.readouterr().out
    assert "skipped: pfl comparison" in out and "does not import pfl" in out
    assert bench.main(["--pfl-python", str(tmp_path / "no-such-python")]) == 0
    assert "could not be run" in capsys.readouterr().out


def test_options_and_timed_rounds(bench, capsys):
    args = bench.parse_args(["--pfl-python", "x"])
    assert (args.repeats, args.rounds, args.warmup, args.eval_every) == (5, 50, 2, 5)
    assert Path(args.results) == BENCH / "results_pfl.txt"
    quick = bench.parse_args(["--quick"])
    assert (quick.repeats, quick.rounds, quick.results) == (1, 6, None)
    for bad in (["--repeats", "0"], ["--rounds", "0"], ["--seed", "-1"], ["--rounds", "3", "--warmup", "2"]):
        with pytest.raises(SystemExit) as exc:
            bench.parse_args(bad)
        assert exc.value.code == 2, bad
    capsys.readouterr()
    # evaluated rounds (every 5th and the last) and warm-up rounds hold no timed span
    assert bench.timed_rounds(12, 2, 5) == [3, 4, 6, 7, 8, 9, 11]
    assert bench.per_round_seconds([1.0, 3.0, 4.0, 6.0], [3, 4]) == pytest.approx(1.5)
    # the workload
    assert bench.OVERHEAD == dict(dataset="builtin:digits", clients=500, per_round=50, rounds=50, model="digits-cnn")
    assert bench.SGD == dict(local_epochs=1, batch_size=10, lr=0.05) and bench.TARGET == 3.0


def test_the_pfl_side_imports_no_hetbench():
    source = (BENCH / "pfl_side.py").read_text()
    assert "import hetbench" not in source and "from hetbench" not in source
