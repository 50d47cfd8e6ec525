"""benchmarks/lockstep_crossover.py (no timings asserted): every workload is timed both ways and the last
lines say where lockstep won and whether the client step's size separates its wins from its losses."""

from __future__ import annotations

from test_bench_lockstep import _module


def test_quick_run_times_both_ways_and_brackets_the_crossover(tmp_path, capsys):
    bench = _module("lockstep_crossover")
    bench.main(["--quick", "--results", str(tmp_path / "r.txt")])
    lines = (tmp_path / "r.txt").read_text().splitlines()
    assert lines[0].startswith("lockstep crossover: FedAvg on builtin:digits") and "cores, load" in lines[0]
    timed = [line for line in lines if "sequential / lockstep" in line]
    assert len(timed) == len(bench.QUICK)
    assert all(float(line.rsplit(" ", 1)[1].rstrip("x")) > 0 for line in timed)
    assert lines[-2].startswith("  rounds of 10 or more clients: lockstep faster in")  # one 10-client workload
    assert lines[-1].startswith(("  a bound on the client step separates them", "  no bound on the client step"))
