"""Columns a partitioner derives from its split (:meth:`hetbench.partitioners.base.Partitioner.derive_columns`):
a value per row from its client, renamed columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from hetbench.splits import FederatedSplit


def values_per_row(fs: FederatedSplit, split: str, values_of_client: Sequence[Any], default: Any = None) -> list:
    """A value per row of a source split from its output client ids (``default`` where no client holds it).

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> fs = build_split(load_table("builtin:digits"), IIDPartitioner(2), test_split="client")
    >>> sorted(set(values_per_row(fs, "train", ["a", "b"])))
    ['a', 'b']
    """
    out = [default] * fs.table.num_rows(split)
    for rows in fs.outputs.values():
        if rows.source_split != split:
            continue
        for r, c in zip(rows.rows.tolist(), rows.client_ids.tolist()):
            if c >= 0:
                out[r] = values_of_client[c]
    return out


def rename_columns(fs: FederatedSplit, mapping: dict[str, str]) -> None:
    """Rename columns of every split of ``fs.table`` (a column is left alone where the new name is taken).

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> fs = build_split(load_table("builtin:digits"), IIDPartitioner(2))
    >>> rename_columns(fs, {"image": "picture"})
    >>> "picture" in fs.table.splits["train"].column_names
    True
    """
    for split, ds in list(fs.table.splits.items()):
        m = {a: b for a, b in mapping.items() if a in ds.column_names and a != b and b not in ds.column_names}
        if m:
            fs.table.splits[split] = ds.rename_columns(m)
