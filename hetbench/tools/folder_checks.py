"""The checks ``hetbench verify`` runs on a built folder alone, before it re-runs the recipe.

In order (:func:`check_folder`): the manifest is well formed, every path it names stays inside the
folder, the per-client sample ids (``sample_ids.parquet``, or the lists of a format 2 manifest) hash
to ``assignment_sha256``, the folder and its card hold
exactly the listed shards, every shard has its recorded sha256, every column of every split its
recorded content digest, and ``num_clients``, ``client_names`` and ``class_names`` agree with the
rows. A malformed manifest is :class:`~hetbench.errors.HetbenchError` (cannot check); a folder that
does not hold what its manifest says is :class:`Mismatch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError, Mismatch
from hetbench.publish.digest import DIGEST_VERSION, SplitDigest, file_sha256, split_digest
from hetbench.contract import MANIFEST_NAME, SampleIds, read_sample_id_table, read_sample_ids, safe_path, sample_ids_of
from hetbench.publish.manifest import assignment_digest, sample_ids_digest


@dataclass
class SplitData:
    """What the shards of one output split hold: per-block column digests, the ``client_id`` and
    ``label`` columns, the sample ids (when the id column is in the shards) and the row count of
    every shard."""

    digest: SplitDigest
    client_id: np.ndarray
    label: np.ndarray
    ids: np.ndarray | None
    shard_rows: list[int] = field(default_factory=list)
    features: Any = None


_KEYS = {
    "recipe": dict, "recipe.partition": dict, "recipe.partition.method": str, "recipe.partition.params": dict,
    "recipe.partition.seed": int, "recipe.test_split": str, "source": dict, "input_fingerprint": str,
    "partition_fingerprint": str, "split_fingerprint": str, "assignment_sha256": str, "num_clients": int,
    "client_names": list, "class_names": list, "splits": dict, "sample_ids": dict, "content_digest": dict,
}
_SPLIT_KEYS = {"source_split": str, "num_rows": int, "files": list, "file_sha256": dict, "column_sha256": dict,
               "content_sha256": str}


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _typed(value: Any, typ: type) -> bool:
    return isinstance(value, typ) and not (typ is int and isinstance(value, bool))


def check_well_formed(manifest: dict) -> None:
    """Every key verify reads is there with its type (else :class:`HetbenchError`: cannot check)."""
    if "content_digest" not in manifest:
        raise HetbenchError(
            f"{MANIFEST_NAME} has no content digests ('content_digest' is missing; written by hetbench "
            f"{manifest.get('hetbench_version', '?')}); "
            "rebuild the folder with this version to check it")
    for key, typ in _KEYS.items():
        if not _typed(_get(manifest, key), typ):
            raise HetbenchError(f"{MANIFEST_NAME} is malformed: '{key}' is missing or not a {typ.__name__}")
    version = manifest["content_digest"].get("version")
    if manifest["content_digest"].get("algorithm") != "sha256":
        raise HetbenchError(f"{MANIFEST_NAME} uses content digest algorithm "
                            f"{manifest['content_digest'].get('algorithm')!r}; this hetbench checks sha256")
    if version != DIGEST_VERSION:
        raise HetbenchError(f"{MANIFEST_NAME} uses content digest version {version!r}; this hetbench checks version {DIGEST_VERSION}")
    for key in ("client_names", "class_names"):
        if not all(isinstance(v, str) for v in manifest[key]):
            raise HetbenchError(f"{MANIFEST_NAME} is malformed: '{key}' is not a list of strings")
    for split, info in manifest["splits"].items():
        for key, typ in _SPLIT_KEYS.items():
            if not _typed(info.get(key), typ):
                raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'splits.{split}.{key}' is missing or not a {typ.__name__}")
        if manifest.get("format", 2) >= 3:
            continue
        if split not in manifest["sample_ids"] or not isinstance(manifest["sample_ids"][split], dict):
            raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'sample_ids.{split}' is missing")
        if not isinstance(manifest["sample_ids"][split].get("clients"), dict):
            raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'sample_ids.{split}.clients' is missing")
    if manifest.get("format", 2) >= 3:
        entry = manifest["sample_ids"]
        for key, typ in (("file", str), ("sha256", str), ("num_rows", int)):
            if not _typed(entry.get(key), typ):
                raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'sample_ids.{key}' is missing or not a {typ.__name__}")
    # what the recipe's re-run reads: each optional key of its type, the partitioner's parameters of the
    # types its constructor declares (a builder's are checked by its rebuild function)
    from hetbench.param_types import check_params, describe, matches
    from hetbench.partitioners import REGISTRY

    recipe, optional = manifest["recipe"], (
        ("source.dataset", str | None), ("source.label_col", str | None), ("source.id_col", str | None),
        ("recipe.test_fraction", float | None), ("recipe.train_split", str), ("recipe.allow_empty", bool),
        ("recipe.partition.split", str), ("recipe.build", dict), ("recipe.build.method", str),
        ("recipe.build.params", dict))
    for key, hint in optional:
        parent, _, last = key.rpartition(".")
        holder = _get(manifest, parent)
        if isinstance(holder, dict) and last in holder and not matches(holder[last], hint):
            raise HetbenchError(f"{MANIFEST_NAME} is malformed: '{key}' is not {describe(hint)}")
    if "build" in recipe and not {"method", "params"} <= set(recipe["build"]):
        raise HetbenchError(f"{MANIFEST_NAME} is malformed: 'recipe.build' lacks its method or params")
    method = recipe["partition"]["method"]
    if method in REGISTRY.names():
        check_params(REGISTRY[method], recipe["partition"]["params"], "recipe.partition.params")


def _card_data_files(folder: Path) -> dict[str, list[str]]:
    """Split -> data_files patterns of the card's default config (what ``load_dataset`` reads)."""
    import yaml

    card = folder / "README.md"
    if not card.is_file():
        raise Mismatch("README.md (the dataset card that tells load_dataset which files make each split) is missing")
    text = card.read_text(encoding="utf-8", errors="replace")
    try:
        meta = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else None
    except (yaml.YAMLError, IndexError) as exc:
        raise Mismatch(f"README.md has unreadable YAML front matter: {str(exc).splitlines()[0]}") from exc
    configs = meta.get("configs") if isinstance(meta, dict) else None
    if not isinstance(configs, list) or not configs or not isinstance(configs[0], dict):
        raise Mismatch("README.md has no configs with data_files")
    out: dict[str, list[str]] = {}
    for entry in configs[0].get("data_files") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("split"), str):
            raise Mismatch("README.md has a malformed data_files entry")
        paths = entry.get("path")
        out.setdefault(entry["split"], []).extend([paths] if isinstance(paths, str) else list(paths or []))
    return out


