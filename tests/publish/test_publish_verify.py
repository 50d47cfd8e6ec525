"""`hetbench verify` on tampered folders: one tamper per check, each a one-line verdict and its exit
code (0 OK, 1 FAILED, 2 cannot check) naming what changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from raw_fixtures import TWO_PI_CAPTURES, shared_raw_copies
from tamper import rerecord, rewrite_column

ISO = ("build", "iso-isp", "--stages", "wb", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96", "-q")


@pytest.fixture(scope="module")
def digits_build(tmp_path_factory):
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("verify") / "digits"
    with pytest.raises(SystemExit) as exc:
        main(["partition", "iid", "--clients", "10", "--out", str(out), "-q"])
    assert exc.value.code == 0
    return out


@pytest.fixture
def build(digits_build, tmp_path):
    out = tmp_path / "digits"
    shutil.copytree(digits_build, out)
    return out


def _verify(run_cli, folder, *args):
    code, out, err = run_cli("verify", folder, *args)
    text = (out + err).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return code, text


def _manifest(folder):
    return json.loads((folder / "hetbench.json").read_text())


def _write_manifest(folder, manifest):
    (folder / "hetbench.json").write_text(json.dumps(manifest, sort_keys=True, indent=1))


def _shard(folder, split="train"):
    return folder / _manifest(folder)["splits"][split]["files"][0]


def _rewrite(path, column, change):
    rewrite_column(path, column, change)


def _rerecord(folder):
    rerecord(folder)


def _bump_label(values):
    values[5] = (values[5] + 1) % 10


def test_an_untouched_build_verifies(build, run_cli):
    code, text = _verify(run_cli, build)
    assert code == 0 and text.startswith("OK: 10 clients, 1,797 rows")


def test_a_changed_label_value_fails_naming_file_and_column(build, run_cli):
    _rewrite(_shard(build), "label", _bump_label)
    code, text = _verify(run_cli, build)
    assert code == 1 and text.startswith("FAILED: split 'train'")
    assert _shard(build).name in text and "sha256" in text and "column 'label' changed" in text


def test_altered_image_bytes_fail(build, run_cli):
    def alter(values):
        values[3]["bytes"] = values[3]["bytes"][:-1] + bytes([values[3]["bytes"][-1] ^ 1])

    _rewrite(_shard(build, "test"), "image", alter)
    code, text = _verify(run_cli, build)
    assert code == 1 and "split 'test'" in text and "column 'image' changed" in text


def test_edits_with_rerecorded_digests_are_caught_by_the_recipe_to_the_row(build, run_cli):
    _rewrite(_shard(build), "label", _bump_label)
    _rerecord(build)
    code, text = _verify(run_cli, build)
    assert code == 1 and "split 'train', column 'label', row 5" in text and "rebuilt" in text


def test_edited_column_digest_in_the_manifest_fails(build, run_cli):
    m = _manifest(build)
    m["splits"]["train"]["column_sha256"]["sample_id"] = "0" * 64
    _write_manifest(build, m)
    code, text = _verify(run_cli, build)
    assert code == 1 and "split 'train', column 'sample_id'" in text


@pytest.mark.parametrize("key", ["class_names", "client_names"])
def test_reversed_names_fail(build, run_cli, key):
    m = _manifest(build)
    m[key] = m[key][::-1]
    _write_manifest(build, m)
    code, text = _verify(run_cli, build)
    assert code == 1 and key in text, text


@pytest.mark.parametrize("delta", [1, -1])
def test_a_wrong_num_clients_fails(build, run_cli, delta):
    m = _manifest(build)
    m["num_clients"] += delta
    _write_manifest(build, m)
    code, text = _verify(run_cli, build)
    assert code == 1 and "num_clients" in text


def test_a_stray_shard_fails(build, run_cli):
    shard = _shard(build)
    stray = shard.with_name(shard.name.replace("00000-of-00001", "00001-of-00002"))
    shutil.copy(shard, stray)
    code, text = _verify(run_cli, build)
    assert code == 1 and "stray shard" in text and stray.name in text and "split 'train'" in text


def test_an_unlisted_file_in_data_fails(build, run_cli):
    (build / "data" / "notes.txt").write_text("x")
    code, text = _verify(run_cli, build)
    assert code == 1 and "data/notes.txt" in text


def test_a_missing_shard_fails(build, run_cli):
    _shard(build, "test").unlink()
    code, text = _verify(run_cli, build)
    assert code == 1 and "split 'test'" in text and "missing" in text


def test_a_truncated_shard_fails_without_a_traceback(build, run_cli):
    shard = _shard(build)
    shard.write_bytes(shard.read_bytes()[:1000])
    code, text = _verify(run_cli, build)
    assert code == 1 and "not a readable hetbench shard" in text


def test_a_card_that_loads_other_files_fails(build, run_cli):
    card = build / "README.md"
    fp = _manifest(build)["split_fingerprint"][:12]
    card.write_text(card.read_text().replace(f"data/test-{fp}-*.parquet", f"data/*-{fp}-*.parquet"))
    code, text = _verify(run_cli, build)
    assert code == 1 and "split 'test'" in text and "stray shard" in text


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "data/../../outside.parquet"])
def test_a_manifest_path_outside_the_folder_cannot_be_checked(build, run_cli, path):
    m = _manifest(build)
    m["splits"]["train"]["files"][0] = path
    _write_manifest(build, m)
    code, text = _verify(run_cli, build)
    assert code == 2 and text.startswith("CANNOT CHECK") and "outside the build folder" in text


def test_a_symlinked_shard_escaping_the_folder_cannot_be_checked(build, run_cli, tmp_path):
    shard = _shard(build)
    outside = tmp_path / "elsewhere.parquet"
    shutil.move(shard, outside)
    shard.symlink_to(outside)
    code, text = _verify(run_cli, build)
    assert code == 2 and "outside the build folder" in text


def test_the_other_readers_refuse_paths_outside_the_folder(build):
    from hetbench.errors import HetbenchError
    from hetbench.contract.columns import read_built_columns

    m = _manifest(build)
    m["splits"]["train"]["files"][0] = "../../etc/passwd"
    _write_manifest(build, m)
    with pytest.raises(HetbenchError, match="outside the build folder"):
        read_built_columns(build)


@pytest.mark.parametrize("drop", ["recipe.partition", "num_clients", "content_digest", "splits.train.file_sha256"])
def test_a_malformed_manifest_cannot_be_checked(build, run_cli, drop):
    m = _manifest(build)
    *parents, last = drop.split(".")
    node = m
    for p in parents:
        node = node[p]
    del node[last]
    _write_manifest(build, m)
    code, text = _verify(run_cli, build)
    assert code == 2 and text.startswith("CANNOT CHECK") and drop.split(".")[-1] in text


def test_an_unreadable_manifest_cannot_be_checked(build, run_cli, tmp_path):
    (build / "hetbench.json").write_text("{not json")
    assert _verify(run_cli, build)[0] == 2
    assert _verify(run_cli, tmp_path / "nowhere")[0] == 2


def test_a_missing_source_cannot_be_checked_and_another_source_fails(build, run_cli, tmp_path):
    code, text = _verify(run_cli, build, "--dataset", tmp_path / "gone.parquet")
    assert code == 2 and text.startswith("CANNOT CHECK")
    code, text = _verify(run_cli, build, "--dataset", "builtin:mnist5k")
    assert code == 1 and "input fingerprint" in text


def test_the_library_verdict_carries_the_exit_code(build):
    import hetbench

    verdict = hetbench.verify(build)
    assert verdict.ok and verdict.exit_code == 0
    m = _manifest(build)
    del m["recipe"]["partition"]
    _write_manifest(build, m)
    verdict = hetbench.verify(build)
    assert not verdict.ok and verdict.exit_code == 2


@pytest.fixture(scope="module")
def iso_build(tmp_path_factory):
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("verify-iso") / "iso"
    with pytest.raises(SystemExit) as exc:
        main([*ISO, "--out", str(out)])
    assert exc.value.code == 0
    return out


@pytest.mark.slow
@pytest.mark.parametrize("column", ["image", "device"])
def test_iso_isp_edited_images_and_devices_fail(iso_build, tmp_path, run_cli, column):
    build = tmp_path / "iso"
    shutil.copytree(iso_build, build)

    def alter(values):
        if column == "image":
            values[0]["bytes"] = values[0]["bytes"][:-1] + bytes([values[0]["bytes"][-1] ^ 1])
        else:
            values[0] = "another-device"

    _rewrite(_shard(build), column, alter)
    code, text = _verify(run_cli, build)
    assert code == 1 and f"column '{column}' changed" in text
    _rerecord(build)  # the forger re-records the digests: the re-rendered rows still differ
    code, text = _verify(run_cli, build)
    assert code == 1 and f"split 'train', column '{column}', row 0" in text


@pytest.mark.slow
def test_a_raw_file_replaced_by_other_content_fails(tmp_path, run_cli):
    names = TWO_PI_CAPTURES
    raws = shared_raw_copies(tmp_path, names)
    out = tmp_path / "real"
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb", "--size", "32", "--raw-dir", raws, "--out", out, "-q")
    assert code == 0, err
    assert _verify(run_cli, out)[0] == 0
    a, b = (raws / n for n in names)
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    code, text = _verify(run_cli, out)
    assert code == 1 and "column 'image', row" in text and "rebuilt" in text


def test_a_split_built_with_allow_empty_verifies(tmp_path, run_cli):
    """--allow-empty is in the recipe, so the re-run accepts the same empty clients."""
    out = tmp_path / "empty-clients"
    args = ("partition", "dirichlet", "--scheme", "class", "--alpha", "0.01", "--clients", "100", "--out", out, "-q")
    code, _, err = run_cli(*args)
    assert code == 2 and "--allow-empty" in err and not out.exists()
    assert run_cli(*args, "--allow-empty")[0] == 0
    code, stdout, _ = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), stdout


def test_a_failure_names_the_file_and_the_library_versions_that_differ_here(build, run_cli):
    """The manifest records the libraries that decide bytes; verify never fails on them alone, and a failure
    names the file and every recorded version this machine does not have (issue 43, item 3)."""
    from hetbench.publish.libraries import BYTE_DECIDING, library_versions

    m = _manifest(build)
    assert sorted(m["built_with"]["libraries"]) == sorted(BYTE_DECIDING)  # written with sorted keys
    assert m["built_with"]["libraries"] == library_versions()
    code, text = _verify(run_cli, build)
    assert code == 0 and "version" not in text
    m["built_with"]["libraries"]["opencv-python-headless"] = "5.0.0.93"  # as if built on another machine
    (build / "hetbench.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
    code, text = _verify(run_cli, build)
    assert code == 0, text  # a record of the machine, not of the split
    _rewrite(_shard(build), "label", _bump_label)
    code, text = _verify(run_cli, build)
    here = library_versions()["opencv-python-headless"]
    assert code == 1 and _shard(build).name in text and "column 'label' changed" in text
    assert text.endswith(f"built with other library versions than this machine has (opencv-python-headless "
                         f"5.0.0.93 -> {here})")
