"""verify sees everything that decides what loads (issue 25, item 2): every config of the card's YAML,
the report users quote, the per-client statistics, the card's licence and every published file; and
``hetbench publish`` uploads exactly what the manifest lists."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("card") / "digits"
    with pytest.raises(SystemExit) as exc:
        main(["partition", "dirichlet", "--alpha", "0.5", "--clients", "6", "--out", str(out), "-q"])
    assert exc.value.code == 0
    return out


@pytest.fixture
def build(built, tmp_path):
    out = tmp_path / "digits"
    shutil.copytree(built, out)
    return out


def _verify(run_cli, folder):
    code, out, err = run_cli("verify", folder)
    text = (out + err).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return code, text


def _rehash(folder, rel):
    manifest = json.loads((folder / "hetbench.json").read_text())
    manifest["files"][rel] = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
    (folder / "hetbench.json").write_text(json.dumps(manifest, sort_keys=True, indent=1))


def test_the_built_folder_verifies_and_lists_every_file_it_publishes(build, run_cli):
    from hetbench.contract import read_manifest
    from hetbench.publish.published_files import published_paths

    assert _verify(run_cli, build)[0] == 0
    present = sorted(p.relative_to(build).as_posix() for p in build.rglob("*") if p.is_file())
    assert published_paths(read_manifest(build)) == present


@pytest.mark.parametrize("edit, field", [
    (("  default: true\n", "  default: true\n  data_dir: extra\n"), "configs[0].data_dir"),
    (("  default: true\n", "  default: true\n  filters:\n  - - label\n    - '!='\n    - 3\n"), "configs[0].filters"),
    (("dataset_info:\n", "- config_name: poisoned\n  default: true\n  data_files: extra/*.parquet\ndataset_info:\n"),
     "configs[1]"),
    (("license: cc-by-4.0\n", "license: mit\n"), "license"),
    (("- federated-learning\n", "- federated-learning\n- iid\n"), "tags[1]"),
])
def test_a_one_line_card_edit_that_changes_what_loads_fails_naming_the_field(build, run_cli, edit, field):
    card = build / "README.md"
    text = card.read_text()
    assert edit[0] in text
    card.write_text(text.replace(edit[0], edit[1], 1))
    code, text = _verify(run_cli, build)
    assert code == 1 and f"README.md's YAML field '{field}'" in text, text


def test_the_cards_prose_is_not_checked(build, run_cli):
    card = build / "README.md"
    card.write_text(card.read_text() + "\nA note the author added.\n")
    assert _verify(run_cli, build)[0] == 0


def test_an_edited_report_fails_even_when_re_hashed(build, run_cli):
    path = build / "report.json"
    report = json.loads(path.read_text())
    report["emd"] = 0.01  # the number users quote
    path.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    code, text = _verify(run_cli, build)
    assert code == 1 and "file report.json: differs from its sha256" in text
    _rehash(build, "report.json")
    code, text = _verify(run_cli, build)
    assert code == 1 and "report.json's 'emd' differs from what the split gives" in text


def test_edited_per_client_statistics_fail_even_when_re_hashed(build, run_cli):
    path = build / "report" / "clients.parquet"
    table = pq.read_table(path)
    col = table.schema.get_field_index("emd")
    sizes = table.column("emd").to_numpy()
    table = table.set_column(col, table.schema.field(col), pa.array(np.roll(sizes, 1), table.schema.field(col).type))
    pq.write_table(table, path, compression="zstd")
    code, text = _verify(run_cli, build)
    assert code == 1 and "report/clients.parquet: differs from its sha256" in text
    _rehash(build, "report/clients.parquet")
    code, text = _verify(run_cli, build)
    assert code == 1 and "report/clients.parquet differs from the per-client statistics" in text


def test_a_stray_file_anywhere_fails_but_dot_files_do_not(build, run_cli):
    (build / ".hetbench-cache").mkdir()
    (build / ".hetbench-cache" / "x.npy").write_bytes(b"cache")
    assert _verify(run_cli, build)[0] == 0
    (build / "extra").mkdir()
    shutil.copy(next((build / "data").glob("train-*.parquet")), build / "extra" / "train.parquet")
    code, text = _verify(run_cli, build)
    assert code == 1 and "file extra/train.parquet: not in hetbench.json" in text


def test_a_replaced_plot_fails(build, run_cli):
    plot = next((build / "plots").glob("*.png"))
    plot.write_bytes(plot.read_bytes()[:-10] + b"0123456789")
    code, text = _verify(run_cli, build)
    assert code == 1 and f"file plots/{plot.name}: differs from its sha256" in text


def test_hetbench_report_keeps_the_folder_verifiable(build, run_cli):
    assert run_cli("report", build, "-q")[0] == 0
    assert _verify(run_cli, build)[0] == 0


def test_publish_uploads_exactly_the_listed_files(build, monkeypatch):
    import fnmatch

    import huggingface_hub

    from hetbench.publish.hub import upload_folder

    (build / "extra").mkdir()
    (build / "extra" / "poison.parquet").write_bytes(b"x")
    (build / ".hetbench-cache").mkdir()
    (build / ".hetbench-cache" / "c").write_bytes(b"x")
    seen = {}
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda self, *a, **k: None)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda self, **k: seen.update(k))
    upload_folder(build, "me/digits")
    files = [p.relative_to(build).as_posix() for p in build.rglob("*") if p.is_file()]
    chosen = sorted(f for f in files if any(fnmatch.fnmatch(f, pat) for pat in seen["allow_patterns"])
                    and not any(fnmatch.fnmatch(f, pat) for pat in seen["ignore_patterns"]))
    assert "extra/poison.parquet" not in chosen and ".hetbench-cache/c" not in chosen
    assert {"README.md", "hetbench.json", "report.json", "sample_ids.parquet"} <= set(chosen)
    assert any(f.startswith("data/train-") for f in chosen) and any(f.startswith("plots/") for f in chosen)


@pytest.mark.parametrize("name", ["two\nlines", "---", " "])
def test_the_python_api_refuses_a_name_the_card_cannot_hold(tmp_path, name):
    from hetbench.errors import HetbenchError
    from hetbench.partitioners import IIDPartitioner
    from hetbench.pipeline import make_split

    with pytest.raises(HetbenchError):
        make_split("builtin:digits", IIDPartitioner(2), tmp_path / "out", name=name, quiet=True)
    assert not (tmp_path / "out").exists()


def test_publish_of_an_embedding_build_uploads_exactly_its_manifest(tmp_path, monkeypatch, run_cli):
    """The embeddings a partition was derived from are published because the manifest lists (and digests)
    them: the upload is the manifest's list plus the card, every file of the folder and nothing else."""
    import fnmatch

    import huggingface_hub

    from hetbench.publish.hub import upload_folder
    from hetbench.contract import read_manifest
    from hetbench.publish.published_files import published_paths

    out = tmp_path / "emb"
    code, _, err = run_cli("partition", "embedding", "--embedder", "pixels", "--clusters", "5", "--clients", "4",
                           "--out", out, "-q")
    assert code == 0, err
    seen = {}
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda self, *a, **k: None)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda self, **k: seen.update(k))
    upload_folder(out, "me/emb")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
    chosen = [f for f in files if any(fnmatch.fnmatch(f, pat) for pat in seen["allow_patterns"])]
    manifest = read_manifest(out)
    assert chosen == files == published_paths(manifest)
    assert "embeddings/train.npy" in chosen and "embeddings/train.npy" in json.dumps(manifest)
