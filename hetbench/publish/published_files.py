"""What ``hetbench verify`` checks beyond the shards: the card's YAML, the report and the file list.

* **The card's YAML** decides what ``load_dataset`` reads (every config, ``data_files``,
  ``data_dir``, ``default``, ``filters``, features) and what the Hub shows (licence, tags). Verify
  derives the metadata hetbench writes from the re-run recipe (:func:`expected_card_metadata`) and
  requires the card's front matter to equal it, naming the first differing field. The card's prose
  is not checked.
* **The report**: ``report.json``'s common entries (EMD, sizes, label statistics: what users quote)
  are recomputed from the re-run split and compared value by value, ``report/clients.parquet`` by
  content; every published file other than the shards, the sample ids and the embeddings (the
  report, its per-client statistics, the plots) has its sha256 in the manifest's ``files``, which
  also covers the family entries of ``report.json`` that only a build computes.
* **The file list**: the folder holds nothing else (dot-files aside, which ``hetbench publish``
  never uploads), and ``hetbench publish`` uploads exactly :func:`published_paths`.

Examples
--------
>>> m = {"splits": {"train": {"files": ["data/train-0.parquet"]}}, "files": {"report.json": "..."}}
>>> published_paths(m)
['README.md', 'data/train-0.parquet', 'hetbench.json', 'report.json']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hetbench.errors import Mismatch
from hetbench.publish.inventory import INVENTORIED, file_inventory, file_sha256 as _sha256

#: files of a build that the manifest digests elsewhere or that hold it
OTHERS = ("hetbench.json", "README.md")


def published_paths(manifest: dict[str, Any]) -> list[str]:
    """Every file a build publishes: the card, the manifest, the shards, the sample ids, the
    embeddings and the manifest's ``files`` (what ``hetbench publish`` uploads, nothing else)."""
    from hetbench.contract.embeddings import listed_files

    paths = set(OTHERS) | set(manifest.get("files") or {}) | listed_files(manifest)
    for info in manifest["splits"].values():
        paths |= set(info["files"])
    entry = manifest.get("sample_ids")
    if isinstance(entry, dict) and isinstance(entry.get("file"), str):
        paths.add(entry["file"])
    return sorted(paths)


def check_files(folder: Path, manifest: dict[str, Any]) -> None:
    """Every file of the manifest's ``files`` has its sha256, and the folder holds no other file
    (dot-files aside). Folders of format 3 and earlier have no ``files``: only the stray check of
    ``data/`` applies to them."""
    from hetbench.contract import safe_path

    listed = manifest.get("files")
    if listed is None and manifest.get("format", 2) < 4:
        return
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        from hetbench.errors import HetbenchError

        raise HetbenchError("hetbench.json is malformed: 'files' is not an object of sha256 digests")
    for rel, sha in listed.items():
        path = safe_path(folder, rel)
        if not path.is_file():
            raise Mismatch(f"file {rel}: missing")
        if _sha256(path) != sha:
            raise Mismatch(f"file {rel}: differs from its sha256 in hetbench.json")
    allowed = set(published_paths(manifest))
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or path.is_dir():
            continue
        if rel.as_posix() not in allowed:
            raise Mismatch(f"file {rel.as_posix()}: not in hetbench.json (hetbench publish would not upload it)")


def card_task(features) -> str:
    """The Hub task category of a split with these features."""
    return "image-classification" if "image" in features else "tabular-classification"


