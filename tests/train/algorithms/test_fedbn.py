"""FedBN (Li et al. 2021, Algorithm 1): clients keep their normalisation layers, the server averages
everything, each client's test rows are evaluated with its own normalisation layers, and models without
any are refused."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch
import torch.nn.functional as F
from torch import nn

from hetbench.train.algorithms import TrainConfig, make_algorithm
from hetbench.train.data import FederatedData
from hetbench.train.flat import FlatModel
from hetbench.train.models import MODEL_NAMES, NORMS, build_model, has_norm_layers, models_with_norm
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.usefixtures("one_thread")
CLIENTS, TRAIN, TEST, CLASSES, SIDE = 4, 12, 6, 3, 8
GAIN, OFFSET = (1.0, 0.5, 1.0, 0.4), (0.0, 0.0, 110.0, 60.0)  # client k sees GAIN[k] * image + OFFSET[k]


@pytest.fixture(scope="module")
def shifted(tmp_path_factory) -> FederatedData:
    """Four clients whose images are the same kind of images under another gain and offset (a feature shift,
    FedBN's setting), each with its own test rows, plus shared test rows without a shift."""
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("shifted")

    def images(y, k):
        x = rng.normal(80 + 50 * y[:, None, None, None], 30, size=(y.size, 1, SIDE, SIDE))
        return np.clip(GAIN[k] * x + OFFSET[k], 0, 255) if k >= 0 else np.clip(x, 0, 255)

    def memmap(x, name):
        np.save(folder / name, x.astype(np.uint8))
        return np.load(folder / name, mmap_mode="r")

    y_train = [rng.integers(0, CLASSES, TRAIN) for _ in range(CLIENTS)]
    y_test = [rng.integers(0, CLASSES, TEST) for _ in range(CLIENTS + 1)]  # the last: shared rows
    x_train = np.concatenate([images(y, k) for k, y in enumerate(y_train)])
    x_test = np.concatenate([images(y, k if k < CLIENTS else -1) for k, y in enumerate(y_test)])
    test_client = np.repeat(np.r_[np.arange(CLIENTS), -1], TEST)
    return FederatedData(
        name="shifted", path="shifted", fingerprint="1" * 64,
        x_train=memmap(x_train, "train.npy"), y_train=torch.from_numpy(np.concatenate(y_train)),
        x_test=memmap(x_test, "test.npy"), y_test=torch.from_numpy(np.concatenate(y_test)),
        client_ids=np.arange(CLIENTS), client_rows=[np.arange(k * TRAIN, (k + 1) * TRAIN) for k in range(CLIENTS)],
        label_names=[str(c) for c in range(CLASSES)], group_by="client_id",
        group_names=[*map(str, range(CLIENTS)), "shared"], test_group=np.repeat(np.arange(CLIENTS + 1), TEST),
        test_client=test_client, client_group=np.arange(CLIENTS),
        mean=np.array([x_train.mean() / 255.0]), std=np.array([x_train.std() / 255.0]),
    )


def _config(**options) -> TrainConfig:
    return TrainConfig(**{"rounds": 3, "clients_per_round": 3, "batch_size": 4, "lr": 0.05, "model": "resnet10",
                          "norm": "batch", **options})


def _norm_names(model: nn.Module) -> set[str]:
    """state_dict names of the BatchNorm / GroupNorm layers, found independently of FedBN's code."""
    return {f"{prefix}.{name}" for prefix, m in model.named_modules() if isinstance(m, (nn.BatchNorm2d, nn.GroupNorm))
            for name in m.state_dict()}


def test_has_norm_layers_says_what_building_the_model_shows():
    assert models_with_norm() == ("resnet10", "resnet18", "mobilenetv3-small")
    for name in MODEL_NAMES:
        for norm in NORMS:
            built = build_model(name, 3, 10, 32, norm)
            has = any(isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)) for m in built.modules())
            assert has_norm_layers(name, norm) == has, (name, norm)


def test_group_norm_affine_parameters_are_the_normalisation_entries():
    from hetbench.train.algorithms.fedbn import norm_positions

    flat = FlatModel(build_model("resnet10", 1, 3, SIDE, "group"))
    p, b = norm_positions(flat)
    gn = [m for m in flat.model.modules() if isinstance(m, nn.GroupNorm)]
    assert p.numel() == sum(m.weight.numel() + m.bias.numel() for m in gn) > 0 and b.numel() == 0
    flat.params.zero_()
    for m in gn:
        m.weight.data.fill_(1.0)
        m.bias.data.fill_(1.0)
    assert torch.equal(flat.params[p], torch.ones(p.numel())) and float(flat.params.sum()) == p.numel()


