"""``column:NAME``: embeddings already in the data set, one fixed-length numeric vector per row."""

from __future__ import annotations

import numpy as np

from hetbench.errors import HetbenchError


def embed_column(table, split: str, arg: str) -> np.ndarray:
    """``column:NAME``: column ``NAME`` of ``split`` as an (n, d) float32 array.

    Parameters
    ----------
    table : SampleTable
        The source table.
    split : str
        The split to read.
    arg : str
        ``NAME``, a column holding one list of ``d`` numbers per row.

    Raises
    ------
    HetbenchError
        When the column is missing or its vectors differ in length.

    Examples
    --------
    >>> import datasets
    >>> from hetbench.embed import embed_table
    >>> from hetbench.sources import load_table
    >>> t = load_table(datasets.Dataset.from_dict({"label": [0, 1], "emb": [[1.0, 2.0], [3.0, 4.0]]}))
    >>> embed_table(t, "train", "column:emb").tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    ds = table.splits[split]
    n = len(ds)
    name = arg
    if name not in ds.column_names:
        raise HetbenchError(f"embedding column '{name}' not found (columns: {', '.join(ds.column_names)})")
    col = ds.with_format("arrow")[name].combine_chunks()
    try:
        values = np.asarray(col.to_pylist(), dtype=np.float32)
    except ValueError as exc:
        raise HetbenchError(f"column '{name}' does not hold one fixed-length vector per row") from exc
    if values.ndim != 2 or values.shape[0] != n:
        raise HetbenchError(f"column '{name}' does not hold one fixed-length vector per row (shape {values.shape})")
    return values
