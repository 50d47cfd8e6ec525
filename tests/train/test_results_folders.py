"""Results folders are keyed by the split's fingerprint as well as its name (issue 31, item 4b): two splits
that share a name (two iso-isp builds with other ``--clients``) no longer share ``<out>/<name>/``, where the
second sweep was refused; the same split keeps its one folder, where --skip-existing and --resume find it."""

from __future__ import annotations

import json

import pytest

from hetbench.leaderboard.load import load_results
from hetbench.sweep import sweep
from hetbench.train.algorithms import TrainConfig
from hetbench.train.results import results_folder_name

CONFIG = TrainConfig(rounds=1, clients_per_round=2, batch_size=16)


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """Two splits of the digits, both named ``digits-twin``: 3 and 4 clients."""
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    root = tmp_path_factory.mktemp("twins")
    for k in (3, 4):
        make_split("builtin:digits", DirichletPartitioner(k, alpha=0.5), root / f"n{k}", name="digits-twin", quiet=True)
    return root / "n3", root / "n4"


def _fingerprint(split) -> str:
    return json.loads((split / "hetbench.json").read_text())["split_fingerprint"]


def test_splits_of_one_name_get_two_results_folders_and_both_sweeps_run(twins, tmp_path):
    first, second = twins
    assert _fingerprint(first) != _fingerprint(second)
    (a,) = sweep(first, "fedavg", 0, CONFIG, out=tmp_path, quiet=True, threads=1)
    (b,) = sweep(second, "fedavg", 0, CONFIG, out=tmp_path, quiet=True, threads=1)  # refused before: same file
    assert a.path.parent.name == f"digits-twin-{_fingerprint(first)[:12]}"
    assert b.path.parent.name == f"digits-twin-{_fingerprint(second)[:12]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([a.path.parent.name, b.path.parent.name])
    assert (a.doc["split"]["fingerprint"], b.doc["split"]["fingerprint"]) == (_fingerprint(first), _fingerprint(second))
    # the leaderboard reads both
    loaded = load_results(tmp_path)
    assert sorted(r.path for r in loaded.results) == sorted(p.relative_to(tmp_path).as_posix() for p in (a.path, b.path))


def test_the_same_split_keeps_its_folder_for_skip_existing_and_resume(twins, tmp_path, capsys):
    first, _ = twins
    (run,) = sweep(first, "fedavg", 0, CONFIG, out=tmp_path, quiet=True, threads=1)
    for how in ({"skip_existing": True}, {"resume": True}):
        (again,) = sweep(first, "fedavg", 0, CONFIG, out=tmp_path, threads=1, **how)
        assert again.path == run.path and again.skipped, how
        assert "skipped 1 existing result: fedavg-s0.json" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == [run.path.parent.name]


def test_results_folder_name_is_readable_and_bounded():
    assert results_folder_name("iso-isp-wb+tone-s0", "ab" * 32) == "iso-isp-wb+tone-s0-" + "ab" * 6
    long = results_folder_name("x" * 300, "ab" * 32)
    assert len(long) <= 255 and long.endswith("-" + "ab" * 6)
    assert results_folder_name("n", "0" * 64) != results_folder_name("n", "1" * 64)


def test_flower_app_sends_its_results_where_hetbench_train_writes_them(twins, tmp_path, run_cli, monkeypatch):
    pytest.importorskip("flwr")
    import tomllib

    first, _ = twins
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("flower-app", "--split", first, "--rounds", "1", "--out", tmp_path / "app", "-q")
    assert code == 0, err
    config = tomllib.loads((tmp_path / "app" / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    assert config["results"] == str(tmp_path / "hetbench_results" / f"digits-twin-{_fingerprint(first)[:12]}" / "fedavg-s0.json")
