"""``hetbench train --engine flower``: hetbench's algorithms through Flower's Simulation Runtime (``flwr run``
on a SuperLink in simulation mode that the run starts and stops itself, Ray backend) give the model
``--engine local`` gives; the leaderboard mixes both; a round whose clients all fail stops with exit 3; no
process a run starts outlives it (``owned_processes`` in tests/flower/conftest.py) and the user's
``~/.flwr`` is not touched."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("flwr")

TRAIN = ("--rounds", "2", "--clients-per-round", "4", "--seed", "0", "-q")


@pytest.fixture(scope="module")
def split4(tmp_path_factory):
    """A four-client Dirichlet split of the built-in digits: 4 clients per round take part in both rounds, so
    SCAFFOLD's second round reads the control variates c_i its clients kept from the first."""
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("flower-sim") / "digits-n4"
    make_split("builtin:digits", DirichletPartitioner(4, 0.5, "client", None, 0), out, seed=0, test_fraction=0.2,
               quiet=True)
    return out


def _results(folder):
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.rglob("*.json"))}


def _strip(doc: dict) -> dict:
    """What two engines must agree on: everything but wall-clock timing, the engine's name and how it ran
    the clients (``execution``: Flower's ClientApps train one client each)."""
    out = {k: v for k, v in doc.items() if k not in ("timing", "engine", "execution")}
    out["config"] = {k: v for k, v in doc["config"].items() if k != "engine"}
    return out


@pytest.mark.slow
def test_flower_simulation_gives_the_local_engine_results(owned_processes, split4, tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # Flower's default FLWR_HOME is ~/.flwr
    monkeypatch.delenv("FLWR_HOME", raising=False)
    flower, local = tmp_path / "flower", tmp_path / "local"
    # two SCAFFOLD runs in one Flower session: the second must not read the control variates c_i the first left
    # in the ClientApps' state (they are keyed by job), so each equals its local run bit for bit
    both = (*TRAIN[:-3], "--seed", "0,1", "-q")
    code, _, err = run_cli("train", "--split", split4, "--algo", "fedavg,scaffold", *both, "--engine", "flower",
                           "--flower-actors", "2", "--out", flower)
    assert code == 0, err
    code, _, err = run_cli("train", "--split", split4, "--algo", "fedavg,scaffold", *both, "--out", local)
    assert code == 0, err
    assert not (tmp_path / "home").exists()  # the SuperLink's FLWR_HOME was a temporary folder
    got, want = _results(flower), _results(local)
    assert sorted(got) == sorted(want) == ["fedavg-s0", "fedavg-s1", "scaffold-s0", "scaffold-s1"]
    for name in got:
        assert got[name]["engine"] == got[name]["config"]["engine"] == "flower"
        assert "engine" not in want[name]  # the local engine's results are unchanged (no key: local)
        assert abs(got[name]["final"]["accuracy"] - want[name]["final"]["accuracy"]) <= 1.0
        assert _strip(got[name]) == _strip(want[name]), name  # the same models, bit for bit

    # the leaderboard reads both: one row per engine, none skipped as a duplicate
    board_dir = tmp_path.with_name(tmp_path.name + "-board")  # outside the results folder it reads
    code, out, err = run_cli("leaderboard", tmp_path, "--out", board_dir)
    assert code == 0, err
    assert "4 configuration(s) from 8 result(s)" in out + err
    board = (board_dir / "leaderboard.md").read_text()
    assert "scaffold (engine=flower)" in board and "fedavg (engine=flower)" in board


@pytest.mark.slow
def test_a_round_whose_clients_all_fail_stops_with_exit_3(owned_processes, split4, tmp_path, run_cli):
    # a learning rate this large makes every client's loss infinite in its first steps: each ClientApp fails
    code, _, err = run_cli("train", "--split", split4, "--algo", "fedavg", *TRAIN, "--lr", "1e30", "--engine", "flower",
                           "--flower-actors", "2", "--out", tmp_path / "out")
    assert code == 3, err
    assert "round 1: all 4 clients failed (first error: training diverged: the loss became nan in round 1" in err
    assert len(err.strip().splitlines()) == 1
    assert not list((tmp_path / "out").rglob("*.json"))


@pytest.mark.parametrize("args, message", [
    (("--algo", "central", "--engine", "flower"), "'central' trains one model"),
    (("--engine", "flower", "--checkpoint-every", "1"), "does not write checkpoints"),
    (("--engine", "flower", "--resume"), "does not write checkpoints"),
    (("--flower-actors", "2"), "--flower-actors needs --engine flower"),
    (("--engine", "flower", "--flower-actors", "0"), "--flower-actors must be a positive number"),
    (("--engine", "spark"), "'spark' is not one of"),
])
def test_bad_flower_options_exit_2_before_anything_runs(split4, tmp_path, run_cli, args, message):
    code, _, err = run_cli("train", "--split", split4, *TRAIN, *args, "--out", tmp_path / "out")
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["train", "flower-app"])
def test_flower_missing_exits_2_with_the_install_command(split4, tmp_path, run_cli, monkeypatch, command):
    import sys

    monkeypatch.setitem(sys.modules, "flwr", None)  # `import flwr` raises ImportError, as without the extra
    monkeypatch.setitem(sys.modules, "flwr.simulation", None)
    extra = ("--engine", "flower") if command == "train" else ()
    code, _, err = run_cli(command, "--split", split4, "--rounds", "1", *extra, "--out", tmp_path / "out")
    assert code == 2
    assert "pip install 'hetbench[flower]'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_every_federated_algorithm_runs_on_flower_as_it_runs_locally(owned_processes, split4, tmp_path, run_cli):
    """Every registered algorithm, from the same code on both engines, gives the same results bit for bit:
    the one round loop, with the client work in this process or sent to Flower ClientApps. Algorithms that
    keep normalisation layers per client (FedBN) run on a model that has them."""
    from hetbench.train.algorithms import ALGORITHMS

    federated = [n for n in ALGORITHMS.names() if n != "central"]
    groups = {(): [n for n in federated if not getattr(ALGORITHMS[n], "requires_norm", False)],
              ("--model", "resnet10", "--norm", "group"): [n for n in federated if getattr(ALGORITHMS[n], "requires_norm", False)]}
    for model, names in groups.items():
        if not names:
            continue
        args = ("--split", split4, "--algo", ",".join(names), "--rounds", "2", "--clients-per-round", "3",
                "--batch-size", "64", *model, "-q")
        code, _, err = run_cli("train", *args, "--engine", "flower", "--flower-actors", "2", "--out", tmp_path / "flower")
        assert code == 0, err
        code, _, err = run_cli("train", *args, "--out", tmp_path / "local")
        assert code == 0, err
    got, want = _results(tmp_path / "flower"), _results(tmp_path / "local")
    assert sorted(got) == sorted(want) and len(got) == len(federated)
    for name in got:
        assert _strip(got[name]) == _strip(want[name]), name
        assert got[name]["curves"].get("algorithm") == want[name]["curves"].get("algorithm")  # diagnostics too


def test_simulation_without_ray_exits_2_with_the_install_command(split4, tmp_path, run_cli, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # flwr without its [simulation] extra
    code, _, err = run_cli("train", "--split", split4, *TRAIN, "--engine", "flower", "--out", tmp_path / "out")
    assert code == 2
    assert "needs Flower and Ray" in err and "pip install 'hetbench[flower]'" in err
    assert not (tmp_path / "out").exists()
