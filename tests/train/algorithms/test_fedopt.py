"""FedAdagrad, FedAdam and FedYogi (Reddi et al. 2021, Algorithm 2): the server step by hand, the range
refusals, FedAvg's client side, the per-round step norm and checkpoints."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from hetbench.errors import HetbenchError
from hetbench.train.algorithms import ClientUpdate, TrainConfig, make_algorithm
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.usefixtures("one_thread")
NAMES = ("fedadagrad", "fedadam", "fedyogi")
SIZES = (10, 14, 8, 12, 9, 11)


class _Run:
    """The part of RunState the server side uses."""

    def __init__(self, x) -> None:
        self.global_params = torch.tensor(x, dtype=torch.float32)
        self.global_buffers = torch.zeros(0)
        self.log: dict[str, list] = {}

    def record(self, key, value) -> None:
        self.log.setdefault(key, []).append(value)


def _round(algo, run, r, clients) -> None:
    """One server round: ``clients`` are (client model change Delta_i, n_i)."""
    algo.begin_round(run, r)
    x = run.global_params.clone()
    for k, (delta, n) in enumerate(clients):
        algo.accumulate(run, r, ClientUpdate(k, x + torch.tensor(delta), torch.zeros(0), float(n), 0.0, 1, n))
    algo.end_round(run, r)


@pytest.mark.parametrize("name", NAMES)
def test_two_server_rounds_follow_algorithm_2_by_hand(name):
    eta, beta1, beta2, tau = 0.5, 0.5, 0.8, 0.1
    opts = {"server_lr": eta, "beta1": beta1, "tau": tau, **({} if name == "fedadagrad" else {"beta2": beta2})}
    algo = make_algorithm(name, **opts)
    x = np.array([0.0, 1.0, -2.0])
    run = _Run(x)
    algo.setup(run)
    # round 1: Delta_1 = (1 * [0.2, -1.4, 2.0] + 3 * [0.0, -0.2, 2.0]) / 4 = [0.05, -0.5, 2.0], weighted by n_i
    # (a uniform mean would give [0.1, -0.8, 2.0]); v_-1 = tau^2 = 0.01 lies above Delta_1^2 = 0.0025 in the
    # first entry and below it in the others, so Yogi's sign differs between them
    rounds = [
        [([0.2, -1.4, 2.0], 1), ([0.0, -0.2, 2.0], 3)],
        [([1.0, 0.02, -0.3], 2), ([1.0, 0.0, -0.3], 2)],  # Delta_2 = [1.0, 0.01, -0.3]
    ]
    m, v = np.zeros(3), np.full(3, tau**2)
    for r, clients in enumerate(rounds, start=1):
        delta = sum(n * np.array(d) for d, n in clients) / sum(n for _, n in clients)
        m = beta1 * m + (1 - beta1) * delta
        if name == "fedadagrad":
            v = v + delta**2
        elif name == "fedadam":
            v = beta2 * v + (1 - beta2) * delta**2
        else:
            v = v - (1 - beta2) * delta**2 * np.sign(v - delta**2)
        step = eta * m / (np.sqrt(v) + tau)
        x = x + step
        _round(algo, run, r, clients)
        np.testing.assert_allclose(algo.m.numpy(), m, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(algo.v.numpy(), v, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(run.global_params.numpy(), x, rtol=1e-5, atol=1e-6)
        assert run.log["server_step_norm"][-1] == pytest.approx(float(np.linalg.norm(step)), rel=1e-5)
    assert len(run.log["server_step_norm"]) == 2


def test_the_first_step_differs_between_the_three_as_their_v_does():
    """One and the same Delta: Adam's and Yogi's v_0 = tau^2 +- (1 - beta2) Delta^2, Adagrad's tau^2 + Delta^2."""
    steps = {}
    for name in NAMES:
        algo = make_algorithm(name, tau=0.1)
        run = _Run([0.0])
        algo.setup(run)
        _round(algo, run, 1, [([1.0], 1)])
        steps[name] = float(run.global_params)
    adam_v = 0.99 * 0.01 + 0.01 * 1.0  # beta2 tau^2 + (1 - beta2) Delta^2
    yogi_v = 0.01 + 0.01 * 1.0  # tau^2 - (1 - beta2) Delta^2 sign(tau^2 - Delta^2)
    assert steps["fedadam"] == pytest.approx(0.01 * 0.1 / (adam_v**0.5 + 0.1), rel=1e-6)
    assert steps["fedyogi"] == pytest.approx(0.01 * 0.1 / (yogi_v**0.5 + 0.1), rel=1e-6)
    assert steps["fedadagrad"] == pytest.approx(0.1 * 0.1 / ((0.01 + 1.0) ** 0.5 + 0.1), rel=1e-6)