def test_returning_clients_train_from_their_own_normalisation_entries_and_the_server_averages_all(shifted,
                                                                                                monkeypatch):
    from hetbench.train.algorithms.fedbn import norm_positions

    algo = make_algorithm("fedbn")
    starts, trained, updates, globals_ = {}, {}, {}, {}
    keep_train, keep_begin, keep_acc, keep_end = algo.train_locally, algo.begin_round, algo.accumulate, algo.end_round

    def train_locally(run, r, client, batches):
        starts[r, client] = (algo.take_norm(run.ws.flat), run.ws.flat.params.clone())
        return keep_train(run, r, client, batches)

    def begin_round(run, r):
        globals_[r] = (run.global_params.clone(), run.global_buffers.clone())
        keep_begin(run, r)

    def accumulate(run, r, update):
        trained[r, update.client] = update.extra["norm"].clone()
        updates.setdefault(r, []).append((update.params.clone(), update.buffers.clone(), update.weight))
        keep_acc(run, r, update)

    def end_round(run, r):
        keep_end(run, r)
        globals_[r, "after"] = (run.global_params.clone(), run.global_buffers.clone())

    for name, fn in (("train_locally", train_locally), ("begin_round", begin_round), ("accumulate", accumulate),
                     ("end_round", end_round)):
        monkeypatch.setattr(algo, name, fn)
    _, run = run_training(shifted, algo, _config(workers=2), return_state=True)
    pidx, bidx = norm_positions(run.main_ws.flat)
    rest = torch.ones(run.global_params.numel(), dtype=torch.bool)
    rest[pidx] = False

    returning = first = 0
    last: dict[int, torch.Tensor] = {}
    for r in (1, 2, 3):
        g_params, g_buffers = globals_[r]
        g_norm = torch.cat([g_params[pidx], g_buffers[bidx]])
        for (rr, k), (norm, params) in sorted(starts.items()):
            if rr != r:
                continue
            assert torch.equal(params[rest], g_params[rest])  # the federated part is the global model's
            if k in last:  # its own entries of its last round, never the average
                assert torch.equal(norm, last[k]) and not torch.equal(norm, g_norm)
                returning += 1
            else:  # first time: the global model's entries
                assert torch.equal(norm, g_norm)
                first += 1 if r > 1 else 0
        last.update({k: v for (rr, k), v in trained.items() if rr == r})
        # the server averages every entry with weights n_k, normalisation entries included: FedAvg's rule
        fedavg = make_algorithm("fedavg")
        shadow = type("Run", (), {"global_params": g_params.clone(), "global_buffers": g_buffers.clone()})()
        fedavg.begin_round(shadow, r)
        for params, buffers, weight in updates[r]:
            fedavg.accumulate(shadow, r, type("U", (), {"params": params, "buffers": buffers, "weight": weight})())
        fedavg.end_round(shadow, r)
        after_params, after_buffers = globals_[r, "after"]
        assert torch.equal(after_params, shadow.global_params) and torch.equal(after_buffers, shadow.global_buffers)
        w = torch.tensor([u[2] for u in updates[r]])
        by_hand = sum(wk * u[0] for wk, u in zip(w, updates[r])) / w.sum()
        torch.testing.assert_close(after_params, by_hand, rtol=1e-5, atol=1e-6)
    assert returning >= 3 and first >= 1  # both paths ran (3 of 4 clients a round, three rounds)
    assert set(algo.norm_i) == set(algo.eval_norm) == set(range(CLIENTS))