def expected_card_metadata(fs, manifest: dict[str, Any], features) -> dict[str, Any]:
    """The card's YAML metadata hetbench writes for the re-run split ``fs`` (as a plain dict)."""
    import yaml

    from hetbench.publish.card import card_data, recipe_method
    from hetbench.publish.licence import manifest_licence

    data = card_data(
        list(fs.outputs), features._to_yaml_list(), fs.table.license, card_task(features), manifest.get("name"),
        fs.fingerprint[:12], source=fs.table.source.get("origin") or fs.table.source.get("dataset"), method=recipe_method(fs.recipe),
        num_rows=sum(len(r) for r in fs.outputs.values()), given=manifest_licence(manifest),
        split_rows={s: len(r) for s, r in fs.outputs.items()},
    )
    return yaml.safe_load(data.to_yaml())


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The path of the first place where ``a`` and ``b`` (nested dicts and lists) differ, or None.

    Examples
    --------
    >>> first_difference({"configs": [{"a": 1}]}, {"configs": [{"a": 2}]}), first_difference([1], [1])
    ('configs[0].a', None)
    """
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{path}.{key}".lstrip(".")
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]".lstrip("."))
            if found:
                return found
        return f"{path}[{min(len(a), len(b))}]".lstrip(".") if len(a) != len(b) else None
    return None if a == b else (path.lstrip(".") or "(the whole front matter)")


def card_front_matter(folder: Path) -> Any:
    """The card's YAML front matter, parsed (:class:`Mismatch` when missing or unreadable)."""
    import yaml

    card = folder / "README.md"
    if not card.is_file():
        raise Mismatch("README.md (the dataset card that tells load_dataset which files make each split) is missing")
    text = card.read_text(encoding="utf-8", errors="replace")
    try:
        return yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else None
    except (yaml.YAMLError, IndexError) as exc:
        raise Mismatch(f"README.md has unreadable YAML front matter: {str(exc).splitlines()[0]}") from exc


def check_card(folder: Path, fs, manifest: dict[str, Any], features) -> None:
    """The card's front matter equals what hetbench writes for the re-run split (module notes)."""
    found = card_front_matter(folder)
    expected = expected_card_metadata(fs, manifest, features)
    info = found.get("dataset_info") if isinstance(found, dict) else None
    if isinstance(info, dict) and "splits" not in info:
        expected.get("dataset_info", {}).pop("splits", None)  # a card written before it gave row counts
    where = first_difference(found, expected)
    if where:
        raise Mismatch(f"README.md's YAML field '{where}' differs from what hetbench wrote (it decides what "
                       "load_dataset reads or what the Hub shows)")


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def check_report(folder: Path, fs, manifest: dict[str, Any]) -> None:
    """``report.json``'s common entries, ``report/clients.parquet`` and, for a split of many classes,
    ``report/classes.parquet`` equal what the re-run split gives (module notes)."""
    import pyarrow.parquet as pq

    from hetbench.report import CLIENTS_FILE, compute_report

    path = folder / "report.json"
    if not path.is_file():
        raise Mismatch("report.json is missing")
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Mismatch(f"report.json is not valid JSON ({exc})") from exc
    report = compute_report({s: r.client_ids for s, r in fs.outputs.items()}, {s: fs.labels(s) for s in fs.outputs},
                            fs.class_names, fs.client_names, fs.dropped)
    for key, value in report.items():
        if not isinstance(found, dict) or key not in found or _plain(found[key]) != _plain(value):
            raise Mismatch(f"report.json's '{key}' differs from what the split gives (re-running the recipe)")
    clients = folder / CLIENTS_FILE
    try:
        table = pq.ParquetFile(clients).read()
    except Exception as exc:  # missing, truncated, not parquet
        raise Mismatch(f"{CLIENTS_FILE} is not readable parquet ({str(exc).splitlines()[0][:120]})") from exc
    if not table.equals(report.clients.to_arrow()):
        raise Mismatch(f"{CLIENTS_FILE} differs from the per-client statistics the split gives")
    if report.classes is not None:  # a split of many classes: its per-class lists (hetbench.report.classes)
        from hetbench.report.classes import CLASSES_FILE

        try:
            table = pq.ParquetFile(folder / CLASSES_FILE).read()
        except Exception as exc:  # missing, truncated, not parquet
            raise Mismatch(f"{CLASSES_FILE} is not readable parquet ({str(exc).splitlines()[0][:120]})") from exc
        if not table.equals(report.classes.to_arrow()):
            raise Mismatch(f"{CLASSES_FILE} differs from the per-class statistics the split gives")


__all__ = ["INVENTORIED", "file_inventory", "published_paths", "check_files", "check_card", "check_report", "card_task",
           "expected_card_metadata", "card_front_matter", "first_difference"]
