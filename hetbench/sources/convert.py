"""``datasets`` splits -> :class:`~hetbench.table.SampleTable`: label and id columns, classes, checks.

Every loader of :mod:`hetbench.sources` ends here: :func:`to_table` guesses the label column
(``label``, or the only ``ClassLabel`` column) when none is given, encodes the labels of every split
with one class list, checks the id column for duplicates and records where the rows came from
(``source`` in the manifest, see ``docs/output-contract.md``).
"""

from __future__ import annotations

import os
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.table import SampleTable, arrow_column, column_to_numpy, encode_labels


def table_from_datasets(obj, label_col: str | None = None, id_col: str | None = None, name: str = "in-memory") -> SampleTable:
    """A SampleTable over an in-memory ``datasets`` object.

    Parameters
    ----------
    obj : datasets.Dataset, datasets.DatasetDict or dict of Dataset
        One ``Dataset`` becomes the ``train`` split; a ``DatasetDict`` or ``{split: Dataset}``
        mapping keeps its splits.
    label_col, id_col : str, optional
        Label column (default: ``label`` or the only ``ClassLabel`` column) and sample-id column.
    name : str
        What the manifest records as the source (an in-memory source cannot be loaded again by
        ``hetbench verify``).

    Returns
    -------
    SampleTable

    Examples
    --------
    >>> import datasets
    >>> from hetbench.sources import table_from_datasets
    >>> t = table_from_datasets(datasets.Dataset.from_dict({"x": [1, 2, 3], "label": ["a", "b", "a"]}))
    >>> t.class_names, t.labels["train"].tolist()
    (['a', 'b'], [0, 1, 0])
    """
    import datasets

    if isinstance(obj, datasets.Dataset):
        splits = {"train": obj}
    elif isinstance(obj, (datasets.DatasetDict, dict)):
        splits = dict(obj)
    else:
        raise HetbenchError(f"cannot read a {type(obj).__name__} as a data set")
    return to_table(splits, name, label_col, id_col, {})


def guess_label_column(ds) -> str:
    """``label`` if the split has it, else its only ``ClassLabel`` column; an error names the columns."""
    import datasets

    if "label" in ds.column_names:
        return "label"
    class_cols = [c for c, f in ds.features.items() if isinstance(f, datasets.ClassLabel)]
    if len(class_cols) == 1:
        return class_cols[0]
    raise HetbenchError(
        f"no label column: pass `label_col` (the data has columns: {', '.join(ds.column_names)})"
    )


def has_duplicates(column) -> bool:
    """Whether an Arrow column repeats a value (nulls count as one value).

    Integers are sorted with numpy (the copy is freed at once); other types are counted by Arrow's
    hash kernel.

    Examples
    --------
    >>> import pyarrow as pa
    >>> has_duplicates(pa.chunked_array([[3, 1], [2, 1]])), has_duplicates(pa.array(["a", "b", None]))
    (True, False)
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_integer(column.type) and column.null_count == 0:
        values = np.sort(column.to_numpy())
        return bool(np.any(values[1:] == values[:-1]))
    return pc.count_distinct(column, mode="all").as_py() != len(column)


def to_table(splits: dict, dataset: str, label_col: str | None, id_col: str | None, meta: dict[str, Any]) -> SampleTable:
    """The SampleTable of ``splits`` (``{split: datasets.Dataset}``) read from ``dataset``.

    Parameters
    ----------
    splits : dict
        The source's splits, in order (the first one's features name the classes).
    dataset : str
        The reference the rows came from (recorded in the manifest).
    label_col, id_col : str, optional
        Label column (default: :func:`guess_label_column`) and sample-id column (default:
        ``meta["id_col"]``, else none); both must be in every split, ids unique per split.
    meta : dict
        ``description``, ``license`` and ``id_col`` of a known source (defaults otherwise); ``origin``
        for a hetbench build (:mod:`hetbench.sources.lineage`).

    Returns
    -------
    SampleTable
    """
    import datasets

    if not splits or all(len(ds) == 0 for ds in splits.values()):
        raise HetbenchError(f"dataset '{dataset}' has no rows")
    first = next(iter(splits.values()))
    label_col = label_col or guess_label_column(first)
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
    if meta.get("origin"):  # a hetbench build as the source: the data set it was made from (sources.lineage)
        source["origin"] = meta["origin"]
    if meta.get("licence"):  # and the licence its maker gave it (hetbench.publish.licence)
        source["licence"] = meta["licence"]
    if meta.get("methods"):  # and what made it: the new card cites those papers too
        source["methods"] = meta["methods"]
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
        for split, ds in splits.items():
            if has_duplicates(arrow_column(ds, id_col)):
                raise HetbenchError(f"id column '{id_col}' has duplicate values in split '{split}'")
    return table
