"""``partition natural-id --min-samples`` and ``partition dirichlet --min-size`` count training rows, as
their help, the summary and ``size_stats`` do (issue 31, item 4a): ``--min-samples 5`` kept clients with
4 training rows when each client's test hold-out came out of the 5."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pyarrow.parquet as pq

from hetbench.partitioners.base import rows_for_training


def _train_client_ids(out) -> np.ndarray:
    (shard,) = sorted((out / "data").glob("train-*.parquet"))
    return pq.read_table(shard, columns=["client_id"]).column("client_id").to_numpy()


def test_natural_id_min_samples_5_keeps_no_client_with_4_training_rows(tmp_path, run_cli):
    obs = tmp_path / "obs.csv"
    assert run_cli("export", "builtin:observations", "--out", obs, "-q")[0] == 0
    out = tmp_path / "split"
    code, stdout, err = run_cli("partition", "natural-id", "--dataset", obs, "--label-col", "species", "--column",
                                "observer", "--min-samples", "5", "--feature-embedder", "none", "--out", out)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["size_stats"]["min"] >= 5 and "sizes 5/" in stdout  # the summary's smallest client: 5 training rows
    train = _train_client_ids(out)
    assert np.bincount(train).min() >= 5  # the train split as published
    # the clients are exactly the observers whose rows leave 5 training rows once 0.2 of them is held out (6 rows)
    with obs.open() as f:
        rows = Counter(r["observer"] for r in csv.DictReader(f) if r["observer"])
    manifest = json.loads((out / "hetbench.json").read_text())
    need = rows_for_training(5, 0.2)
    assert need == 6 and any(c == 5 for c in rows.values())  # observers of 5 rows exist, and are dropped now
    assert sorted(manifest["client_names"]) == sorted(o for o, c in rows.items() if c >= need)
    assert manifest["recipe"]["partition"]["params"]["holdout_fraction"] == 0.2
    assert run_cli("verify", out)[0] == 0  # the recipe rebuilds the same split


def test_dirichlet_min_size_is_met_in_training_rows(tmp_path, run_cli):
    out = tmp_path / "split"
    code, stdout, err = run_cli("partition", "dirichlet", "--scheme", "class", "--alpha", "0.1", "--clients", "30",
                                "--min-size", "40", "--feature-embedder", "none", "--out", out)
    assert code == 0, err
    assert np.bincount(_train_client_ids(out)).min() >= 40
    assert json.loads((out / "report.json").read_text())["size_stats"]["min"] >= 40


def test_min_counts_the_hold_out_only_under_the_client_policy(tmp_path, run_cli):
    """Under --test-split natural (the default for a source with a test split) the partitioned rows are all
    training rows: nothing is added, and the recipe stays as it was."""
    code, _, err = run_cli("partition", "natural-id", "--dataset", "builtin:digits-domains", "--column", "domain",
                           "--min-samples", "2", "--feature-embedder", "none", "--out", tmp_path / "s", "-q")
    assert code == 0, err
    recipe = json.loads((tmp_path / "s" / "hetbench.json").read_text())["recipe"]
    assert recipe["test_split"] == "natural"
    assert recipe["partition"]["params"] == {"column": "domain", "min_samples": 2}


def _one_error_line(code, err):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_impossible_minimums_fail_at_once_with_one_line(tmp_path, run_cli):
    # 50 clients x 30 rows fit the 1,797 digits, but 30 training rows each need 37 rows: 1,850
    code, _, err = run_cli("partition", "dirichlet", "--scheme", "class", "--clients", "50", "--min-size", "30",
                           "--out", tmp_path / "d")
    line = _one_error_line(code, err)
    assert "--min-size 30 is impossible: 50 clients x 30 training rows (37 rows before each client holds out" in line
    code, _, err = run_cli("partition", "natural-id", "--min-samples", "100000", "--out", tmp_path / "n")
    assert "at least 100000 training rows" in _one_error_line(code, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_build_users_min_samples_counts_training_rows_under_the_client_policy(tmp_path, run_cli):
    """``build users --test-split client --min-samples 40``: every user keeps at least 40 training rows after its
    own hold-out (users of 40-44 rows, who would keep 36-39, are dropped), and the build verifies."""
    out = tmp_path / "users"
    code, _, err = run_cli("build", "users", "--test-split", "client", "--min-samples", "40", "--out", out, "-q")
    assert code == 0, err
    rows = pq.read_table(out / "report" / "clients.parquet").to_pydict()
    assert min(rows["rows_train"]) >= 40
    assert Counter(_train_client_ids(out).tolist()).most_common()[-1][1] >= 40
    assert run_cli("verify", out)[0] == 0


def test_build_split_counts_the_rows_the_cli_counts_and_warns_where_its_old_count_differs(tmp_path, run_cli):
    """``build_split(test_split="client")`` counted ``--sizes`` before each client's hold-out while the CLI
    counts training rows (issue 48, item 6): ``count_training_rows=True`` gives the CLI's split row for row;
    left unset, the old count stays for this release with a FutureWarning saying how to choose; False keeps
    it silently (what ``verify`` re-runs, the recipe recording the hold-out)."""
    import warnings

    import pytest

    from hetbench.partitioners import IIDPartitioner, NaturalIdPartitioner
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    out = tmp_path / "cli"
    code, _, err = run_cli("partition", "iid", "--clients", "3", "--sizes", "100,50,30", "--test-split", "client",
                           "--feature-embedder", "none", "--out", out, "-q")
    assert code == 0, err
    cli_train = _train_client_ids(out)
    table = load_table("builtin:digits")
    given = IIDPartitioner(3, sizes=[100, 50, 30])
    new = build_split(table, given, seed=0, test_split="client", test_fraction=0.2, count_training_rows=True)
    assert np.bincount(new.outputs["train"].client_ids).tolist() == [100, 50, 30] == np.bincount(cli_train).tolist()
    assert new.recipe["partition"] == json.loads((out / "hetbench.json").read_text())["recipe"]["partition"]
    assert given.params() == {"num_clients": 3, "sizes": [100, 50, 30]}  # the caller's partitioner is left as it was
    whole = IIDPartitioner(3, sizes=[1000, 500, 297])  # the old count: sizes of all 1,797 rows, hold-outs included
    with pytest.warns(FutureWarning, match="pass count_training_rows=True to count training rows as the CLI does"):
        old = build_split(table, whole, seed=0, test_split="client", test_fraction=0.2)
    assert np.bincount(old.outputs["train"].client_ids).tolist() == [800, 400, 238]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = build_split(table, whole, seed=0, test_split="client", test_fraction=0.2, count_training_rows=False)
        assert np.bincount(kept.outputs["train"].client_ids).tolist() == [800, 400, 238]
        # nothing to count differently: no sizes, or the global policy
        build_split(table, IIDPartitioner(3), seed=0, test_split="client", test_fraction=0.2)
        build_split(load_table("builtin:digits-domains"), IIDPartitioner(2, sizes=[1000, 600]), seed=0, test_split="global")
        observers = load_table("builtin:observations")
        a = build_split(observers, NaturalIdPartitioner("observer", 5, 0.2), seed=0, test_split="client")
        b = build_split(observers, NaturalIdPartitioner("observer", 5), seed=0, test_split="client",
                        count_training_rows=True)
        assert a.partition.client_names == b.partition.client_names and a.recipe == b.recipe
