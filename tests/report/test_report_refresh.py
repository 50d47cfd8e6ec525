"""``hetbench report <folder>``: recomputes report.json and report/clients.parquet; bad shards are one
line, exit 2, and the old report stays as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetbench.report import CLIENTS_FILE

REPORT_FILES = ("report.json", CLIENTS_FILE, "plots/label_distribution_heatmap.png", "plots/client_size_rank.png",
                "plots/emd_histogram.png", "README.md")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("refresh") / "split"
    make_split("builtin:digits", DirichletPartitioner(12, alpha=0.3), out, seed=0, quiet=True)
    return out


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {rel: (folder / rel).read_bytes() for rel in REPORT_FILES}


def _shard(folder: Path) -> Path:
    manifest = json.loads((folder / "hetbench.json").read_text())
    return folder / manifest["splits"]["train"]["files"][0]


def test_refresh_reproduces_the_built_report_byte_for_byte(built, tmp_path, run_cli):
    folder = _copy(built, tmp_path / "copy")
    before = _snapshot(folder)
    (folder / CLIENTS_FILE).unlink()
    code, out, err = run_cli("report", folder)
    assert code == 0, err
    assert "12 clients" in out
    assert _snapshot(folder) == before
    assert not list(folder.glob(".report-*"))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "remove"])
def test_unreadable_shard_is_one_line_exit_2_and_keeps_the_old_report(built, tmp_path, run_cli, damage):
    folder = _copy(built, tmp_path / "copy")
    before = _snapshot(folder)
    shard = _shard(folder)
    data = shard.read_bytes()
    if damage == "truncate":
        shard.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        shard.write_bytes(b"PAR1" + bytes(200) + b"PAR1")
    else:
        shard.unlink()
    code, out, err = run_cli("report", folder)
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert shard.name in err or str(folder) in err
    assert _snapshot(folder) == before
    assert not list(folder.glob(".report-*"))


def test_refresh_drops_the_per_client_lists_of_the_old_format_and_keeps_family_entries(built, tmp_path, run_cli):
    folder = _copy(built, tmp_path / "copy")
    old = json.loads((folder / "report.json").read_text())
    old.update({"client_sizes": [1] * 12, "label_distribution": [[1]] * 12, "emd_per_client": [0.5] * 12,
                "client_names": ["x"] * 12, "devices": {"phone": {"clients": 3}}})
    (folder / "report.json").write_text(json.dumps(old))
    assert run_cli("report", folder, "--quiet")[0] == 0
    new = json.loads((folder / "report.json").read_text())
    assert new["devices"] == {"phone": {"clients": 3}}
    assert not {"client_sizes", "label_distribution", "emd_per_client", "client_names"} & set(new)
    assert new["clients_file"] == CLIENTS_FILE and (folder / CLIENTS_FILE).is_file()


def test_a_manifest_without_client_names_is_one_line(built, tmp_path, run_cli):
    folder = _copy(built, tmp_path / "copy")
    manifest = json.loads((folder / "hetbench.json").read_text())
    del manifest["client_names"]
    (folder / "hetbench.json").write_text(json.dumps(manifest))
    code, _, err = run_cli("report", folder)
    assert code == 2 and "client_names" in err and len(err.strip().splitlines()) == 1


def test_report_refreshes_the_cards_statistics_and_keeps_the_rest(tmp_path, run_cli):
    """``hetbench report`` recomputed the report but left the card saying what the old one said (issue 48,
    item 4): a split built without a feature shift gets one on refresh, and its card then shows it, the plot
    included; the front matter, description, use, licence and citation sections stay as written, and the
    folder still verifies."""
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    folder = tmp_path / "split"
    make_split("builtin:digits", DirichletPartitioner(6, alpha=0.3), folder, seed=0, quiet=True, feature_embedder="none")
    before = (folder / "README.md").read_text()
    assert "feature shift per client" not in before and "feature_shift.png" not in before
    code, out, err = run_cli("report", folder)
    assert code == 0, err
    assert "README.md's statistics rewritten" in out
    after = (folder / "README.md").read_text()
    assert "feature shift per client" in after and "![feature shift](plots/feature_shift.png)" in after
    head, tail = "\n## Heterogeneity (training split)\n", "\n## Use\n"
    assert after[:after.index(head)] == before[:before.index(head)]  # front matter, description, recipe
    assert after[after.index(tail):] == before[before.index(tail):]  # use, licence, citation
    assert run_cli("verify", folder)[0] == 0


def test_a_card_not_laid_out_as_hetbench_writes_it_is_left_as_it_is(built, tmp_path, run_cli):
    folder = _copy(built, tmp_path / "copy")
    (folder / "README.md").write_text("# my own card\n\nWritten by hand.\n")
    code, out, err = run_cli("report", folder)
    assert code == 0, err
    assert "README.md left as it was (not laid out as hetbench writes cards)" in out
    assert (folder / "README.md").read_text() == "# my own card\n\nWritten by hand.\n"