def test_each_clients_test_rows_are_evaluated_with_its_own_normalisation_entries(shifted, monkeypatch):
    from hetbench.train.client_pool import ClientPool

    algo = make_algorithm("fedbn")
    last: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    keep = algo.accumulate

    def accumulate(run, r, update):
        last[update.client] = (update.params.clone(), update.buffers.clone())
        keep(run, r, update)

    monkeypatch.setattr(algo, "accumulate", accumulate)
    config = _config(clients_per_round=CLIENTS, device="cpu").for_algorithm(algo)  # compared with CPU by hand
    doc, run = run_training(shifted, algo, config, return_state=True)

    # by hand: the global model's state_dict with client k's BatchNorm entries from its last update
    def state(params, buffers) -> dict:
        flat = FlatModel(build_model("resnet10", 1, CLASSES, SIDE, "batch"))
        flat.load(params, buffers)
        return {k: v.clone() for k, v in flat.model.state_dict().items()}

    glob = state(run.global_params, run.global_buffers)
    names = _norm_names(build_model("resnet10", 1, CLASSES, SIDE, "batch"))
    mean, std = torch.tensor(shifted.mean).float(), torch.tensor(shifted.std).float()
    correct = np.zeros(shifted.num_test, dtype=bool)
    loss_own = loss_global = 0.0
    shift = 0.0  # the largest change of a logit when a client's own normalisation entries replace the global ones
    model = build_model("resnet10", 1, CLASSES, SIDE, "batch").eval()
    for k in (-1, *range(CLIENTS)):
        rows = np.flatnonzero(shifted.test_client == k)
        x = (torch.from_numpy(np.array(shifted.x_test[rows])).float() / 255.0 - mean) / std
        y = shifted.y_test[rows]
        own = dict(glob) if k < 0 else {**glob, **{n: v for n, v in state(*last[k]).items() if n in names}}
        with torch.no_grad():
            model.load_state_dict(own)
            logits = model(x)
            correct[rows] = (logits.argmax(1) == y).numpy()
            loss_own += float(F.cross_entropy(logits, y, reduction="sum"))
            model.load_state_dict(glob)
            plain_logits = model(x)
            loss_global += float(F.cross_entropy(plain_logits, y, reduction="sum"))
            shift = max(shift, float((logits - plain_logits).abs().max()))
    n = shifted.num_test
    assert shift > 0.1  # the data make the client's own statistics matter
    results = []
    for workers in (1, 2):
        pool = ClientPool(run, "resnet10", algo, dataclasses.replace(config, workers=workers))
        try:
            results.append(algo.evaluate(run, pool))
            if workers == 1:
                _, plain = pool.predict()  # the global model everywhere: another loss
        finally:
            pool.close()
    (got, loss), (got2, loss2) = results
    assert np.array_equal(got, got2) and loss == loss2  # the same whatever the number of workers
    assert np.array_equal(got, correct) and loss == pytest.approx(loss_own / n, rel=1e-4)
    assert plain == pytest.approx(loss_global / n, rel=1e-4) and plain != pytest.approx(loss, rel=1e-6)
    assert doc["final"]["accuracy"] == pytest.approx(100.0 * correct.mean(), abs=1e-3)
    assert doc["final"]["loss"] == pytest.approx(loss_own / n, rel=1e-4)


class Interrupted(Exception):
    pass


def test_a_resumed_run_equals_an_uninterrupted_one(shifted, tmp_path):
    def stop_at_3(r, summary):
        if r == 3:
            raise Interrupted

    config = _config(rounds=4, eval_every=2)
    reference = run_training(shifted, make_algorithm("fedbn"), config)
    ckpt = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):
        run_training(shifted, make_algorithm("fedbn"), _config(rounds=4, eval_every=2, checkpoint_every=2),
                     checkpoint=ckpt, on_round=stop_at_3)
    saved = torch.load(ckpt, weights_only=True)["algorithm"]
    assert set(saved) == {"norm_i", "eval_norm"} and len(saved["norm_i"]) >= 3
    resumed = run_training(shifted, make_algorithm("fedbn"), _config(rounds=4, eval_every=2, checkpoint_every=2,
                                                                     workers=2), checkpoint=ckpt, resume=True)
    strip = lambda doc: json.dumps({k: v for k, v in doc.items() if k != "timing"}, sort_keys=True)  # noqa: E731
    assert strip(resumed) == strip(reference)


@pytest.mark.parametrize("options, model", [((), "digits-cnn"), (("--model", "lenet"), "lenet"),
                                            (("--model", "resnet10", "--norm", "none"), "resnet10 with --norm none")])
def test_a_model_without_normalisation_layers_is_refused_in_one_line(digits_split, tmp_path, run_cli, options,
                                                                     model):
    out = tmp_path / "out"
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedbn", *options, "--rounds", "1", "-q",
                           "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"fedbn keeps each client's normalisation layers, but the model {model} has none" in err
    assert not out.exists() or not any(out.rglob("*"))


def test_the_refusal_comes_before_any_other_algorithm_of_the_sweep_writes(digits_split, tmp_path, run_cli):
    out = tmp_path / "out"
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedavg,fedbn", "--rounds", "1", "-q",
                           "--out", out)
    assert code == 2 and "fedbn keeps each client's normalisation layers" in err
    assert not out.exists() or not any(out.rglob("*"))


