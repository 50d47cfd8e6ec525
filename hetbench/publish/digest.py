"""Content digests: a sha256 per column over the rows of a split, in row order, however chunked.

Every column is hashed from its Arrow values in a canonical form, so the digest does not depend on
how the rows are cut into batches, row groups or shards, nor on the width of Arrow offsets
(``string`` and ``large_string`` hash alike), nor on dictionary encoding. A column value is split
into streams, each a sha256 fed in row order:

- ``valid``: one byte per row (1 valid, 0 null);
- fixed-width values (integers, floats, booleans as one byte, dates, times, decimals): the
  little-endian bytes of the valid values;
- binary and strings: ``len`` (int64 length of each valid value) and ``data`` (their bytes);
- lists: ``len`` per valid row, then the items as a child column (``<name>/item``);
- structs (an image is ``struct<bytes, path>``): each field as a child column (``<name>/<field>``);
- anything else: the valid values as canonical JSON, one per line.

Rows are hashed in blocks of :data:`BLOCK_ROWS` rows (row ``k`` is in block ``k // BLOCK_ROWS``): a
block's digest is the sha256 of its streams' digests, the column's digest the sha256 of its block
digests. Blocks let ``hetbench verify`` find the first differing rows without a second full pass.
The digest of a split is the sha256 of the canonical JSON of its column digests.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

import numpy as np

from hetbench.hashing import canonical_json

#: version of the scheme above, recorded in the manifest (``content_digest.version``)
DIGEST_VERSION = 1
BLOCK_ROWS = 4096


def _streams(name: str, typ) -> list[str]:
    """Names of the streams a column of Arrow type ``typ`` feeds (fixed by the type alone)."""
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        return _streams(name, typ.value_type)
    out = [f"{name}:valid"]
    if pa.types.is_struct(typ):
        for i in range(typ.num_fields):
            out += _streams(f"{name}/{typ.field(i).name}", typ.field(i).type)
    elif pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        out += [f"{name}:len", *_streams(f"{name}/item", typ.value_type)]
    elif _is_binary(typ):
        out += [f"{name}:len", f"{name}:data"]
    elif not pa.types.is_null(typ):
        out.append(f"{name}:data")
    return out


def _is_binary(typ) -> bool:
    import pyarrow as pa

    return any(f(typ) for f in (pa.types.is_binary, pa.types.is_string, pa.types.is_large_binary,
                                pa.types.is_large_string, pa.types.is_binary_view, pa.types.is_string_view))


def _feed(arr, name: str, hs: dict) -> None:
    """Feed one Arrow array (a slice of a column) into the streams ``hs`` under ``name``."""
    import pyarrow as pa

    typ = arr.type
    if pa.types.is_dictionary(typ):
        arr = arr.dictionary_decode()
        typ = arr.type
    n = len(arr)
    if arr.null_count:
        hs[f"{name}:valid"].update(np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.uint8).tobytes())
        values = arr.drop_null() if not pa.types.is_struct(typ) else arr
    else:
        hs[f"{name}:valid"].update(b"\x01" * n)
        values = arr
    if pa.types.is_null(typ):
        return
    if pa.types.is_struct(typ):
        # flatten() merges the struct's nulls into its fields, so a null row hashes as null fields
        for i, child in enumerate(values.flatten()):
            _feed(child, f"{name}/{typ.field(i).name}", hs)
    elif pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        import pyarrow.compute as pc

        lengths = pc.list_value_length(values).to_numpy(zero_copy_only=False).astype("<i8")
        hs[f"{name}:len"].update(lengths.tobytes())
        _feed(values.flatten(), f"{name}/item", hs)
    elif _is_binary(typ):
        if pa.types.is_binary_view(typ) or pa.types.is_string_view(typ):
            values = values.cast(pa.large_binary())
        wide = pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type)
        bufs = values.buffers()
        offsets = np.frombuffer(bufs[1], "<i8" if wide else "<i4")[values.offset : values.offset + len(values) + 1]
        hs[f"{name}:len"].update(np.diff(offsets).astype("<i8").tobytes())
        if len(values) and bufs[2] is not None:
            hs[f"{name}:data"].update(memoryview(bufs[2])[int(offsets[0]) : int(offsets[-1])])
    elif pa.types.is_boolean(typ):
        hs[f"{name}:data"].update(values.to_numpy(zero_copy_only=False).astype(np.uint8).tobytes())
    elif getattr(typ, "bit_width", 0) and typ.bit_width % 8 == 0 and len(values.buffers()) == 2:
        width = typ.bit_width // 8
        buf = values.buffers()[1]
        if buf is not None:
            hs[f"{name}:data"].update(memoryview(buf)[values.offset * width : (values.offset + len(values)) * width])
    else:  # rare types (maps, unions, ...): canonical JSON of each valid value
        text = "".join(json.dumps(v, sort_keys=True, default=str) + "\n" for v in values.to_pylist())
        hs[f"{name}:data"].update(text.encode())


class ColumnDigest:
    """Streaming digest of one column (module notes): feed its rows in order, in any chunks.

    Parameters
    ----------
    typ : pyarrow.DataType
        The column's Arrow type (fixes its streams).
    keep_blocks : bool
        Keep every block's digest (``blocks``), to find where two columns first differ.

    Examples
    --------
    >>> import pyarrow as pa
    >>> a, b = ColumnDigest(pa.string()), ColumnDigest(pa.large_string())
    >>> a.update(pa.array(["x", None, "yz"]))
    >>> b.update(pa.array(["x"], pa.large_string())); b.update(pa.array([None, "yz"], pa.large_string()))
    >>> a.hexdigest() == b.hexdigest()
    True
    """

    def __init__(self, typ, keep_blocks: bool = False) -> None:
        self._names = _streams("", typ)
        self._total = hashlib.sha256()
        self._block: dict[str, Any] | None = None
        self._filled = 0
        self.blocks: list[str] | None = [] if keep_blocks else None

    def _close_block(self) -> None:
        assert self._block is not None
        digest = hashlib.sha256("".join(f"{k}={h.hexdigest()};" for k, h in self._block.items()).encode()).digest()
        self._total.update(digest)
        if self.blocks is not None:
            self.blocks.append(digest.hex())
        self._block, self._filled = None, 0

    def update(self, column) -> None:
        """Feed the next rows (a pyarrow Array or ChunkedArray)."""
        import pyarrow as pa

        # one array per call: a gathered batch arrives as one chunk per row, and feeding chunk by
        # chunk would cost a Python call per row (the digest does not depend on chunking)
        chunks = [column.combine_chunks()] if isinstance(column, pa.ChunkedArray) else [column]
        for chunk in chunks:
            start = 0
            while start < len(chunk):
                if self._block is None:
                    self._block = {k: hashlib.sha256() for k in self._names}
                take = min(BLOCK_ROWS - self._filled, len(chunk) - start)
                _feed(chunk.slice(start, take), "", self._block)
                start += take
                self._filled += take
                if self._filled == BLOCK_ROWS:
                    self._close_block()

    def hexdigest(self) -> str:
        """The column's digest (closes the last, partial block; feed nothing after it)."""
        if self._block is not None:
            self._close_block()
        return self._total.hexdigest()


