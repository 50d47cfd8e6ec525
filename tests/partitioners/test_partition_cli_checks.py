"""``hetbench partition``: empty clients refused unless ``--allow-empty``, the summary line says
which rows were dropped and why, and bad or unsamplable alphas (issue 11, item 2)."""

from __future__ import annotations

import re

import pytest

from cli.partition import partition
from cli.partition_options import dropped_summary


def one_line_error(code, err):
    lines = [ln for ln in err.splitlines() if ln.startswith("hetbench: error") or "Traceback" in ln or "Error:" in ln]
    return code == 2 and len(lines) == 1 and "Traceback" not in err


def test_every_partition_command_has_allow_empty():
    for name, cmd in partition.commands.items():
        assert "allow_empty" in {p.name for p in cmd.params}, name


def test_empty_clients_refused_with_one_line_then_allowed(run_cli, tmp_path):
    out = tmp_path / "split"
    args = ["partition", "dirichlet", "--scheme", "class", "--alpha", "0.01", "--clients", "100", "--out", out]
    code, _, err = run_cli(*args)
    assert one_line_error(code, err), err
    assert "49 of 100 clients have no training rows" in err and "--allow-empty" in err
    assert not out.exists()
    code, stdout, err = run_cli(*args, "--allow-empty")
    assert code == 0, err
    assert "100 clients" in stdout and (out / "hetbench.json").exists()


@pytest.mark.parametrize("args, dropped", [
    (["partition", "shards", "--clients", "7", "--dataset", "builtin:mnist5k"], "2 rows dropped (remainder 2)"),
    (["partition", "dirichlet", "--alpha", "0", "--clients", "5"], "907 rows dropped (class-unassigned 907)"),
    (["partition", "iid", "--clients", "4"], "no rows dropped"),
])
def test_summary_says_how_many_rows_were_dropped_and_why(run_cli, tmp_path, args, dropped):
    code, stdout, err = run_cli(*args, "--out", tmp_path / "split")
    assert code == 0, err
    assert stdout.strip().startswith("wrote ") and stdout.strip().endswith("; " + dropped), stdout


def test_dropped_summary_sums_reasons_over_splits():
    text = dropped_summary({"train": {"remainder": 300, "class-unassigned": 12, "held-out": 50}, "test": {"filtered": 1}})
    assert text == "313 rows dropped (remainder 300, class-unassigned 12, filtered 1)"
    assert dropped_summary({"train": {"filtered": 1}}) == "1 row dropped (filtered 1)"
    assert dropped_summary({}) == "no rows dropped"


@pytest.mark.parametrize("scheme", ["class", "client"])
def test_huge_finite_alpha_is_iid(run_cli, tmp_path, scheme):
    """--alpha 1.7e308 used to put every row on one client (class scheme)."""
    code, stdout, err = run_cli("partition", "dirichlet", "--scheme", scheme, "--alpha", "1.7e308", "--out", tmp_path / "s")
    assert code == 0, err
    sizes = re.search(r"sizes (\d+)/(\d+)/(\d+)", stdout).groups()
    assert int(sizes[0]) >= 0.9 * int(sizes[2])  # near-equal clients
    assert float(re.search(r"EMD ([\d.]+)", stdout).group(1)) < 0.2


@pytest.mark.parametrize("command", ["dirichlet", "embedding"])
@pytest.mark.parametrize("alpha", ["nan", "-1", "-inf"])
def test_bad_alpha_one_line_exit_2(run_cli, tmp_path, command, alpha):
    extra = ["--embedder", "hog"] if command == "embedding" else []
    code, _, err = run_cli("partition", command, "--alpha", alpha, *extra, "--out", tmp_path / "s")
    assert one_line_error(code, err), err
    assert "--alpha" in err and not (tmp_path / "s").exists()


def test_partition_by_skews_another_column_than_the_label(run_cli, tmp_path):
    """--label-col domain --partition-by label: the clients are skewed over the digits, the task stays the domain."""
    import json

    import pyarrow.parquet as pq

    out = tmp_path / "split"
    code, _, err = run_cli("partition", "dirichlet", "--dataset", "builtin:digits-domains", "--label-col", "domain",
                           "--partition-by", "label", "--alpha", "0.05", "--clients", "8", "--out", out)
    assert code == 0, err
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["recipe"]["partition"]["params"]["partition_by"] == "label"
    assert manifest["source"]["label_col"] == "domain" and manifest["class_names"] == ["mnist", "mnistm", "syn", "usps"]
    rows = pq.read_table([out / f for f in manifest["splits"]["train"]["files"]][0]).to_pydict()
    digits_per_client = {}
    for client, digit in zip(rows["client_id"], rows["source_label"]):  # the source's own 'label' column
        digits_per_client.setdefault(client, set()).add(digit)
    assert sum(map(len, digits_per_client.values())) / len(digits_per_client) < 5  # skewed over the digits
    code, _, err = run_cli("partition", "dirichlet", "--partition-by", "writer", "--out", tmp_path / "bad")
    assert one_line_error(code, err), err
    assert "no column 'writer'" in err and not (tmp_path / "bad").exists()
