"""HeteroSwitch (Kim et al. 2024, Algorithm 1, Eq. 1-3): the switches, SWA and the random ISP."""

from __future__ import annotations

import pytest
import torch

from hetbench.train.algorithms import TrainConfig, make_algorithm
from hetbench.train.algorithms.heteroswitch import ema_update, random_isp, switch_one, switch_two
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.usefixtures("one_thread")


def test_heteroswitch_switches_follow_algorithm_one():
    # EMA (Eq. 1): first loss seeds it, then alpha * current + (1 - alpha) * previous
    ema = None
    for loss, expected in [(2.0, 2.0), (1.0, 1.1), (0.5, 0.56)]:
        ema = ema_update(ema, loss, 0.9)
        assert ema == pytest.approx(expected)
    assert not switch_one(0.1, None)  # no EMA before the first round
    script = [  # (L_init, L_train, L_EMA) -> (switch 1, switch 2)
        ((0.5, 0.4, 1.0), (True, True)),
        ((0.5, 1.2, 1.0), (True, False)),
        ((1.5, 0.4, 1.0), (False, False)),
        ((1.0, 0.4, 1.0), (False, False)),  # strict inequality
    ]
    for (l_init, l_train, l_ema), (s1, s2) in script:
        got1 = switch_one(l_init, l_ema)
        assert (got1, switch_two(got1, l_train, l_ema)) == (s1, s2)


def test_heteroswitch_client_returns_swa_weights_when_both_switches_are_on(tiny_data):
    data = tiny_data(sizes=(12, 12))
    config = TrainConfig(rounds=1, batch_size=4, lr=0.1)
    algo = make_algorithm("heteroswitch")
    _, run = run_training(data, algo, config, return_state=True)
    # script the EMA: huge -> both switches on; the client returns the mean of its per-step weights
    algo.l_ema = 1e9
    seen = []
    import hetbench.train.algorithms.heteroswitch as hs

    original = hs.local_sgd

    def spy(ws, batches, *a, after_step=None, **kw):
        def record(i):
            seen.append(ws.flat.params.clone())
            after_step(i)

        return original(ws, batches, *a, after_step=record, **kw)

    hs.local_sgd = spy
    try:
        update = algo.client_update(run, 2, 0)
    finally:
        hs.local_sgd = original
    assert update.extra["switch1"] and update.extra["switch2"]
    assert len(seen) == 3
    assert torch.allclose(update.params, torch.stack(seen).mean(0), atol=1e-6)
    algo.l_ema = 1e-9  # tiny -> both off: the last weights come back, no augmentation
    update = algo.client_update(run, 2, 0)
    assert not update.extra["switch1"] and not update.extra["switch2"]


def test_random_isp_transform_eq2_eq3():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(16, 3, 4, 4, generator=gen)
    assert torch.allclose(random_isp(x.clone(), 0.0, 0.0, gen), x)
    y = random_isp(x.clone(), 0.5, 0.9, gen)
    assert float(y.min()) >= 0.0 and float(y.max()) <= 1.0 and not torch.allclose(x, y)
    # gamma only: a per-image exponent, so log(y)/log(x) is constant within an image
    z = random_isp(x.clone(), 0.0, 0.9, gen)
    ratio = torch.log(z) / torch.log(x)
    assert torch.allclose(ratio, ratio[:, :1, :1, :1].expand_as(ratio), atol=1e-3)
    assert float(ratio.std()) > 0.01  # differs between images
