"""benchmarks/bench_trainer.py (no timings asserted): its options, its summary, and that its compute floor
(benchmarks/trainer_floor.py, FedAvg as a plain PyTorch loop) takes exactly hetbench's SGD steps."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _module(name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _module("bench_trainer")


@pytest.fixture(scope="module")
def digits_split(tmp_path_factory):
    """The built-in digits, Dirichlet 0.5 over 10 clients (hetbench's embedded default split)."""
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("bench") / "digits-n10"
    make_split("builtin:digits", DirichletPartitioner(10, 0.5, "client", None, 0), out, seed=0, test_fraction=0.2,
               quiet=True)
    return out


def test_options_defaults_quick_and_bad_values(bench, capsys):
    full = bench.parse_args([])
    assert (full.repeats, full.memory_images, full.quick) == (3, 200_000, False)
    assert Path(full.results) == BENCH / "results_trainer.txt"
    quick = bench.parse_args(["--quick", "--skip-flower", "--skip-memory"])
    assert (quick.repeats, quick.memory_images, quick.results) == (1, bench.QUICK_MEMORY_IMAGES, None)
    assert quick.skip_flower and quick.skip_memory and not quick.skip_floor
    assert bench.parse_args(["--quick", "--memory-images", "500", "--repeats", "2"]).memory_images == 500
    for bad in (["--repeats", "0"], ["--memory-images", "0"], ["--seed", "-1"], ["--rounds", "3"]):
        with pytest.raises(SystemExit) as exc:
            bench.parse_args(bad)
        assert exc.value.code == 2, bad
    assert "must be at least 1" in capsys.readouterr().err
    # the issue's settings; --quick only shrinks them
    assert (bench.FLOOR["dataset"], bench.FLOOR["model"], bench.FLOOR["clients"], bench.FLOOR["per_round"],
            bench.FLOOR["rounds"]) == ("builtin:mnist5k", "lenet", 100, 10, 20)
    assert (bench.OVERHEAD["dataset"], bench.OVERHEAD["model"], bench.OVERHEAD["clients"],
            bench.OVERHEAD["per_round"], bench.OVERHEAD["rounds"]) == ("builtin:digits", "digits-cnn", 500, 50, 50)
    assert bench.QUICK_FLOOR["rounds"] < bench.FLOOR["rounds"]


def test_figures_say_met_against_the_issue_targets(bench):
    fig = bench.Figure("a", "floor", 1.149, "floor")
    assert fig.met() and "target <= 1.15x: MET" in fig.line()
    assert not bench.Figure("a", "floor", 1.2, "floor").met()
    assert bench.Figure("b", "overhead", 10.0, "overhead").met()
    assert "NOT MET" in bench.Figure("b", "overhead", 9.9, "overhead").line()
    # trainer_memory.run's keys: peak_rss in bytes, speedup a ratio
    figs = bench.memory_figures({"peak_rss": 1_200_000_000, "speedup": 1.5, "images": 10, "rss_ok": True})
    assert [(f.target, round(f.value, 3), f.met()) for f in figs] == [("rss", 1.2, True), ("decode", 1.5, False)]
    assert "1.2 GB   target < 1.5 GB: MET" in figs[0].line()
    assert [f.met() for f in bench.memory_figures({"peak_rss": 1.6e9, "speedup": 1.8})] == [False, True]
    assert bench.memory_figures({}) == []


def test_the_floor_loop_takes_hetbench_steps_bit_for_bit(digits_split):
    import torch

    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.data import load_federated
    from hetbench.train.simulation import run_training

    floor = _module("trainer_floor")
    data = load_federated(str(digits_split), quiet=True)
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cfg = TrainConfig(rounds=3, clients_per_round=3, local_epochs=2, batch_size=32, lr=0.05, model="digits-cnn",
                          seed=3, eval_every=2, workers=1, device="cpu")
        doc, run = run_training(data, make_algorithm("fedavg"), cfg, return_state=True)
        plain = floor.fedavg_plain(data, model_name="digits-cnn", rounds=3, per_round=3, local_epochs=2,
                                   batch_size=32, lr=0.05, seed=3, eval_every=2)
    finally:
        torch.set_num_threads(saved)
    assert torch.equal(run.global_params, plain.params)
    assert [r for r, _ in plain.curve] == doc["curves"]["round"] == [2, 3]
    assert [round(a, 4) for _, a in plain.curve] == doc["curves"]["accuracy"]
    assert plain.seconds > 0
    # another seed trains other clients on other batches: the comparison above can tell them apart
    other = floor.fedavg_plain(data, model_name="digits-cnn", rounds=1, per_round=3, batch_size=32, seed=4, eval_every=1)
    assert not torch.equal(other.params, plain.params)


def test_quick_floor_part_reports_the_one_thread_comparison(bench, digits_split):
    say = bench.Report()
    setting = dict(dataset="builtin:digits", clients=10, per_round=2, rounds=2, model="digits-cnn")
    args = bench.parse_args(["--quick", "--skip-all-cores", "--skip-flower", "--skip-memory"])
    figures = bench.floor_part(say, digits_split, setting, args)
    assert [f.target for f in figures] == ["floor", "gap"]
    assert figures[0].value > 0 and figures[1].value == 0.0
    heading = say.lines.index("  1 torch thread each, hetbench --workers 1:")
    assert say.lines[heading + 4].endswith("accuracy gap 0.00 points; max |param difference| 0")
    assert not any(line.endswith("(information):") for line in say.lines)  # --skip-all-cores