def check_shard_list(folder: Path, manifest: dict) -> None:
    """The folder's ``data/`` holds exactly the listed shards, and the card's patterns match them."""
    listed = {f: s for s, info in manifest["splits"].items() for f in info["files"]}
    for split, info in manifest["splits"].items():
        if not info["files"]:
            raise Mismatch(f"split '{split}' lists no parquet files")
        if set(info["file_sha256"]) != set(info["files"]):
            raise Mismatch(f"split '{split}': file_sha256 does not cover exactly the listed files")
        for f in info["files"]:
            if not (folder / f).is_file():
                raise Mismatch(f"split '{split}', file {f}: missing")
    data = folder / "data"
    present = sorted(p.relative_to(folder).as_posix() for p in data.rglob("*") if p.is_file() or p.is_symlink()) if data.is_dir() else []
    patterns = _card_data_files(folder)
    if set(patterns) != set(manifest["splits"]):
        raise Mismatch(f"README.md's splits ({', '.join(sorted(patterns)) or 'none'}) differ from hetbench.json's "
                       f"({', '.join(sorted(manifest['splits']))})")
    for split, pats in patterns.items():
        matched: set[str] = set()
        for pat in pats:
            safe_path(folder, pat)
            matched |= {p.relative_to(folder).as_posix() for p in folder.glob(pat)}
        extra = sorted(matched - set(manifest["splits"][split]["files"]))
        if extra:
            raise Mismatch(f"split '{split}', file {extra[0]}: a stray shard not in hetbench.json "
                           f"(load_dataset would load it into '{split}')")
        lost = sorted(set(manifest["splits"][split]["files"]) - matched)
        if lost:
            raise Mismatch(f"split '{split}', file {lost[0]}: README.md's data_files do not load it")
    stray = [p for p in present if p not in listed]
    if stray:
        raise Mismatch(f"file {stray[0]}: a stray file in data/ that hetbench.json does not list")


