"""Lockstep clients (``--client-exec lockstep``) against the sequential path, algorithm by algorithm.

What a user relies on: switching a run to lockstep changes its speed, not its science. For every
algorithm whose client update is gradient steps, each client's model after a round equals the sequential
one to 1e-5 relative (the two differ only in the order of float sums inside the batched kernels), its
steps, samples, loss and algorithm-specific reports (SCAFFOLD's control-variate update, DapperFL's mask,
HeteroSwitch's switches, q-FedAvg's initial loss) agree; state carried between rounds (SCAFFOLD's c_i,
FedBN's per-client BatchNorm statistics, HeteroSwitch's L_EMA) is used the same way; a short run ends
within one test image of the sequential one; lockstep results are the same bits run to run and for any
number of workers; and what cannot run in lockstep is refused in one line with exit code 2.
"""

from __future__ import annotations

import copy
import os
import threading

import pytest
import torch

from hetbench.sweep import default_split
from hetbench.train.algorithms import ALGORITHMS, TrainConfig, make_algorithm
from hetbench.train.data import load_federated
from hetbench.train.local import TrainingDiverged
from hetbench.train.client_exec import ClientExecRefused, choose_client_exec, lockstep_refusal
from hetbench.train.session import TrainingSession
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: where the rounds train: the CPU, or ``HETBENCH_TEST_DEVICE=cuda`` on a GPU machine (gpu_trainer_probe.py)
DEVICE = os.environ.get("HETBENCH_TEST_DEVICE", "cpu")
REL = 1e-5  # the tolerance: parameters after one round within 1e-5 relative
GRADIENT_ALGORITHMS = [name for name in ALGORITHMS if name != "central"]


@pytest.fixture(scope="module")
def data():
    return load_federated(default_split(quiet=True), quiet=True)


def config_for(name: str, mode: str, **extra) -> TrainConfig:
    """Ten clients of 143-144 rows; batches of 48 make three steps per client and round. FedBN runs on a
    BatchNorm ResNet-10 with one full-batch step per client: its training is ill-conditioned on these 8 px
    digits (a relative perturbation of 1e-7 grows to 1e-3 within five sequential steps of batch 32), so only
    one step per round keeps float rounding below the tolerance; its round 2 then checks the carried
    statistics."""
    base = dict(workers=1, client_exec=mode, clients_per_round=6, batch_size=48, seed=3, device=DEVICE)
    if name == "fedbn":
        base.update(model="resnet10", norm="batch", batch_size=144)
    base.update(extra)
    return TrainConfig(**base)


def one_round(session: TrainingSession, r: int) -> list:
    """Round ``r``'s client updates (copies of their tensors), with the server's aggregation applied."""
    alg, run = session.algorithm, session.run
    clients = alg.select(run, r)
    alg.begin_round(run, r)
    updates = []
    for u in session.pool.updates(r, clients):
        updates.append(copy.deepcopy(u))
        alg.accumulate(run, r, u)
    alg.end_round(run, r)
    return updates


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    scale = float(a.abs().max()) if a.numel() else 0.0
    return float((a - b).abs().max()) / scale if scale else float((a - b).abs().max()) if a.numel() else 0.0


def assert_same_updates(seq: list, lock: list, tol: float = REL) -> None:
    assert [u.client for u in seq] == [u.client for u in lock]
    for a, b in zip(seq, lock):
        assert (a.steps, a.num_samples, a.weight) == (b.steps, b.num_samples, b.weight), a.client
        assert rel(a.params, b.params) <= tol, (a.client, rel(a.params, b.params))
        assert rel(a.buffers, b.buffers) <= tol, (a.client, rel(a.buffers, b.buffers))
        assert abs(a.loss - b.loss) <= REL * max(1.0, abs(a.loss)), a.client
        assert sorted(a.extra) == sorted(b.extra)
        for key, va in a.extra.items():
            vb = b.extra[key]
            if isinstance(va, torch.Tensor):
                assert rel(va, vb) <= REL, (a.client, key)
            elif isinstance(va, float):
                assert abs(va - vb) <= REL * max(1.0, abs(va)), (a.client, key)
            else:
                assert va == vb, (a.client, key)


