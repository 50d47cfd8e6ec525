"""Every algorithm's defaults learn on a strongly label-skewed split (issue 12): ``builtin:mnist5k`` dealt
to 20 clients by a Dirichlet alpha = 0.05 over classes, 20 rounds of 10 clients with the trainer's default
options. The measure is the mean accuracy of the last 3 evaluations (``--last-k`` 3), which one bad round
cannot decide; it must reach 3x chance (30% for 10 classes).

Measured (mean of the last 3 evaluations, CPU): central 95, fedvc 73, fedavg/fedir/heteroswitch 68-69,
fedprox/qfedavg 66-67, scaffold 57 (its default --lr 0.02, Scaffold.default_lr; at 0.05 its final accuracy
is 20% and other seeds give NaN), dapperfl 56, fedavgm 58 (Hsu et al.'s convention: server step 1, client
rate 0.005; it was 34 with the former default server step 1 - beta and client rate 0.05); fedyogi 82,
fedadagrad 82, fedadam 81 (Reddi et al.'s adaptive servers, 1-3 minutes each on two busy cores). FedBN
needs a model with normalisation layers: resnet10 with GroupNorm (``--norm group``, its affine part kept
per client) at 16 px (``--image-size 16``) reaches 84 in 2 minutes; at the split's 28 px it reached 48 in
5-7 minutes, with BatchNorm 33, and mobilenetv3-small does not learn in 20 rounds (10). About 20 minutes
of worker time on two busy cores (``pytest -s`` prints each run's figures).
"""

from __future__ import annotations

import numpy as np
import pytest

from hetbench.train.algorithms import ALGORITHMS, TrainConfig, make_algorithm
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.slow

CLIENTS, ALPHA, ROUNDS, LAST_K, FACTOR = 20, 0.05, 20, 3, 3.0

#: options an algorithm's defaults need on this split: FedBN keeps normalisation layers, which lenet (the
#: default model at 28 px) has none of; resnet10 with GroupNorm at 16 px learns best and fastest of those tried
OPTIONS = {"fedbn": {"model": "resnet10", "norm": "group", "image_size": 16}}
CASES = [pytest.param(name, OPTIONS.get(name, {})) for name in ALGORITHMS.names()]


@pytest.fixture(scope="module")
def skewed_mnist(tmp_path_factory):
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split
    from hetbench.train.data import load_federated

    out = tmp_path_factory.mktemp("splits") / "mnist5k-dirichlet-a0.05-n20"
    make_split("builtin:mnist5k", DirichletPartitioner(CLIENTS, ALPHA, "client", None, 0), out, seed=0,
               test_fraction=0.2, quiet=True)
    return load_federated(str(out))


def test_the_split_is_strongly_label_skewed(skewed_mnist):
    data = skewed_mnist
    y = data.y_train.numpy()
    top_share = [np.bincount(y[rows], minlength=data.num_classes).max() / rows.size for rows in data.client_rows]
    assert data.num_clients == CLIENTS and data.num_classes == 10
    assert np.median(top_share) >= 0.7  # the median client has most of its rows in one class (0.78 here)


@pytest.mark.parametrize("name, options", CASES)
def test_every_default_beats_chance_by_a_wide_margin(skewed_mnist, name, options):
    from hetbench.train.data import load_federated

    data = load_federated(skewed_mnist.path, options["image_size"]) if "image_size" in options else skewed_mnist
    # only the last LAST_K rounds are evaluated: the statistic reads nothing else (--eval-from; the training,
    # and so every evaluated number, is the same as with every round evaluated)
    config = TrainConfig(rounds=ROUNDS, eval_from=ROUNDS - LAST_K + 1, **options)
    doc = run_training(data, make_algorithm(name), config)
    accuracy, stable = doc["curves"]["accuracy"], doc["final"]["last_k"]
    assert stable["k"] == LAST_K and stable["rounds"] == list(range(ROUNDS - LAST_K + 1, ROUNDS + 1))
    assert doc["curves"]["round"] == stable["rounds"]
    assert stable["accuracy"] == pytest.approx(np.mean(accuracy[-LAST_K:]), abs=1e-3)
    chance = 100.0 / data.num_classes
    print(f"{name} {options}: mean of the last {LAST_K} {stable['accuracy']}%, final {accuracy[-1]}%")
    assert stable["accuracy"] >= FACTOR * chance, f"{name}: mean of the last {LAST_K} {stable['accuracy']}% {accuracy}"
