"""benchmarks/trainer_lockstep.py, part (d) of bench_trainer.py (no timings asserted): it times lockstep,
sequential and the plain loop on each workload, prints the compute floor, and bench_trainer turns (i) and
(ii) into figures with the issue's targets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _module(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_part_d_prints_every_side_and_the_floor(tmp_path, monkeypatch):
    lockstep = _module("trainer_lockstep")
    bench = _module("bench_trainer")
    # two small workloads under the names the summary turns into figures
    monkeypatch.setattr(lockstep, "WORKLOADS", (
        ("i", "builtin:digits", 8, "digits-cnn", 10, 4, 20, 2),
        ("ii", "builtin:digits", 8, "digits-cnn", 20, 3, 20, 2),
    ))
    lines: list[str] = []
    args = bench.parse_args(["--quick", "--skip-flower", "--skip-memory", "--skip-floor", "--results",
                             str(tmp_path / "r.txt")])
    figures = bench.lockstep_part(lines.append, tmp_path, args)
    text = "\n".join(lines)
    assert "(d) lockstep clients" in text and "GFLOP/s" in text
    for name in ("(i)", "(ii)"):
        assert name in text
    assert text.count("ms per round: lockstep") == 4  # two workloads x (1 thread, all cores)
    assert "batching can gain at most about" in text
    assert [f.target for f in figures] == ["lockstep_i", "lockstep_i", "lockstep_ii", "lockstep_ii"]
    assert all(f.value > 0 for f in figures)
    # issue 46's targets: 4x on the overhead workload, 1.3x on (i), not slower on (ii) and (iii)
    assert bench.Figure("d", "x", 1.4, "lockstep_i").met() and not bench.Figure("d", "x", 0.9, "lockstep_ii").met()
    assert not bench.Figure("d", "x", 1.81, "lockstep_overhead").met() and bench.Figure("d", "x", 1.0, "lockstep_iii").met()
