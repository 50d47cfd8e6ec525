"""Re-partitioning a hetbench build keeps the data's licence, credits and papers (issue 31, item 3): they
belong to the data set the first build was made from, through any chain of re-partitions, and the
re-partitioned folder still verifies."""

from __future__ import annotations

import json


def _card(folder) -> str:
    return (folder / "README.md").read_text(encoding="utf-8")


def test_a_chain_of_repartitions_credits_the_original_data(tmp_path, run_cli):
    first, second, third = tmp_path / "first", tmp_path / "second", tmp_path / "third"
    assert run_cli("partition", "dirichlet", "--alpha", "0.5", "--clients", "6", "--out", first, "-q")[0] == 0
    assert run_cli("partition", "shards", "--dataset", first, "--clients", "4", "--out", second, "-q")[0] == 0
    assert run_cli("partition", "iid", "--dataset", second, "--clients", "3", "--out", third, "-q")[0] == 0
    original = _card(first)
    for folder in (second, third):
        card = _card(folder)
        assert "\nlicense: cc-by-4.0\n" in card and "license: unknown" not in card
        assert "**UCI ML hand-written digits**" in card and "@misc{alpaydin1998optical," in card
        assert json.loads((folder / "hetbench.json").read_text())["source"]["origin"] == "builtin:digits"
        code, out, err = run_cli("verify", folder)
        assert code == 0, err
    # the first build's own manifest and card are as before: no origin of its own
    assert "origin" not in json.loads((first / "hetbench.json").read_text())["source"]
    assert original.count("alpaydin1998optical") == _card(third).count("alpaydin1998optical")


def test_a_build_of_unknown_licence_passes_on_unknown(tmp_path, run_cli):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"x": list(range(60)), "label": [i % 3 for i in range(60)]}), table)
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_cli("partition", "iid", "--dataset", table, "--clients", "3", "--out", first, "-q")[0] == 0
    assert run_cli("partition", "iid", "--dataset", first, "--clients", "2", "--out", second, "-q")[0] == 0
    card = _card(second)
    assert "\nlicense: unknown\n" in card and "hetbench does not know the licence of the source `local:rows.parquet`" in card