@pytest.mark.parametrize("name, option, value, message", [
    ("fedadam", "tau", 0.0, "tau must be a positive number (got 0.0)"),
    ("fedyogi", "tau", -1e-3, "tau must be a positive number (got -0.001)"),
    ("fedadagrad", "server_lr", 0.0, "server_lr must be a positive number (got 0.0)"),
    ("fedadam", "server_lr", float("inf"), "server_lr must be a positive number (got inf)"),
    ("fedyogi", "beta1", 1.0, "beta1 must be in [0, 1) (got 1.0)"),
    ("fedadagrad", "beta1", -0.1, "beta1 must be in [0, 1) (got -0.1)"),
    ("fedadam", "beta2", 1.0, "beta2 must be in [0, 1) (got 1.0)"),
    ("fedyogi", "beta2", float("nan"), "beta2 must be in [0, 1) (got nan)"),
    ("fedadagrad", "beta2", 0.9, "fedadagrad takes no option beta2 (options: server_lr, beta1, tau)"),
])
def test_values_out_of_range_are_refused_naming_the_parameter(name, option, value, message):
    with pytest.raises(HetbenchError) as err:
        make_algorithm(name, **{option: value})
    assert str(err.value) == message


def test_the_cli_refuses_a_bad_value_in_one_line_and_writes_nothing(digits_split, tmp_path, run_cli):
    out = tmp_path / "out"
    for args, said in ((("--algo", "fedyogi", "--tau", "0"), "--tau must be a positive number"),
                       (("--algo", "fedavg,fedadam", "--beta1", "1"), "--beta1 must be in [0, 1)"),
                       (("--algo", "fedadagrad", "--beta2", "0.9"), "--beta2 is not an option of fedadagrad")):
        code, _, err = run_cli("train", "--split", digits_split, *args, "--rounds", "1", "-q", "--out", out)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists() or not any(out.rglob("*"))


def test_defaults_are_the_papers():
    assert make_algorithm("fedadam").params == {"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 0.001}
    assert make_algorithm("fedyogi").params == {"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 0.001}
    assert make_algorithm("fedadagrad").params == {"server_lr": 0.1, "beta1": 0.9, "tau": 0.01}
    assert TrainConfig().for_algorithm(make_algorithm("fedyogi")).lr == 0.05  # FedAvg's client rate


@pytest.mark.parametrize("name", NAMES)
def test_clients_train_as_fedavg_and_every_round_records_the_step_norm(tiny_data, name, monkeypatch):
    data = tiny_data(sizes=SIZES, skew=True)
    config = TrainConfig(rounds=1, clients_per_round=3, batch_size=4, lr=0.1)
    seen: dict[str, list] = {}
    for algo_name in ("fedavg", name):
        algo = make_algorithm(algo_name)
        keep = algo.accumulate

        def accumulate(run, r, update, keep=keep, algo_name=algo_name):
            seen.setdefault(algo_name, []).append(update.params.clone())
            keep(run, r, update)

        monkeypatch.setattr(algo, "accumulate", accumulate)
        doc, run = run_training(data, algo, config, return_state=True)
    assert len(seen[name]) == 3 and all(torch.equal(a, b) for a, b in zip(seen["fedavg"], seen[name]))
    doc = run_training(data, make_algorithm(name), TrainConfig(rounds=3, clients_per_round=3, batch_size=4, lr=0.1))
    norms = doc["curves"]["algorithm"]["server_step_norm"]
    assert len(norms) == 3 and all(n > 0 for n in norms)
    json.dumps(doc)  # the log is plain numbers


class Interrupted(Exception):
    pass


def _without_timing(doc: dict) -> str:
    return json.dumps({k: v for k, v in doc.items() if k != "timing"}, sort_keys=True)


@pytest.mark.parametrize("name", NAMES)
def test_a_resumed_run_equals_an_uninterrupted_one(tiny_data, tmp_path, name):
    data = tiny_data(sizes=SIZES, skew=True)

    def config(**options) -> TrainConfig:
        return TrainConfig(rounds=5, clients_per_round=3, batch_size=4, lr=0.1, eval_every=2, **options)

    def stop_at_3(r, summary):
        if r == 3:
            raise Interrupted

    reference = run_training(data, make_algorithm(name), config())
    ckpt = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):
        run_training(data, make_algorithm(name), config(checkpoint_every=2), checkpoint=ckpt, on_round=stop_at_3)
    state = torch.load(ckpt, weights_only=True)
    assert state["round"] == 2 and {"m", "v"} <= set(state["algorithm"])
    assert len(state["log"]["server_step_norm"]) == 2
    assert not torch.equal(state["algorithm"]["m"], torch.zeros_like(state["algorithm"]["m"]))
    resumed = run_training(data, make_algorithm(name), config(checkpoint_every=2, workers=2), checkpoint=ckpt,
                           resume=True)
    assert _without_timing(resumed) == _without_timing(reference)
