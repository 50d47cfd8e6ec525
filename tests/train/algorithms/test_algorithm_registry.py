"""make_algorithm and the ALGORITHMS registry: library callers get the CLI's checks."""

from __future__ import annotations

import pytest

from hetbench.registry import Registry
from hetbench.train.algorithms import ALGORITHMS, TrainConfig, make_algorithm
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.usefixtures("one_thread")


def test_library_callers_get_the_same_checks_as_the_cli(tiny_data):
    from hetbench.errors import HetbenchError

    with pytest.raises(HetbenchError, match="ema_alpha must be in"):
        make_algorithm("heteroswitch", ema_alpha=1.5)
    with pytest.raises(HetbenchError, match="pruning_ratios"):
        make_algorithm("dapperfl", pruning_ratios=(0.0, 1.0))
    with pytest.raises(HetbenchError, match="unknown algorithm"):
        make_algorithm("fedmagic")
    with pytest.raises(HetbenchError, match="lr must be a positive number"):
        run_training(tiny_data(), make_algorithm("fedavg"), TrainConfig(lr=float("nan")))


def test_algorithms_are_a_registry_that_names_the_option_and_the_choices():
    assert isinstance(ALGORITHMS, Registry)
    assert ALGORITHMS.names() == (
        "fedavg", "fedavgm", "fedprox", "scaffold", "qfedavg", "fedir", "fedvc", "heteroswitch", "dapperfl", "fedbn",
        "fedadam", "fedyogi", "fedadagrad", "central")
    assert all(ALGORITHMS[name].name == name for name in ALGORITHMS)
    with pytest.raises(KeyError) as err:
        make_algorithm("fedmagic")
    assert str(err.value) == f"unknown algorithm 'fedmagic' for algo; choose one of: {', '.join(ALGORITHMS)}"
    assert type(make_algorithm(" FedAvgM ")).__name__ == "FedAvgM"


def test_make_algorithm_keeps_the_defaults_and_refuses_options_the_algorithm_does_not_take():
    from hetbench.errors import HetbenchError

    assert make_algorithm("fedprox").params == {"server_lr": 1.0, "mu": 0.1}
    assert make_algorithm("fedprox", mu=None, vc_size=None).params == {"server_lr": 1.0, "mu": 0.1}
    with pytest.raises(HetbenchError, match="fedprox takes no option vc_size"):
        make_algorithm("fedprox", vc_size=32)


def test_every_hyper_parameter_is_declared_with_its_source_and_a_default_its_range_allows():
    for name in ALGORITHMS:
        cls = ALGORITHMS[name]
        for key, spec in cls.hyper.items():
            assert spec.source and spec.help.endswith("."), (name, key)
            assert spec.check(key, spec.default) == (tuple(spec.default) if spec.sequence else spec.default)
        assert cls.defaults == {k: s.default for k, s in cls.hyper.items()}
        assert set(cls.client_state).isdisjoint(cls.server_to_client)
