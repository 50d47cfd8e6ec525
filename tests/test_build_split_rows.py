"""``build_split`` in Python counts a partitioner's sizes as training rows under the ``client`` test policy, as
``hetbench partition`` does: the same rows, recipe and fingerprint either way (issue 48, item 6)."""

from __future__ import annotations

import json

import numpy as np


def test_build_split_counts_training_rows_as_the_cli_does(tmp_path, run_cli):
    from hetbench.partitioners import IIDPartitioner
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    mine = IIDPartitioner(3, sizes=[100, 50, 20])
    fs = build_split(load_table("builtin:digits"), mine, seed=0, test_split="client", test_fraction=0.2)
    train = np.bincount(fs.outputs["train"].client_ids, minlength=3)
    test = np.bincount(fs.outputs["test"].client_ids[fs.outputs["test"].client_ids >= 0], minlength=3)
    assert train.tolist() == [100, 50, 20] and test.tolist() == [25, 12, 5]  # the test rows come on top
    assert "holdout_fraction" not in mine.params()  # the caller's partitioner is left as it was
    code, _, err = run_cli("partition", "iid", "--clients", "3", "--sizes", "100,50,20", "--test-split", "client",
                           "--out", tmp_path / "cli", "-q")
    assert code == 0, err
    manifest = json.loads((tmp_path / "cli" / "hetbench.json").read_text())
    assert manifest["recipe"]["partition"]["params"] == fs.recipe["partition"]["params"]
    assert manifest["split_fingerprint"] == fs.fingerprint