def _read_split(folder: Path, manifest: dict, split: str) -> SplitData:
    """Stream every shard of a split once: column digests, client_id, label and ids."""
    import datasets
    import pyarrow.parquet as pq

    id_col = manifest["source"].get("id_col")
    info = manifest["splits"][split]
    digest, names, features = None, None, None
    cids, labels, ids, rows = [], [], [], []
    for f in info["files"]:
        try:
            pf = pq.ParquetFile(safe_path(folder, f))
            schema = pf.schema_arrow
            if digest is None:
                digest, names = SplitDigest(schema, keep_blocks=True), schema.names
                features = datasets.Features.from_arrow_schema(schema)
            elif schema.names != names:
                raise Mismatch(f"split '{split}', file {f}: its columns differ from the split's other shards")
            for batch in pf.iter_batches(batch_size=10_000):
                digest.update(batch)
                cids.append(batch.column("client_id").to_numpy(zero_copy_only=False))
                labels.append(batch.column("label").to_numpy(zero_copy_only=False))
                if id_col and id_col in schema.names:
                    ids.append(batch.column(id_col).to_numpy(zero_copy_only=False))
            rows.append(pf.metadata.num_rows)
        except Mismatch:
            raise
        except Exception as exc:  # truncated, not parquet, no client_id/label column
            raise Mismatch(f"split '{split}', file {f}: not a readable hetbench shard ({str(exc).splitlines()[0][:120]})") from exc
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
    return SplitData(digest, cat(cids), cat(labels), cat(ids) if ids else None, rows, features)


def _first_changed_column(recorded: dict[str, str], now: dict[str, str]) -> str | None:
    for name in list(now) + [n for n in recorded if n not in now]:
        if recorded.get(name) != now.get(name):
            return name
    return None


def check_shards(folder: Path, manifest: dict) -> dict[str, SplitData]:
    """Every shard's sha256, then every split's column digests and row count."""
    for split, info in manifest["splits"].items():
        for f in info["files"]:
            if file_sha256(safe_path(folder, f)) != info["file_sha256"][f]:
                why = ""
                try:
                    cols = _read_split(folder, manifest, split).digest.columns()
                    col = _first_changed_column(info["column_sha256"], cols)
                    why = f"; column '{col}' changed" if col else "; its rows are unchanged"
                except Mismatch as exc:
                    why = "; " + str(exc).split(": ", 1)[-1]
                raise Mismatch(f"split '{split}', file {f}: its bytes differ from hetbench.json (sha256){why}")
    data = {}
    for split, info in manifest["splits"].items():
        d = data[split] = _read_split(folder, manifest, split)
        cols = d.digest.columns()
        col = _first_changed_column(info["column_sha256"], cols)
        if col is not None:
            where = "missing" if col not in cols else ("not recorded" if col not in info["column_sha256"] else "changed")
            raise Mismatch(f"split '{split}', column '{col}': {where} (content digest differs from hetbench.json)")
        if split_digest(cols) != info["content_sha256"]:
            raise Mismatch(f"split '{split}': content_sha256 in hetbench.json does not match its column digests")
        if d.digest.num_rows != info["num_rows"]:
            raise Mismatch(f"split '{split}': {d.digest.num_rows:,} rows in the shards, {info['num_rows']:,} in hetbench.json")
    return data


def _ids_name(manifest: dict) -> str:
    return MANIFEST_NAME if manifest.get("format", 2) < 3 else manifest["sample_ids"]["file"]


def check_sample_ids(folder: Path, manifest: dict) -> dict[str, SampleIds]:
    """The sample ids are the ones the manifest digested: ``sample_ids.parquet`` has its recorded
    sha256 and content digest (format 3), or the JSON lists hash to ``assignment_sha256`` (format 2)."""
    if manifest.get("format", 2) < 3:
        if assignment_digest(manifest["sample_ids"]) != manifest["assignment_sha256"]:
            raise Mismatch("the per-client sample ids in hetbench.json were changed after the build (assignment_sha256 differs)")
        try:
            return read_sample_ids(folder, manifest)
        except HetbenchError as exc:  # a client name client_names does not hold
            raise Mismatch(str(exc)) from exc
    entry = manifest["sample_ids"]
    path = safe_path(folder, entry["file"])
    if not path.is_file():
        raise Mismatch(f"{entry['file']} (the per-client sample ids) is missing")
    if file_sha256(path) != entry["sha256"]:
        raise Mismatch(f"{entry['file']}: its bytes differ from hetbench.json (sha256); the per-client sample ids were changed after the build")
    try:
        table = read_sample_id_table(folder, manifest)
    except HetbenchError as exc:
        raise Mismatch(str(exc)) from exc
    if sample_ids_digest(table) != manifest["assignment_sha256"]:
        raise Mismatch(f"{entry['file']}: the per-client sample ids differ from hetbench.json (assignment_sha256)")
    return sample_ids_of(table, list(manifest["splits"]))