class SplitDigest:
    """Column digests of a split's rows, fed table by table in row order.

    Parameters
    ----------
    schema : pyarrow.Schema
        The columns (every one is hashed).
    keep_blocks : bool
        Keep per-block digests (:class:`ColumnDigest`).

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"label": [0, 1, 1], "img": [b"ab", b"c", b""]})
    >>> d = SplitDigest(t.schema)
    >>> d.update(t.slice(0, 2)); d.update(t.slice(2))
    >>> d.num_rows, sorted(d.columns()) == ["img", "label"]
    (3, True)
    """

    def __init__(self, schema, keep_blocks: bool = False) -> None:
        self._cols = {f.name: ColumnDigest(f.type, keep_blocks) for f in schema}
        self.num_rows = 0
        self._done: dict[str, str] | None = None

    def update(self, table) -> None:
        """Feed the next rows (a pyarrow Table or RecordBatch with the schema's columns)."""
        for name, col in self._cols.items():
            col.update(table.column(name))
        self.num_rows += table.num_rows

    def columns(self) -> dict[str, str]:
        """Column name -> sha256 hex digest."""
        if self._done is None:
            self._done = {name: col.hexdigest() for name, col in self._cols.items()}
        return dict(self._done)

    def blocks(self, name: str) -> list[str]:
        """Per-block digests of one column (``keep_blocks=True``)."""
        self.columns()
        return list(self._cols[name].blocks or [])


def split_digest(columns: dict[str, str]) -> str:
    """The digest of a split: sha256 of the canonical JSON of its column digests.

    Examples
    --------
    >>> len(split_digest({"label": "00"}))
    64
    """
    return hashlib.sha256(canonical_json(columns).encode()).hexdigest()


def first_differing_block(a: Iterable[str], b: Iterable[str]) -> int | None:
    """Index of the first block whose digests differ (or that one side lacks); None if all agree.

    Examples
    --------
    >>> first_differing_block(["a", "b", "c"], ["a", "x", "c"]), first_differing_block(["a"], ["a"])
    (1, None)
    """
    a, b = list(a), list(b)
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


class HashingSink:
    """A binary file that hashes what is written to it (the sha256 of a shard with no second read).

    Parameters
    ----------
    path : path
        The file to create.

    Examples
    --------
    >>> import hashlib
    >>> with HashingSink("sink-example.bin") as f:
    ...     _ = f.write(b"abc")
    >>> f.hexdigest() == hashlib.sha256(b"abc").hexdigest()
    True
    """

    def __init__(self, path) -> None:
        self._f = open(path, "wb")
        self._h = hashlib.sha256()

    def write(self, data) -> int:
        self._h.update(data)
        return self._f.write(data)

    def tell(self) -> int:
        return self._f.tell()

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    @property
    def closed(self) -> bool:
        return self._f.closed

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def __enter__(self) -> "HashingSink":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def hexdigest(self) -> str:
        """sha256 of every byte written so far."""
        return self._h.hexdigest()


def file_sha256(path, chunk: int = 1 << 20) -> str:
    """sha256 of a file, read in chunks.

    Examples
    --------
    >>> _ = open("sha-example.bin", "wb").write(b"abc")
    >>> file_sha256("sha-example.bin")[:8]
    'ba7816bf'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
