"""Sources: read a data set reference into a :class:`~hetbench.table.SampleTable`.

:func:`load_table` is the one dispatcher. Accepted ``--dataset`` values, and the module that reads each:

* ``builtin:digits`` (the default), ``builtin:mnist5k``, ``builtin:observations``,
  ``builtin:digits-domains`` - :mod:`hetbench.sources.builtins` (a registry of names);
* ``inat2017:ANNOTATIONS.json+LOCATIONS.json`` - the iNaturalist 2017 metadata
  (:mod:`hetbench.sources.inat2017`);
* ``train=PATH,test=PATH`` - one file (or folder) per split, e.g. a published split's CSVs; each
  split named once, no file given for two splits, and (with an id column) no id in two splits;
* a parquet file or folder, a CSV file, a ``save_to_disk`` folder or a folder built by hetbench -
  :mod:`hetbench.sources.files`;
* a Hugging Face hub id, where a network or cache has it - :mod:`hetbench.sources.hub`;
* an in-memory ``datasets.Dataset`` / ``DatasetDict`` - :func:`table_from_datasets`.

Every loader ends in :func:`hetbench.sources.convert.to_table`, which picks the label and id
columns and encodes the classes. Generated and embedded data live beside them:
:mod:`~hetbench.sources.observations`, :mod:`~hetbench.sources.digits_domains`,
:mod:`~hetbench.sources.photographs` and :mod:`~hetbench.sources.packaged`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hetbench.errors import HetbenchError
from hetbench.sources.builtins import BUILTINS
from hetbench.sources.convert import table_from_datasets, to_table
from hetbench.sources.files import KNOWN_SPLITS, read_path
from hetbench.sources.hub import looks_like_hub_id, read_hub
from hetbench.sources.inat2017 import PREFIX as INAT2017_PREFIX
from hetbench.sources.inat2017 import load_inat2017
from hetbench.sources.quiet import datasets_bars_off
from hetbench.table import SampleTable

if TYPE_CHECKING:  # pragma: no cover
    import datasets

DEFAULT_DATASET = "builtin:digits"


def load_table(
    dataset: "str | datasets.Dataset | datasets.DatasetDict" = DEFAULT_DATASET,
    label_col: str | None = None,
    id_col: str | None = None,
    check_images: bool = False,
) -> SampleTable:
    """Read ``dataset`` as a SampleTable.

    Parameters
    ----------
    dataset : str, datasets.Dataset or datasets.DatasetDict
        A reference (see the module docstring) or an in-memory data set. An in-memory source cannot
        be loaded again by ``hetbench verify``; its manifest records it as ``in-memory``.
    label_col : str, optional
        The label column; default ``label`` (or the only ``ClassLabel`` column), ``species`` for
        ``builtin:observations``, ``category_id`` for ``inat2017:``.
    id_col : str, optional
        The sample-id column recorded in the manifest; default the source's own (``sample_id`` of
        the built-ins) or none.
    check_images : bool
        Decode-check every image a local or hub source holds and leave out (listing them in
        ``SampleTable.skipped``) those that do not decode; image cells that name a file are always
        read under the roots rule (:mod:`hetbench.sources.image_cells`). Without it, cells whose bytes are
        no image are kept and listed in ``SampleTable.not_images``.

    Returns
    -------
    SampleTable

    Raises
    ------
    HetbenchError
        An unknown built-in, a missing or unreadable file, a missing label or id column, duplicate
        ids; the message is one line.

    Examples
    --------
    >>> from hetbench.sources import load_table
    >>> load_table("builtin:digits").num_classes
    10
    >>> _ = open("train.csv", "w").write("x,label\\n1,a\\n2,b\\n3,a\\n")
    >>> _ = open("test.csv", "w").write("x,label\\n4,b\\n")
    >>> t = load_table("train=train.csv,test=test.csv")
    >>> t.split_names, t.class_names
    (['train', 'test'], ['a', 'b'])
    >>> load_table("builtin:cifar")
    Traceback (most recent call last):
    ...
    hetbench.registry.UnknownNameError: unknown built-in dataset 'builtin:cifar'; choose one of: builtin:digits, builtin:mnist5k, builtin:observations, builtin:digits-domains
    """
    if not isinstance(dataset, str):
        return table_from_datasets(dataset, label_col, id_col)
    if dataset.startswith(INAT2017_PREFIX):
        return load_inat2017(dataset, label_col, id_col)
    if "=" in dataset and not Path(dataset).exists():
        return _load_per_split(dataset, label_col, id_col)
    if dataset.startswith("builtin:"):
        return BUILTINS.call(dataset, label_col=label_col, id_col=id_col)
    from hetbench.sources.lineage import build_lineage

    with datasets_bars_off():
        splits, skipped, not_images = _read_reference(dataset, check_images)
    table = to_table(splits, dataset, label_col, id_col, build_lineage(dataset))  # a build's origin and licence
    table.skipped, table.not_images = skipped, not_images
    return table


def _read_reference(dataset: str, check_images: bool = False) -> tuple[dict, list[dict], list[dict]]:
    """The splits of a local file or folder, else of a hub id, their image cells that name files resolved
    inside the source's folder (:func:`hetbench.sources.image_cells.resolve_image_cells`); and the rows
    dropped for it, and (without ``check_images``) the kept rows whose image cell is no image."""
    from hetbench.sources.image_cells import resolve_image_cells

    path = Path(dataset).expanduser()
    if path.exists():
        return resolve_image_cells(read_path(dataset), path if path.is_dir() else path.parent, check_all=check_images)
    if looks_like_hub_id(dataset):
        return resolve_image_cells(read_hub(dataset), None, check_all=check_images)
    raise HetbenchError(f"dataset '{dataset}' not found (no such file or folder, and not a built-in)")


def _load_per_split(dataset: str, label_col: str | None, id_col: str | None) -> SampleTable:
    """``train=a.csv,test=b.csv``: one file (or folder) per split, each read as its first split."""
    parts = []
    for part in dataset.split(","):
        name, _, path = part.partition("=")
        if not name.strip() or not path.strip():
            raise HetbenchError(f"`dataset` '{dataset}': write one SPLIT=PATH per split, comma-separated")
        parts.append((name.strip(), path.strip()))
    check_split_paths(parts, dataset)
    splits, skipped, not_images = {}, [], []
    for name, path in parts:
        with datasets_bars_off():
            loaded, dropped, kept_bad = _read_reference(path)
        first = next(iter(loaded))
        splits[name] = loaded[first]
        skipped += [{**d, "split": name} for d in dropped if d["split"] == first]
        not_images += [{**d, "split": name} for d in kept_bad if d["split"] == first]
    table = to_table(splits, dataset, label_col, id_col, {})
    table.skipped, table.not_images = skipped, not_images
    _check_disjoint_ids(table, dataset)
    return table


def check_split_paths(parts: list[tuple[str, str]], dataset: str) -> None:
    """The ``SPLIT=PATH`` pairs of a per-split source name every split once and no file twice.

    Two paths are the same file when they resolve to one path (``..``, symbolic links), are the same
    file on disk (hard links) or are two regular files with identical bytes; a folder is compared
    by path only.

    Parameters
    ----------
    parts : list of (str, str)
        The (split, path) pairs, in order.
    dataset : str
        The ``--dataset`` value, named in the error.

    Examples
    --------
    >>> from hetbench.sources import check_split_paths
    >>> _ = open("a.csv", "w").write("x,label\\n1,a\\n")
    >>> check_split_paths([("train", "a.csv"), ("test", "./a.csv")], "train=a.csv,test=./a.csv")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: dataset 'train=a.csv,test=./a.csv': splits 'train' and 'test' are the same file ('a.csv'); give each split its own file
    """
    import hashlib
    import os

    seen: dict[str, str] = {}
    for name, _ in parts:
        if name in seen:
            raise HetbenchError(f"`dataset` '{dataset}': split '{name}' is given twice; name each split once")
        seen[name] = name
    files = [(name, path, Path(path).expanduser()) for name, path in parts]
    digests: dict[int, str] = {}

    def digest(i: int) -> str:
        if i not in digests:
            h = hashlib.sha256()
            with open(files[i][2], "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            digests[i] = h.hexdigest()
        return digests[i]

    for i in range(len(files)):
        for j in range(i):
            (a, path, pa), (b, _, pb) = files[j], files[i]
            if not (pa.exists() and pb.exists()):
                continue  # the reader names the missing file
            same = pa.resolve() == pb.resolve() or os.path.samefile(pa, pb)
            if not same and pa.is_file() and pb.is_file() and pa.stat().st_size == pb.stat().st_size:
                same = digest(j) == digest(i)
            if same:
                raise HetbenchError(
                    f"`dataset` '{dataset}': splits '{a}' and '{b}' are the same file ('{path}'); give each split its own file"
                )


def _check_disjoint_ids(table: SampleTable, dataset: str) -> None:
    """With an id column, no sample id of a per-split source may be in two splits (a test row seen
    in training)."""
    import numpy as np

    if table.id_column is None:
        return
    names = table.split_names
    ids = {s: np.unique(np.asarray(table.ids(s)).astype(str)) for s in names}
    for i, b in enumerate(names):
        for a in names[:i]:
            both = np.intersect1d(ids[a], ids[b], assume_unique=True)
            if both.size:
                raise HetbenchError(
                    f"`dataset` '{dataset}': {both.size} sample id(s) of column '{table.id_column}' are in both "
                    f"splits '{a}' and '{b}', e.g. '{both[0]}'"
                )


__all__ = ["BUILTINS", "DEFAULT_DATASET", "KNOWN_SPLITS", "check_split_paths", "load_table", "table_from_datasets"]