def check_names(folder: Path, manifest: dict, data: dict[str, SplitData], ids: dict[str, SampleIds]) -> None:
    """``num_clients``, ``client_names`` and ``class_names`` agree with the rows, the shards' label
    feature and the card; every row's ``client_id`` (and sample id, when the id column is in the
    shards) is the one ``ids`` lists."""
    names, classes, n = manifest["client_names"], manifest["class_names"], manifest["num_clients"]
    if n != len(names):
        raise Mismatch(f"num_clients is {n} in hetbench.json but client_names lists {len(names)} clients")
    if len(set(names)) != len(names):
        raise Mismatch("client_names in hetbench.json repeats a name")
    for split, d in data.items():
        label_feat = d.features.get("label") if d.features is not None else None
        if getattr(label_feat, "names", None) != classes:
            raise Mismatch(f"split '{split}', column 'label': class_names in hetbench.json differ from the shards' label names")
        if d.label.size and (d.label.min() < 0 or d.label.max() >= len(classes)):
            row = int(np.flatnonzero((d.label < 0) | (d.label >= len(classes)))[0])
            raise Mismatch(f"split '{split}', column 'label', row {row}: class {d.label[row]} outside the {len(classes)} class_names")
        cid = d.client_id.astype(np.int64)
        bad = np.flatnonzero((cid < -1) | (cid >= n))
        if bad.size:
            raise Mismatch(f"split '{split}', column 'client_id', row {bad[0]}: client {cid[bad[0]]} but num_clients is {n}")
        if cid.size and np.any(np.diff(cid) < 0):
            raise Mismatch(f"split '{split}', column 'client_id', row {int(np.flatnonzero(np.diff(cid) < 0)[0]) + 1}: rows are not in client order")
        listed = ids[split]
        if listed.client_id.size != cid.size:
            raise Mismatch(f"split '{split}': {cid.size:,} rows in the shards, {listed.client_id.size:,} sample ids in "
                           f"{_ids_name(manifest)}")
        wrong = np.flatnonzero(listed.client_id != cid)
        if not wrong.size and d.ids is not None and cid.size:
            want, got = listed.sample_id, d.ids
            if want.dtype.kind != got.dtype.kind or want.dtype.kind == "O":
                want, got = want.astype(str), got.astype(str)
            wrong = np.flatnonzero(want != got)
        if wrong.size:
            row = int(wrong[0])
            k = int(cid[row])
            who = "the shared rows" if k < 0 else f"client {k} is '{names[k]}' in client_names, but its rows"
            raise Mismatch(f"split '{split}', column 'client_id', row {row}: {who} are not the sample ids "
                           f"{_ids_name(manifest)} lists for " + ("them" if k < 0 else f"'{names[k]}'"))
    try:
        card = _card_features(folder)
    except Exception as exc:  # the card's YAML was read by check_shard_list; a broken features list
        raise Mismatch(f"README.md's features are unreadable ({str(exc).splitlines()[0][:120]})") from exc
    first = next(iter(data.values()))
    if card is not None and first.features is not None and card != first.features:
        raise Mismatch("README.md's features differ from the shards' (load_dataset would cast the rows to them)")


def _card_features(folder: Path):
    import datasets
    import yaml

    meta = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---", 2)[1])
    info = meta.get("dataset_info") if isinstance(meta, dict) else None
    if not isinstance(info, dict) or "features" not in info:
        return None
    return datasets.Features._from_yaml_list(info["features"])


def check_folder(folder: Path, manifest: dict) -> dict[str, SplitData]:
    """All checks of the module notes, in order; returns what the shards hold (for the recipe check)."""
    check_well_formed(manifest)
    for split in manifest["splits"]:
        for f in manifest["splits"][split]["files"]:
            safe_path(folder, f)
    ids = check_sample_ids(folder, manifest)
    check_shard_list(folder, manifest)
    data = check_shards(folder, manifest)
    check_names(folder, manifest, data, ids)
    return data



__all__ = ["Mismatch", "SplitData", "check_folder", "check_well_formed", "check_sample_ids", "check_shard_list",
           "check_shards", "check_names"]
