"""Help texts, ``hetbench list`` and ``hetbench export`` (issue 14)."""

from __future__ import annotations

import re

import pytest

ABBREVIATIONS = ("et al.", "sec.", "e.g.", "i.e.", "Eq.", "Fig.", "App.")


def _commands():
    from hetbench.cli.main import _register, cli

    _register()
    out = []

    def walk(cmd, path):
        out.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(cli, [])
    return out


def _summaries(help_text: str) -> dict[str, str]:
    """The command list of a group's --help: name -> its summary (wrapped lines joined)."""
    if "Commands:" not in help_text:
        return {}
    block = help_text.split("Commands:", 1)[1]
    found: dict[str, str] = {}
    last = None
    for line in block.splitlines():
        m = re.match(r"^  (\S+)\s{2,}(.*)$", line)
        if m:
            last = m.group(1)
            found[last] = m.group(2).strip()
        elif last and line.startswith("    ") and line.strip():
            found[last] += " " + line.strip()
        elif not line.strip():
            last = None
    return found


@pytest.mark.parametrize("path", [" ".join(p) for p in _commands()])
def test_every_help_renders_without_escapes_or_cut_summaries(path, run_cli):
    code, out, err = run_cli(*path.split(), "--help")
    assert code == 0, err
    assert "%%" not in out
    for name, text in _summaries(out).items():
        assert text, f"{path} {name}: no summary"
        assert not text.endswith("..."), f"{path} {name}: summary cut: {text!r}"
        assert not text.endswith(ABBREVIATIONS), f"{path} {name}: summary cut at an abbreviation: {text!r}"


def test_groups_list_their_commands(run_cli):
    for group, expected in {"": {"partition", "build", "list", "export", "train"}, "partition": {"iid", "dirichlet"},
                            "build": {"geo", "users", "devices"}}.items():
        code, out, _ = run_cli(*group.split(), "--help")
        assert code == 0 and expected <= set(_summaries(out)), out


def test_target_accuracy_help_shows_one_percent_sign(run_cli):
    code, out, _ = run_cli("train", "--help")
    assert code == 0 and "90% of the centralised run" in " ".join(out.split())


def test_list_every_section(run_cli):
    from hetbench.catalog import SECTIONS
    from hetbench.partitioners import REGISTRY
    from hetbench.sources.builtins import BUILTINS

    code, out, err = run_cli("list")
    assert code == 0, err
    headings = [line[:-1] for line in out.splitlines() if line and not line.startswith(" ")]
    assert headings == list(SECTIONS)
    for name in [*BUILTINS, *REGISTRY, "geo", "iso-isp", "landmarks-user-160k", "heteroswitch9", "fedavg", "resnet10"]:
        assert re.search(rf"^  {re.escape(name)}\s+\S", out, flags=re.M), name
    assert all(len(line.split(None, 1)) == 2 for line in out.splitlines() if line.startswith("  ")), "an entry without a description"


def test_list_one_section_and_bad_section(run_cli):
    code, out, _ = run_cli("list", "recipes")
    assert code == 0 and out.splitlines()[0] == "recipes:" and "partitioners:" not in out
    assert "inaturalist-geo-3k" in out and "[build geo]" in out
    code, _, err = run_cli("list", "nope")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_catalog_rejects_unknown_and_unprovided_sections():
    from hetbench.catalog import catalog
    from hetbench.errors import HetbenchError

    assert "algorithms" not in catalog()  # the core alone lists only its own sections
    with pytest.raises(HetbenchError, match="unknown section"):
        catalog(["nope"])
    with pytest.raises(HetbenchError, match="provider"):
        catalog(["models"])


def test_export_csv_and_parquet_read_back(tmp_path, run_cli):
    from hetbench.sources import load_table

    csv, pq = tmp_path / "obs.csv", tmp_path / "d.parquet"
    code, out, err = run_cli("export", "builtin:observations", "--out", csv)
    assert code == 0 and "20,000 rows" in out, err
    back = load_table(str(csv), "species")
    orig = load_table("builtin:observations")
    assert back.num_rows("train") == orig.num_rows("train") and back.class_names == orig.class_names
    code, out, err = run_cli("export", "builtin:digits", "--out", pq, "-q")
    assert code == 0 and out == "", err
    assert load_table(str(pq)).num_rows("train") == 1797
    code, _, err = run_cli("export", "builtin:digits", "--out", pq)
    assert code == 2 and "already exists" in err
    code, _, err = run_cli("export", "builtin:digits", "--out", tmp_path / "x.txt")
    assert code == 2 and ".csv or .parquet" in err
    code, _, err = run_cli("export", "builtin:digits", "--split", "test", "--out", tmp_path / "t.csv")
    assert code == 2 and "no split 'test'" in err and not (tmp_path / "t.csv").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and not p.name.endswith(".hetbench-export.json")]