def test_shared_test_rows_of_a_domain_are_scored_by_that_domains_clients_with_their_own_normalisation(shifted):
    """Li et al. 2021 sec. 5: each client's model, with its own BatchNorm, is evaluated on its own domain's
    test data. On a domain split every test row is shared (the device and domain builds hold out rows per
    domain, not per client): each domain's rows are dealt to that domain's clients, so no reported accuracy
    rests on the averaged normalisation entries. Zeroing the global model's entries changes nothing;
    before, every shared row was scored with them."""
    from hetbench.train.algorithms.fedbn import norm_owners, norm_positions
    from hetbench.train.session import TrainingSession

    blocks = np.repeat(np.arange(CLIENTS + 1), TEST)  # each client's block of test images, then the unshifted
    domains = dataclasses.replace(
        shifted, group_by="domain", group_names=["d0", "d1"], test_client=np.full(blocks.size, -1),
        test_group=np.where(blocks < CLIENTS, blocks // 2, 0), client_group=np.array([0, 0, 1, 1]))
    algo = make_algorithm("fedbn")
    session = TrainingSession.start(domains, algo, _config(clients_per_round=CLIENTS, workers=1).for_algorithm(algo))
    try:
        run = session.run
        for r in (1, 2):
            run.round = r
            algo.begin_round(run, r)
            for update in session.pool.updates(r, algo.select(run, r)):
                algo.accumulate(run, r, update)
            algo.end_round(run, r)
        owner = norm_owners(domains.test_client, domains.test_group, domains.client_group, "domain", [0, 1, 2, 3])
        assert set(owner[domains.test_group == 0]) == {0, 1} and set(owner[domains.test_group == 1]) == {2, 3}
        correct, loss = algo.evaluate(run, session.pool)
        pidx, bidx = norm_positions(run.main_ws.flat)
        run.global_params[pidx] = 0.0  # the averaged entries: no row may depend on them
        run.global_buffers[bidx] = 1e3
        again, loss_again = algo.evaluate(run, session.pool)
    finally:
        session.close()
    assert np.array_equal(correct, again) and loss == loss_again
    pooled = dataclasses.replace(domains, group_by="all", test_group=np.zeros(blocks.size, dtype=np.int64))
    assert (norm_owners(pooled.test_client, pooled.test_group, pooled.client_group, "all", [0, 1]) == -1).all()


def test_fedbn_trains_batchnorm_models_unless_told_otherwise():
    """The paper's FedBN keeps BatchNorm layers local; the other algorithms default to GroupNorm."""
    from hetbench.train.algorithms import ALGORITHMS

    assert TrainConfig().for_algorithm(ALGORITHMS["fedbn"]).norm == "batch"
    assert TrainConfig(norm="group").for_algorithm(ALGORITHMS["fedbn"]).norm == "group"
    assert TrainConfig().for_algorithm(ALGORITHMS["fedavg"]).norm == "group"


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_norm_owners_deals_each_domains_shared_rows_round_robin_to_its_trained_clients(data):
    """The vectorised rule equals the plain one: a shared row of group g goes, in row order, round robin to
    the trained clients whose rows all lie in g (ascending); other rows keep their client or the global model."""
    from hetbench.train.algorithms.fedbn import norm_owners

    n, c, g = data.draw(st.integers(0, 30)), data.draw(st.integers(1, 6)), data.draw(st.integers(1, 4))
    tc = np.array(data.draw(st.lists(st.integers(-1, c - 1), min_size=n, max_size=n)), dtype=np.int64)
    tg = np.array(data.draw(st.lists(st.integers(0, g - 1), min_size=n, max_size=n)), dtype=np.int64)
    cg = np.array(data.draw(st.lists(st.integers(-1, g - 1), min_size=c, max_size=c)), dtype=np.int64)
    trained = data.draw(st.lists(st.integers(0, c - 1), unique=True))
    want = tc.copy()
    for group in np.unique(tg[tc < 0]):
        owners = [k for k in sorted(trained) if cg[k] == group]
        rows = np.flatnonzero((tc < 0) & (tg == group))
        if owners:
            want[rows] = np.asarray(owners)[np.arange(rows.size) % len(owners)]
    assert norm_owners(tc, tg, cg, "domain", trained).tolist() == want.tolist()
    assert norm_owners(tc, tg, cg, "all", trained).tolist() == tc.tolist()
