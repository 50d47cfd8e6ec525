"""Derived columns come from the pipeline (issue 25, item 3): the partitioner derives ``cluster``,
``s2_cell``, ``lat``/``lon`` and ``user_id`` inside ``build_split``, so the Python API and the CLI
publish the same columns and verify re-derives them; a builder is recorded beside its partitioner
(manifest format 4) and folders of formats 2 and 3 still verify."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from tamper import rerecord, rewrite_column


def _columns(folder, split="train"):
    manifest = json.loads((folder / "hetbench.json").read_text())
    return pq.ParquetFile(folder / manifest["splits"][split]["files"][0]).schema_arrow.names


def test_the_python_api_publishes_the_derived_columns_without_any_extras(tmp_path):
    from hetbench import verify
    from hetbench.partitioners import EmbeddingPartitioner, GeoS2Partitioner
    from hetbench.pipeline import make_split

    make_split("builtin:observations", GeoS2Partitioner(nmax=1000), tmp_path / "geo", quiet=True)
    assert {"s2_cell", "lat", "lon"} <= set(_columns(tmp_path / "geo"))
    make_split("builtin:digits", EmbeddingPartitioner(4, 0.5, 3, embedder="pixels:4"), tmp_path / "emb", quiet=True)
    assert "cluster" in _columns(tmp_path / "emb")
    for name in ("geo", "emb"):
        verdict = verify(tmp_path / name)
        assert verdict.ok and "checked against the manifest only" not in verdict.message, verdict.message


@pytest.mark.parametrize("build, column", [
    (("build", "geo", "--nmax", "1000"), "s2_cell"),
    (("partition", "embedding", "--clusters", "4", "--embedder", "pixels:4"), "cluster"),
])
def test_a_re_hashed_edit_of_a_derived_column_fails(tmp_path, run_cli, build, column):
    out = tmp_path / "b"
    assert run_cli(*build, "--out", out, "-q")[0] == 0
    manifest = json.loads((out / "hetbench.json").read_text())
    shard = out / manifest["splits"]["train"]["files"][0]

    def swap(values):
        other = next(v for v in values if v != values[0])
        values[0] = other

    rewrite_column(shard, column, swap)
    rerecord(out)
    code, text, err = run_cli("verify", out)
    assert code == 1 and f"column '{column}'" in text, text + err


def test_a_builder_is_recorded_beside_its_partitioner(tmp_path, run_cli):
    out = tmp_path / "sc"
    assert run_cli("build", "devices", "--synthetic-color", "3", "--clients", "6", "--out", out, "-q")[0] == 0
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["format"] == 4
    assert manifest["recipe"]["build"]["method"] == "synthetic-color"
    assert manifest["recipe"]["partition"]["method"] == "device"
    assert run_cli("verify", out)[0] == 0


def test_a_format_3_builder_folder_still_verifies(tmp_path, run_cli):
    """Format 3 recorded the builder in place of the partitioner and had no ``files`` digests."""
    from hetbench.builders.synthetic_color import prepare_synthetic_color
    from hetbench.tools.verify import legacy_layout

    out = tmp_path / "sc"
    assert run_cli("build", "devices", "--synthetic-color", "3", "--clients", "6", "--out", out, "-q")[0] == 0
    old = legacy_layout(prepare_synthetic_color(3, clients=6, quiet=True).build())
    new_tag, old_tag = json.loads((out / "hetbench.json").read_text())["split_fingerprint"][:12], old.fingerprint[:12]
    for shard in (out / "data").iterdir():  # shard names and the card's patterns carry the split fingerprint
        shard.rename(shard.with_name(shard.name.replace(new_tag, old_tag)))
    for name in ("hetbench.json", "README.md"):
        (out / name).write_text((out / name).read_text().replace(new_tag, old_tag))
    manifest = json.loads((out / "hetbench.json").read_text())
    manifest.update(format=3, recipe=old.recipe, partition_fingerprint=old.partition.fingerprint,
                    split_fingerprint=old.fingerprint)
    manifest.pop("files")
    (out / "hetbench.json").write_text(json.dumps(manifest, sort_keys=True, indent=1))
    code, text, err = run_cli("verify", out)
    assert code == 0 and text.startswith("OK:"), text + err
