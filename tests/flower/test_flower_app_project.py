"""The pieces of the Flower engine that need no Flower run: the job in Flower config values, records, node
configs, and the app project ``hetbench flower-app`` writes (valid for Flower's own validator)."""

from __future__ import annotations

import tomllib

import pytest

pytest.importorskip("flwr")


@pytest.fixture(scope="module")
def split3(tmp_path_factory):
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("flower-app") / "digits-n3"
    make_split("builtin:digits", DirichletPartitioner(3, 0.5, "client", None, 0), out, seed=0, test_fraction=0.2,
               quiet=True)
    return out


def test_a_job_survives_the_trip_through_flower_config_values():
    from hetbench.flower.job import FlowerJob
    from hetbench.train.algorithms import TrainConfig

    config = TrainConfig(rounds=3, lr=0.01, train_groups=("a", "b"), image_size=16, target_accuracy=50.0)
    job = FlowerJob.make("/s", "dapperfl", config, {"pruning_ratios": (0.0, 0.5), "mu": None, "dar_gamma": 0.1},
                         results="/r.json")
    flat = job.to_config()
    assert all(isinstance(v, (bool, int, float, str)) for v in flat.values())
    back = FlowerJob.from_config(flat)
    assert back == job
    # a ClientApp trains the one client of each message: Flower jobs always run their clients sequentially
    assert back.train_config() == TrainConfig(**{**config.as_dict(), "cache_dir": None, "client_exec": "sequential"})
    assert back.algorithm().params["pruning_ratios"] == (0.0, 0.5)
    with pytest.raises(Exception, match="unknown hetbench option 'roundz'"):
        FlowerJob.from_config({**flat, "roundz": 2})


def test_records_keep_tensors_bit_for_bit():
    import torch

    from hetbench.flower.records import pack, unpack

    x = torch.randn(1000, dtype=torch.float32)
    got = unpack(*pack({"x": x, "mask": torch.ones(3), "n": 7, "flag": False, "none": None}))
    assert torch.equal(got["x"], x) and got["x"].dtype == torch.float32
    assert (got["n"], got["flag"], got["none"]) == (7, False, None)


@pytest.mark.parametrize("node_config, message", [
    ({"partition-id": 3}, "partition-id 3 is out of range: the split has 3 clients (partition ids 0..2)"),
    ({"partition-id": -1}, "partition-id -1 is out of range"),
    ({"partition-id": "x"}, "partition-id must be an integer"),
    ({"partition-ids": "0,5"}, "partition-ids 5 is out of range"),
    ({"partition-id": 0, "num-partitions": 4}, "num-partitions=4 in the node config, but the split has 3 clients"),
    ({}, "has no partition-id"),
])
def test_node_configs_that_name_no_client_of_the_split_are_refused(node_config, message):
    from hetbench.errors import HetbenchError
    from hetbench.flower.client_app import served_clients

    with pytest.raises(HetbenchError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        served_clients(node_config, 3)


def test_flower_app_writes_a_project_flower_accepts(split3, tmp_path, run_cli):
    from flwr.cli.config_utils import load_and_validate

    app = tmp_path / "app"
    code, out, err = run_cli("flower-app", "--split", split3, "--algo", "SCAFFOLD", "--rounds", "3", "--server-lr", "0.5",
                             "--clients-per-round", "2", "--train-groups", "0,1", "--group-by", "client_id",
                             "--out", app, "--results", tmp_path / "r.json")
    assert code == 0, err
    # --train-groups 0,1 keeps two of the three clients: one SuperNode each, partition ids renumbered 0..1
    assert out.count("flower-supernode") == 2 and "partition-id=1 num-partitions=2" in out
    config, _ = load_and_validate(app / "pyproject.toml")  # Flower's own checks, components imported
    run = config["tool"]["flwr"]["app"]["config"]
    assert (run["algo"], run["rounds"], run["clients-per-round"], run["train-groups"]) == ("scaffold", 3, 2, "0,1")
    assert run["split"] == str(split3.resolve()) and run["results"] == str(tmp_path / "r.json")
    assert run["hyper-server-lr"] == 0.5  # given hyper-parameters travel
    assert sorted(p.name for p in app.iterdir()) == ["pyproject.toml"]
    assert tomllib.loads((app / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["components"] == {
        "serverapp": "hetbench.flower.server_app:app", "clientapp": "hetbench.flower.client_app:app"}


@pytest.mark.parametrize("args, message", [
    (("--algo", "central"), "'central' trains one model"),
    (("--algo", "fedmagic"), "unknown algorithm 'fedmagic'"),
    (("--algo", "scaffold", "--mu", "0.5"), "--mu is not an option of scaffold"),
    (("--algo", "fedbn", "--model", "lenet"), "fedbn keeps each client's normalisation layers, but the model lenet"),
    (("--algo", "fedbn"), "fedbn keeps each client's normalisation layers, but the model digits-cnn"),
    (("--rounds", "0"), "--rounds must be a positive number"),
    (("--node-wait", "0"), "--node-wait must be a positive number"),
    (("--train-groups", "nope", "--group-by", "client_id"), "nope"),
])
def test_flower_app_refuses_bad_input_and_writes_nothing(split3, tmp_path, run_cli, args, message):
    code, _, err = run_cli("flower-app", "--split", split3, *args, "-q", "--out", tmp_path / "app")  # -q: no decode bars
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "app").exists()


def test_flower_app_keeps_an_existing_project_unless_told(split3, tmp_path, run_cli):
    app = tmp_path / "app"
    assert run_cli("flower-app", "--split", split3, "--out", app, "-q")[0] == 0
    code, _, err = run_cli("flower-app", "--split", split3, "--out", app, "--rounds", "5", "-q")
    assert code == 2 and "already exists" in err
    assert run_cli("flower-app", "--split", split3, "--out", app, "--rounds", "5", "--overwrite", "-q")[0] == 0
    assert tomllib.loads((app / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]["rounds"] == 5
    assert not list(tmp_path.glob(".app.tmp-*"))
