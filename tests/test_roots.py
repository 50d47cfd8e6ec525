"""A build folder's shards linked from outside the folder are never read (issue 25, declared roots): ``hetbench
train`` and ``ClientPartitions.from_folder`` (which read the folder through ``datasets.load_dataset``) refuse it
in one line, as ``verify`` does (tests/publish/test_publish_verify.py); a link that stays inside is fine."""

from __future__ import annotations

import os
import shutil

import pytest

TRAIN = ("--algo", "fedavg", "--rounds", "1", "--clients-per-round", "2", "--seed", "0", "-q")


@pytest.fixture
def split(tmp_path):
    from hetbench.partitioners import IIDPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path / "split"
    make_split("builtin:digits", IIDPartitioner(3), out, seed=0, test_fraction=0.2, quiet=True)
    return out


def _link_out(split, tmp_path):
    shard = sorted((split / "data").glob("train-*.parquet"))[0]
    outside = tmp_path / "elsewhere.parquet"
    shutil.move(shard, outside)
    os.symlink(outside, shard)
    return shard


def test_train_refuses_a_shard_linked_from_outside_the_split(split, tmp_path, run_cli):
    shard = _link_out(split, tmp_path)
    code, _, err = run_cli("train", "--split", split, *TRAIN, "--out", tmp_path / "r")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "link leading outside" in err and f"data/{shard.name}" in err
    assert not list(tmp_path.glob("r/**/*.json"))  # nothing trained on it


def test_client_partitions_refuse_a_shard_linked_from_outside(split, tmp_path):
    from hetbench.clients import ClientPartitions
    from hetbench.errors import HetbenchError

    _link_out(split, tmp_path)
    with pytest.raises(HetbenchError, match="link leading outside"):
        ClientPartitions.from_folder(split)


def test_a_link_that_stays_inside_the_split_is_read(split, tmp_path, run_cli):
    from hetbench.clients import ClientPartitions

    shard = sorted((split / "data").glob("train-*.parquet"))[0]
    kept = split / "kept" / "train.parquet"
    kept.parent.mkdir()
    shutil.move(shard, kept)
    os.symlink(kept, shard)
    assert ClientPartitions.from_folder(split).num_clients == 3
