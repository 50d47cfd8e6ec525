"""Local files and folders as sources: parquet, CSV, ``save_to_disk`` folders and hetbench builds.

:func:`read_path` returns the splits (``{split: datasets.Dataset}``) of

* a parquet file, or a folder of parquet files (``train-*.parquet`` / ``test-*.parquet`` ... name
  their splits, any other file is ``train``);
* a CSV (or TSV) file, or a folder holding exactly one CSV file;
* a folder written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``;
* a folder built by hetbench (its ``hetbench.json`` is recognised; ``client_id`` is dropped, so a
  published split can be partitioned again; the layout is in ``docs/output-contract.md``).

Parquet files of up to :data:`IN_MEMORY_PARQUET_BYTES` in all are read straight into memory with
pyarrow (:func:`parquet_dataset`: no copy into the ``datasets`` cache, one Arrow table to take rows
from); larger ones go through ``datasets.Dataset.from_parquet``, whose Arrow cache is memory-mapped, so
memory stays bounded. Both give the same rows, columns and features.

A file that cannot be read is reported in one line that names it and the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

from hetbench.errors import HetbenchError

KNOWN_SPLITS = ("train", "validation", "test", "global_test")
#: parquet sources up to this many bytes (all files of a split together) are read into memory
IN_MEMORY_PARQUET_BYTES = 1 << 30


def parquet_dataset(files: list[str] | str):
    """The rows of parquet ``files`` as one ``datasets.Dataset``.

    Up to :data:`IN_MEMORY_PARQUET_BYTES` the files are read row group by row group with ``pyarrow.parquet`` into
    an in-memory Arrow table whose features come from the files' ``huggingface`` schema metadata
    (as ``from_parquet`` reads them), fingerprinted by path, size and modification time; larger
    sources, or files whose schemas differ, go through ``datasets.Dataset.from_parquet``.

    Parameters
    ----------
    files : str or list of str
        Parquet files, in row order.

    Returns
    -------
    datasets.Dataset

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> pq.write_table(pa.table({"x": [1, 2], "label": ["a", "b"]}), "two-rows.parquet")
    >>> parquet_dataset("two-rows.parquet")["label"][:]
    ['a', 'b']
    """
    import hashlib
    import os

    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [files] if isinstance(files, str) else list(files)
    stats = [os.stat(f) for f in files]
    if sum(st.st_size for st in stats) > IN_MEMORY_PARQUET_BYTES:
        return datasets.Dataset.from_parquet(files if len(files) > 1 else files[0])
    tables = []
    for f in files:  # row group by row group, kept as chunks: read() would concatenate them (a third copy at its peak)
        pf = pq.ParquetFile(f)
        groups = [pf.read_row_group(i) for i in range(pf.num_row_groups)]
        tables.append(pa.concat_tables(groups) if groups else pf.schema_arrow.empty_table())
    if any(t.schema != tables[0].schema for t in tables[1:]):
        return datasets.Dataset.from_parquet(files)
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    features = datasets.Features.from_arrow_schema(table.schema)
    key = "|".join(f"{os.path.abspath(f)}:{st.st_size}:{st.st_mtime_ns}" for f, st in zip(files, stats))
    return datasets.Dataset(
        datasets.table.InMemoryTable(table.cast(features.arrow_schema)),
        info=datasets.DatasetInfo(features=features),
        fingerprint=hashlib.sha256(key.encode()).hexdigest()[:16],
    )


def read_path(path: str | Path) -> dict:
    """The splits of an existing file or folder (see the module docstring).

    Parameters
    ----------
    path : str or path
        A file or folder that exists.

    Returns
    -------
    dict
        ``{split: datasets.Dataset}``, train first.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.sources.files import read_path
    >>> _ = Path("rows.csv").write_text("x,label\\n1,a\\n2,b\\n")
    >>> {split: ds.num_rows for split, ds in read_path("rows.csv").items()}
    {'train': 2}
    """
    import datasets

    from hetbench.contract import MANIFEST_NAME

    dataset = str(path)
    path = Path(path).expanduser()
    try:
        if path.is_file():
            suffix = path.suffix.lower()
            if suffix == ".parquet":
                return {"train": parquet_dataset(str(path))}
            if suffix in (".csv", ".tsv"):
                sep = "\t" if suffix == ".tsv" else ","
                return {"train": datasets.Dataset.from_csv(str(path), sep=sep)}
            raise HetbenchError(f"dataset file '{dataset}' is not parquet or CSV")
        if (path / MANIFEST_NAME).is_file():
            return read_hetbench_folder(path)
        if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
            obj = datasets.load_from_disk(str(path))
            return dict(obj) if isinstance(obj, datasets.DatasetDict) else {"train": obj}
        parquet = sorted(path.rglob("*.parquet"))
        if parquet:
            return read_parquet_files(parquet)
        csvs = sorted(path.glob("*.csv"))
        if len(csvs) == 1:
            return {"train": datasets.Dataset.from_csv(str(csvs[0]))}
    except HetbenchError:
        raise
    except Exception as exc:  # a corrupt or unreadable file: say which and why, in one line
        raise HetbenchError(f"could not read dataset '{dataset}': {type(exc).__name__}: {exc}") from exc
    raise HetbenchError(
        f"'{dataset}' is not a data set hetbench can read (expected save_to_disk output, parquet, CSV or a hetbench build)"
    )


def split_of(file: Path) -> str:
    """The split a parquet file names: its name up to the first '-' or '.' if that is a known split.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.sources.files import split_of
    >>> split_of(Path("test-00000-of-00001.parquet")), split_of(Path("part-0.parquet"))
    ('test', 'train')
    """
    name = re.split(r"[-.]", file.name, maxsplit=1)[0]
    return name if name in KNOWN_SPLITS else "train"


def _split_order(split: str) -> tuple[int, str]:
    order = {"train": 0, "validation": 1, "test": 2}
    return order.get(split, 3), split


def read_parquet_files(files: list[Path]) -> dict:
    """Parquet files grouped into splits by :func:`split_of`, one ``Dataset`` per split."""
    by_split: dict[str, list[str]] = {}
    for f in files:
        by_split.setdefault(split_of(f), []).append(str(f))
    return {s: parquet_dataset(fs) for s, fs in sorted(by_split.items(), key=lambda kv: _split_order(kv[0]))}


def read_hetbench_folder(path: Path) -> dict:
    """A hetbench build as a source: its splits as listed in ``hetbench.json``, without ``client_id``."""
    from hetbench.contract import read_manifest, shard_paths

    splits = {}
    manifest = read_manifest(path)
    for split in manifest["splits"]:
        files = [str(f) for f in shard_paths(path, manifest, split)]  # never a path outside the build folder
        if not files or not all(Path(f).is_file() for f in files):
            raise HetbenchError(f"hetbench build '{path}' is missing parquet files of split '{split}'")
        ds = parquet_dataset(files)
        splits[split] = ds.remove_columns([c for c in ("client_id",) if c in ds.column_names])
    return splits