def rounding_sensitivity(data, name: str, start: tuple, r: int = 2, **extra) -> float:
    """How far round 2's sequential client models move when the global model is changed by float rounding
    (each entry times 1 +- 2^-23, one unit in the last place): the largest relative difference over the
    round's clients. A training step whose result moves more than 1e-5 under such a change cannot be
    compared to 1e-5 between two correct executions; the tolerance then follows this sensitivity."""
    params, buffers, state = start
    twin = TrainingSession.start(data, make_algorithm(name), config_for(name, "sequential", **extra))
    try:
        gen = torch.Generator().manual_seed(0)
        sign = torch.randint(0, 2, params.shape, generator=gen).float().mul_(2).sub_(1).to(params.device)
        twin.run.global_params = params * (1 + sign * 2.0**-23)
        twin.run.global_buffers = buffers.clone()
        twin.algorithm.load_state_dict(copy.deepcopy(state))
        nudged = one_round(twin, r)
    finally:
        twin.close()
    probe = TrainingSession.start(data, make_algorithm(name), config_for(name, "sequential", **extra))
    try:
        probe.run.global_params = params.clone()
        probe.run.global_buffers = buffers.clone()
        probe.algorithm.load_state_dict(copy.deepcopy(state))
        exact = one_round(probe, r)
    finally:
        probe.close()
    return max(rel(a.params, b.params) for a, b in zip(exact, nudged))


def tolerance(data, name: str, start: tuple, r: int, seq: list, lock: list, **extra) -> float:
    """The tolerance of round ``r``, from the arithmetic: 1e-5 relative, or ten times the round's own
    rounding sensitivity (:func:`rounding_sensitivity`: how far its client models move when the global
    model moves by one unit in the last place) where that is larger. Lockstep and sequential differ
    only in the order of float sums, a perturbation of that size; an algorithm whose steps amplify it
    (FedVC's resampled batches, FedBN's BatchNorm on 8 px digits: measured 4.5e-5 apart on an AVX2
    CPU) gets the bound its own amplification gives, on every CPU, instead of a constant that holds on
    one CPU's kernels and not on another's. Only measured where 1e-5 does not already hold. ``start``
    is (global params, global buffers, algorithm state) before the round; ``extra``: the run's options beyond
    :func:`config_for`'s."""
    apart = max(max(rel(a.params, b.params), rel(a.buffers, b.buffers)) for a, b in zip(seq, lock))
    if apart <= REL:
        return REL
    return max(REL, 10 * rounding_sensitivity(data, name, start, r, **extra))


@pytest.mark.parametrize("name", GRADIENT_ALGORITHMS)
def test_a_round_in_lockstep_equals_the_sequential_round(data, name):
    sessions = {mode: TrainingSession.start(data, make_algorithm(name), config_for(name, mode))
                for mode in ("sequential", "lockstep")}
    try:
        assert sessions["lockstep"].pool.client_exec == "lockstep"
        assert sessions["sequential"].pool.client_exec == "sequential"
        s0 = sessions["sequential"]
        start = (s0.run.global_params.clone(), s0.run.global_buffers.clone(), copy.deepcopy(s0.algorithm.state_dict()))
        seq, lock = one_round(sessions["sequential"], 1), one_round(sessions["lockstep"], 1)
        assert_same_updates(seq, lock, tolerance(data, name, start, 1, seq, lock))
        # round 2 from the same server state: what the algorithm carries between rounds (SCAFFOLD's c and
        # c_i, FedBN's per-client norm entries, HeteroSwitch's L_EMA, FedOpt's moments) is used alike
        s, k = sessions["sequential"], sessions["lockstep"]
        k.run.global_params = s.run.global_params.clone()
        k.run.global_buffers = s.run.global_buffers.clone()
        state = copy.deepcopy(s.algorithm.state_dict())
        if name == "heteroswitch":  # switch 1 on for every client: random ISP and SWA take part
            state["l_ema"] = 1e9
        for sess in (s, k):
            sess.algorithm.load_state_dict(copy.deepcopy(state))
        start = (s.run.global_params.clone(), s.run.global_buffers.clone(), copy.deepcopy(state))
        seq2, lock2 = one_round(s, 2), one_round(k, 2)
        assert_same_updates(seq2, lock2, tolerance(data, name, start, 2, seq2, lock2))
        if name == "heteroswitch":
            assert all(u.extra["switch1"] for u in lock2)
        if name in ("scaffold", "fedbn"):
            carried = set(getattr(s.algorithm, "c_i" if name == "scaffold" else "norm_i"))
            assert carried & {u.client for u in seq2}, "round 2 should revisit a client of round 1"
    finally:
        for sess in sessions.values():
            sess.close()


