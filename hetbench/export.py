"""Write one split of a source table to a CSV or parquet file: sample inputs for the commands that
read files (``partition natural-id --dataset obs.csv``, ``build geo --metadata obs.csv``).

The format follows the file's extension. Parquet keeps every column, images included (as the bytes
``datasets`` stores). CSV holds text, so image columns are left out and the file has the metadata
columns only; the class label is written as its name, so the file reads back with the same classes.
Beside the file, ``.<name>.hetbench-export.json`` records its sha256: ``--overwrite`` replaces only a
file that this sidecar vouches for (:func:`hetbench.outputs.file_problem`).

Examples
--------
>>> from hetbench.export import export_table
>>> path, rows, columns = export_table("builtin:observations", "obs.csv")
>>> rows, columns
(20000, ['obs_id', 'species', 'observer', 'latitude', 'longitude'])
>>> open("obs.csv").readline().strip()
'obs_id,species,observer,latitude,longitude'
>>> export_table("builtin:digits", "digits.csv")[2]          # images do not fit in a CSV
['label', 'sample_id']
>>> export_table("builtin:digits", "digits.parquet")[2]
['image', 'label', 'sample_id']
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from hetbench.atomic import atomic_file, write_atomic
from hetbench.errors import HetbenchError
from hetbench.outputs import EXPORT_KIND, export_marker, file_problem, sha256_file

FORMATS = {".csv": "csv", ".parquet": "parquet"}


def export_table(source: str, out: str | os.PathLike, *, split: str = "train", label_col: str | None = None,
                 overwrite: bool = False) -> tuple[Path, int, list[str]]:
    """Write ``split`` of ``source`` to ``out`` (``.csv`` or ``.parquet``); returns (path, rows, columns).

    Parameters
    ----------
    source : str
        Anything :func:`hetbench.sources.load_table` reads (``builtin:observations``, a file, a build).
    out : path
        The file to write; its extension picks the format. Written to a temporary sibling and renamed
        into place, so a failure leaves no partial file.
    split : str
        The source split to write (default ``train``).
    label_col : str, optional
        The label column, for sources whose label is not found by itself.
    overwrite : bool
        Replace an existing file that ``hetbench export`` wrote: its sidecar ``.<name>.hetbench-export.json``
        (written beside every export) parses and records the file's sha256. Any other file is refused, as
        is an ``out`` equal to or inside ``source``.

    Returns
    -------
    (Path, int, list of str)
        The file, its rows and its columns.

    Examples
    --------
    >>> export_table("builtin:observations", "obs_again.csv")[1]
    20000
    >>> export_table("builtin:observations", "obs_again.csv", overwrite=True)[1]
    20000
    >>> _ = open("mine.csv", "w").write("my,own")
    >>> export_table("builtin:observations", "mine.csv", overwrite=True)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out 'mine.csv' is not a hetbench export (no .mine.csv.hetbench-export.json beside it); overwrite replaces only a file hetbench export wrote
    """
    import datasets

    from hetbench.outputs import check_inputs
    from hetbench.sources import load_table

    from hetbench.outnames import check_out_name

    check_out_name(out)  # not empty, names the file system can hold (with the sidecar beside it)
    path = Path(out)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise HetbenchError(f"`out` '{path}' must end in .csv or .parquet (the format follows the extension)")
    table = load_table(source, label_col)
    if split not in table.splits:
        raise HetbenchError(f"'{source}' has no split '{split}' (splits: {', '.join(table.split_names)})")
    check_inputs(path, {"SOURCE": source})
    _check_replaceable(path, overwrite)
    ds = table.splits[split]
    if fmt == "csv":
        images = [c for c, f in ds.features.items() if isinstance(f, (datasets.Image, datasets.Sequence, list))
                  or getattr(f, "_type", "") in ("Array2D", "Array3D")]
        ds = ds.remove_columns(images)
        order = list(ds.column_names)
        for c in [c for c, f in ds.features.items() if isinstance(f, datasets.ClassLabel)]:
            # class names, not indices: the file reads back with the same classes
            names = np.asarray(ds.features[c].names, dtype=object)
            ds = ds.remove_columns(c).add_column(c, names[np.asarray(ds[c], dtype=np.int64)].tolist())
        ds = ds.select_columns(order)
    if not ds.column_names:
        raise HetbenchError(f"'{source}' has no column that fits in a CSV file; write a .parquet file instead")
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]  # removed again on failure
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_empty(made)
        raise HetbenchError(f"cannot write `out` '{path}': {exc.strerror or exc}") from None
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        with atomic_file(path) as tmp:
            if fmt == "csv":
                ds.to_csv(str(tmp), index=False)
            else:
                ds.to_parquet(str(tmp))
            # the marker is replaced first, once the new file is whole, and the file right after it
            write_atomic(export_marker(path), json.dumps({"kind": EXPORT_KIND, "format": fmt, "rows": len(ds),
                                                          "sha256": sha256_file(tmp)}, sort_keys=True) + "\n")
    except OSError as exc:
        _remove_empty(made)
        raise HetbenchError(f"cannot write `out` '{path}': {exc.strerror or exc}") from None
    finally:
        if bars:
            datasets.enable_progress_bars()
    return path, len(ds), list(ds.column_names)


def _remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty: the ones made for a file that was not written."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _check_replaceable(path: Path, overwrite: bool) -> None:
    """Refuse an existing ``path`` unless ``overwrite`` and ``hetbench export`` wrote it (its sidecar says so)."""
    if not path.exists():
        return
    if path.is_dir() or not overwrite:
        raise HetbenchError(f"`out` '{path}' already exists" + ("" if path.is_dir() else "; pass `overwrite` to replace it"))
    problem = file_problem(path, "export")
    if problem is not None:
        raise HetbenchError(f"`out` '{path}' {problem}; `overwrite` replaces only a file hetbench export wrote")
