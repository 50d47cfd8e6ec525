"""The sample table: how hetbench sees a source data set.

A :class:`SampleTable` keeps the source's splits as Hugging Face ``datasets.Dataset`` objects (so
images and every other column are streamed to the output untouched) and, beside them, the few
columns a partitioner needs as numpy arrays: class indices, sample ids, and any column asked for by
name. Columns are read through Arrow, never through ``np.array(ds[col])`` (which walks rows under
datasets >= 4 and costs about 10 s per million rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.hashing import canonical_json, sha256_of_arrays

if TYPE_CHECKING:  # pragma: no cover
    import datasets


def arrow_column(ds: "datasets.Dataset", name: str):
    """A column as a pyarrow ChunkedArray (respects an indices mapping; no row walk)."""
    if name not in ds.column_names:
        raise HetbenchError(f"column '{name}' not found; the data has columns: {', '.join(ds.column_names)}")
    return ds.with_format("arrow")[name]


def column_to_numpy(col) -> np.ndarray:
    """Arrow column -> numpy; strings become an object array, nulls become None / NaN."""
    import pyarrow as pa

    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col.to_numpy(zero_copy_only=False)


@dataclass
class SampleTable:
    """A source data set, split by split, with its labels decoded to class indices.

    Attributes:
        splits: split name -> ``datasets.Dataset`` (every source column, untouched).
        label_column: the column holding the class label.
        class_names: name of every class index.
        labels: split name -> int64 class index per row.
        id_column: the column holding sample ids, or None (then the id is the row index).
        source: how to load the source again (``{"dataset": ..., "label_col": ...}``): the
            manifest stores it so ``hetbench verify`` can rebuild the split.
        description: one line for the dataset card.
        license: licence of the source data, for the dataset card.
        skipped: rows dropped while reading the source, one ``{"split", "row", "file", "reason"}`` each (an
            image cell naming a file outside the source's folder, or one that cannot be read:
            :mod:`hetbench.sources.image_cells`); the report lists them.
        not_images: rows kept whose image cell holds bytes that are no image, one ``{"split", "row", "reason"}``
            each (:func:`hetbench.sources.image_cells.not_image_cells`); the report lists them in ``not_images``.
    """

    splits: dict[str, "datasets.Dataset"]
    label_column: str
    class_names: list[str]
    labels: dict[str, np.ndarray]
    id_column: str | None = None
    source: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    license: str = "other"
    skipped: list[dict[str, Any]] = field(default_factory=list)
    not_images: list[dict[str, Any]] = field(default_factory=list)
    _cache: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        """A summary, never the arrays: rows per split, classes, the label and id columns, the source.

        Examples
        --------
        >>> from hetbench.sources import load_table
        >>> load_table("builtin:digits")
        SampleTable(train: 1,797 rows; 10 classes; label 'label', id 'sample_id'; source 'builtin:digits')
        """
        rows = ", ".join(f"{s}: {self.num_rows(s):,} rows" for s in self.splits)
        ident = f", id '{self.id_column}'" if self.id_column else ""
        source = self.source.get("dataset") if isinstance(self.source, dict) else None
        return (f"SampleTable({rows}; {self.num_classes:,} classes; label '{self.label_column}'{ident}"
                + (f"; source '{source}'" if source else "") + ")")

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def split_names(self) -> list[str]:
        return list(self.splits)

    def num_rows(self, split: str) -> int:
        return int(self.labels[split].size)

    def copy(self) -> "SampleTable":
        """A copy whose split mapping and column cache are its own; the Arrow data are shared, not copied.

        A split built from a table adds derived columns (``cluster``, ``s2_cell``) to its own copy, so
        the caller's table stays as it was and can be partitioned again.

        Examples
        --------
        >>> from hetbench.sources import load_table
        >>> table = load_table("builtin:digits")
        >>> twin = table.copy()
        >>> twin.splits["train"] = twin.splits["train"].add_column("cluster", [0] * twin.num_rows("train"))
        >>> "cluster" in table.splits["train"].column_names, twin.fingerprint == table.fingerprint
        (False, True)
        """
        return replace(self, splits=dict(self.splits), labels=dict(self.labels), _cache=dict(self._cache))

    def column(self, split: str, name: str) -> np.ndarray:
        """One column of one split as numpy (cached)."""
        key = (split, name)
        if key not in self._cache:
            self._cache[key] = column_to_numpy(arrow_column(self.splits[split], name))
        return self._cache[key]

    def ids(self, split: str) -> np.ndarray:
        """Sample ids of a split: the id column if there is one, else the row index."""
        if self.id_column is None:
            return np.arange(self.num_rows(split), dtype=np.int64)
        return self.column(split, self.id_column)

    @property
    def fingerprint(self) -> str:
        """sha256 over what partitions depend on: splits, sizes, labels, ids and class names."""
        if "fingerprint" not in self._cache:
            arrays = []
            for split in sorted(self.splits):
                arrays.append(self.labels[split].astype(np.int64))
                if self.id_column is not None:
                    ids = self.ids(split)
                    if ids.dtype == object:
                        ids = np.frombuffer("\x1f".join(map(str, ids)).encode(), dtype=np.uint8)
                    arrays.append(np.asarray(ids))
            meta = canonical_json({"splits": sorted(self.splits), "classes": self.class_names})
            self._cache["fingerprint"] = sha256_of_arrays(*arrays, extra=meta)
        return self._cache["fingerprint"]


def encode_labels(
    raw: dict[str, np.ndarray], label_column: str, class_names: list[str] | None = None
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Class indices per split and the class names.

    ``class_names`` given (a ClassLabel feature): the raw values are already indices. Otherwise the
    sorted distinct values over all splits become the classes (ints sort numerically, strings
    lexically), so train and test share one label space.
    """
    for split, values in raw.items():
        if values.dtype.kind == "f":
            if np.isnan(values).any():
                raise HetbenchError(f"label column '{label_column}' has missing values in split '{split}'")
            raise HetbenchError(
                f"label column '{label_column}' holds floats; labels must be class ids (integers or strings)"
            )
        if values.dtype == object and any(v is None for v in values):
            raise HetbenchError(f"label column '{label_column}' has missing values in split '{split}'")
        if values.dtype.kind not in "iuUSObO":
            raise HetbenchError(f"label column '{label_column}' has unsupported type {values.dtype}")
    if class_names is not None:
        out = {s: v.astype(np.int64) for s, v in raw.items()}
        for s, v in out.items():
            if v.size and (v.min() < 0 or v.max() >= len(class_names)):
                raise HetbenchError(f"label column '{label_column}' has values outside its {len(class_names)} classes")
        return out, list(class_names)
    kinds = {v.dtype.kind for v in raw.values() if v.size}
    if kinds <= {"i", "u", "b"}:
        uniq = np.unique(np.concatenate([v.astype(np.int64) for v in raw.values()]))
        out = {s: np.searchsorted(uniq, v.astype(np.int64)).astype(np.int64) for s, v in raw.items()}
        return out, [str(int(u)) for u in uniq]
    as_str = {s: v.astype(str) for s, v in raw.items()}
    uniq = np.unique(np.concatenate(list(as_str.values())))
    out = {s: np.searchsorted(uniq, v).astype(np.int64) for s, v in as_str.items()}
    return out, [str(u) for u in uniq]