@pytest.mark.parametrize("model, norm", [("digits-cnn", "group"), ("resnet10", "batch")])
def test_dapperfl_in_lockstep_carries_momentum_and_statistics_across_its_pruning(data, model, norm):
    """DapperFL's stacked round trains in two calls around its fusion and pruning: with client momentum and
    weight decay, each client's momentum (and on a BatchNorm model its running statistics) goes on from
    epoch 1 into epochs 2..E, as in its sequential client update."""
    extra = dict(momentum=0.9, weight_decay=1e-4, local_epochs=2, model=model, norm=norm)
    if model == "resnet10":
        extra.update(batch_size=144, lr=0.01)  # see config_for: BatchNorm on 8 px digits amplifies rounding
    sessions = {mode: TrainingSession.start(data, make_algorithm("dapperfl"), config_for("dapperfl", mode, **extra))
                for mode in ("sequential", "lockstep")}
    try:
        assert sessions["lockstep"].pool.stacked
        s0 = sessions["sequential"]
        start = (s0.run.global_params.clone(), s0.run.global_buffers.clone(), copy.deepcopy(s0.algorithm.state_dict()))
        seq, lock = one_round(sessions["sequential"], 1), one_round(sessions["lockstep"], 1)
        assert all(u.steps == 2 * -(-u.num_samples // extra.get("batch_size", 48)) for u in seq)  # both stages ran
        assert_same_updates(seq, lock, tolerance(data, "dapperfl", start, 1, seq, lock, **extra))
    finally:
        for sess in sessions.values():
            sess.close()


@pytest.mark.parametrize("name", ["fedavg", "scaffold"])
def test_a_short_run_ends_within_one_test_image(data, name):
    docs = {mode: run_training(data, make_algorithm(name), TrainConfig(rounds=4, clients_per_round=5, batch_size=32,
                                                                       client_exec=mode))
            for mode in ("sequential", "lockstep")}
    one_image = 100.0 / data.num_test
    assert abs(docs["sequential"]["final"]["accuracy"] - docs["lockstep"]["final"]["accuracy"]) <= one_image + 1e-9
    assert docs["lockstep"]["execution"]["clients"] == "lockstep"
    # each round is one stacked computation: FedAvg's folded in by the round loop's accumulate_stacked, SCAFFOLD's
    # with its control variates from the chunk's gradient sums
    assert docs["lockstep"]["execution"]["batched"] == "stacked"
    assert docs["lockstep"]["timing"]["batched_passes"] > 0
    assert docs["lockstep"]["timing"]["client_steps"] >= docs["lockstep"]["timing"]["batched_passes"]
    assert docs["sequential"]["execution"] == {"clients": "sequential", "reason": "requested"}


def test_lockstep_bits_do_not_depend_on_runs_or_workers(data, monkeypatch):
    import hetbench.train.client_exec as client_exec

    monkeypatch.setattr(client_exec, "CPU_CHUNK", 4)  # ten clients in chunks of 4, 4 and 2: two workers busy

    def final(workers: int):
        doc, run = run_training(data, make_algorithm("fedprox"),
                                TrainConfig(rounds=2, clients_per_round=10, batch_size=32, workers=workers,
                                            client_exec="lockstep"), return_state=True)
        return run.global_params.clone(), doc["final"]["accuracy"]

    a, b, c = final(1), final(1), final(2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[0], c[0])
    assert a[1] == b[1] == c[1]


def _tiny_group(capacity: int):
    from hetbench.train.lockstep import LockstepGroup
    from hetbench.train.models import build_model

    class Data:
        in_channels, mean, std = 1, [0.5], [0.5]

    return LockstepGroup(Data(), lambda: build_model("digits-cnn", 1, 10, 8, "none"), capacity, torch.device("cpu"))


def test_a_failing_client_stops_its_group_and_its_error_is_raised():
    """Client 1 raises after two steps: the others, waiting for their third gradient, stop; the group
    raises client 1's error (the first failing client in client order), and the group can run again."""
    from hetbench.train.local import cross_entropy

    group = _tiny_group(3)
    x, y = torch.zeros(4, 1, 8, 8), torch.zeros(4, dtype=torch.long)
    steps: dict[int, int] = {}

    def task(ws, client):
        for step in range(5):
            if client == 1 and step == 2:
                raise ValueError("client 1 failed")
            group.gradient(ws, x, y, cross_entropy, ())
            steps[client] = step + 1
        return client

    try:
        with pytest.raises(ValueError, match="client 1 failed"):
            group.run(task, [0, 1, 2])
        assert steps[1] == 2 and max(steps.values()) <= 3
        steps.clear()
        assert group.run(lambda ws, c: task(ws, 0) + c, [5, 6]) == [5, 6]  # fresh after the failure
    finally:
        group.close()


def test_an_error_in_the_batched_pass_reaches_the_caller():
    from hetbench.train.local import cross_entropy

    group = _tiny_group(2)

    def bad_loss(model, x, y):
        raise RuntimeError("bad loss")

    def task(ws, client):
        group.gradient(ws, torch.zeros(2, 1, 8, 8), torch.zeros(2, dtype=torch.long),
                       bad_loss if client else cross_entropy, ())
        return client

    try:
        with pytest.raises(RuntimeError, match="bad loss"):
            group.run(task, [0, 1])
    finally:
        group.close()


def test_a_diverging_client_stops_the_round_without_hanging(data):
    """lr 1e6: a client's loss becomes NaN mid-round; the other clients of its group are stopped and the
    run ends with TrainingDiverged (exit code 3), not a dead-locked thread."""
    outcome: dict = {}

    def go():
        try:
            run_training(data, make_algorithm("fedavg"),
                         TrainConfig(rounds=2, clients_per_round=10, batch_size=16, lr=1e6, client_exec="lockstep"))
        except BaseException as exc:  # noqa: BLE001 - inspected below
            outcome["error"] = exc

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "lockstep run hung after a client diverged"
    assert isinstance(outcome.get("error"), TrainingDiverged)
    assert outcome["error"].exit_code == 3


def test_auto_follows_the_device():
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert choose_client_exec("auto", None, cpu)[0] == "sequential"
    assert choose_client_exec("lockstep", None, cpu)[0] == "lockstep"
    assert choose_client_exec("auto", None, gpu)[0] == "lockstep"
    mode, reason = choose_client_exec("auto", "the model uses dropout, drawn per client", gpu)
    assert mode == "sequential" and "dropout" in reason
    with pytest.raises(ClientExecRefused, match="not possible here: the model uses dropout"):
        choose_client_exec("lockstep", "the model uses dropout", cpu)
    assert lockstep_refusal(make_algorithm("fedavg"), 1, False) == "one client per round: nothing to train together"


def test_a_dropout_model_falls_back_and_says_why(data):
    session = TrainingSession.start(data, make_algorithm("fedavg"),
                                    TrainConfig(workers=1, model="mobilenetv3-small", clients_per_round=4,
                                                image_size=32))
    try:
        assert session.pool.client_exec == "sequential"
        assert "dropout" in session.pool.execution()["reason"]
    finally:
        session.close()


@pytest.mark.parametrize("args, expected", [
    (["--algo", "central", "--client-exec", "lockstep"], "--client-exec lockstep is not possible here: central"),
    (["--algo", "fedavg", "--client-exec", "lockstep", "--engine", "flower"], "--engine flower trains each client"),
    (["--algo", "fedavg", "--threads", "0"], "--threads must be a positive number"),
    (["--algo", "fedavg", "--threads", "-2"], "--threads must be a positive number"),
    (["--algo", "fedavg", "--client-exec", "vmap"], "'--client-exec'"),
])
def test_bad_client_exec_or_threads_get_one_line_and_exit_2(run_cli, tmp_path, args, expected):
    code, out, err = run_cli("train", "--rounds", "1", "--out", tmp_path / "r", "-q", *args)
    assert code == 2, (out, err)
    assert expected in err
    assert "Traceback" not in err + out
    assert not any((tmp_path / "r").rglob("*.json")) if (tmp_path / "r").exists() else True


def test_help_names_the_modes_and_the_fallback(run_cli):
    code, out, _ = run_cli("train", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "--client-exec" in flat and "lockstep" in flat and "central" in flat and "dropout" in flat


def test_selection_order_is_kept(data):
    session = TrainingSession.start(data, make_algorithm("fedavg"),
                                    TrainConfig(workers=2, client_exec="lockstep", clients_per_round=10, batch_size=64))
    try:
        clients = session.algorithm.select(session.run, 1)
        assert [u.client for u in session.pool.updates(1, clients)] == [int(k) for k in clients]
        # 256 images a stacked step on a CPU: chunks of 4 clients of 64, dealt to both workers, back in order
        assert session.pool.chunk == 4 and len(session.pool.groups) == 2
    finally:
        session.close()


def test_a_resumed_lockstep_run_equals_an_uninterrupted_one(data, tmp_path):
    """SCAFFOLD keeps c and every c_i between rounds: killed after round 2 and resumed (with 2 workers), a
    lockstep run writes the same results as one that never stopped."""
    import json

    class Interrupted(Exception):
        pass

    def config(**extra) -> TrainConfig:
        return TrainConfig(rounds=4, clients_per_round=5, batch_size=32, eval_every=2, client_exec="lockstep", **extra)

    def stop_at_2(r: int, summary: dict) -> None:
        if r == 2:
            raise Interrupted

    def without_timing(doc: dict) -> str:
        return json.dumps({k: v for k, v in doc.items() if k != "timing"}, sort_keys=True)

    import hetbench.train.client_exec as client_exec

    original = client_exec.CPU_CHUNK
    client_exec.CPU_CHUNK = 2  # five clients in chunks of 2, 2 and 1: two workers busy when resumed
    try:
        _resume_check(data, tmp_path, config, stop_at_2, without_timing, Interrupted)
    finally:
        client_exec.CPU_CHUNK = original


def _resume_check(data, tmp_path, config, stop_at_2, without_timing, Interrupted):
    reference = run_training(data, make_algorithm("scaffold"), config())
    ckpt = tmp_path / "run.ckpt"
    with pytest.raises(Interrupted):
        run_training(data, make_algorithm("scaffold"), config(checkpoint_every=1), checkpoint=ckpt, on_round=stop_at_2)
    resumed = run_training(data, make_algorithm("scaffold"), config(checkpoint_every=1, workers=2), checkpoint=ckpt,
                           resume=True)
    assert resumed["execution"]["clients"] == "lockstep"
    assert without_timing(resumed) == without_timing(reference)
