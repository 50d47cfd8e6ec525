"""Image cells of a source that name a file instead of holding bytes, and images that do not decode.

A ``datasets.Image`` cell is a struct ``{bytes, path}``. Written by ``datasets`` from an image in memory it
holds the encoded bytes; a Parquet file written by hand (or by another tool) may hold only a ``path``,
which ``datasets`` would open wherever it points when the rows are published (``/etc/passwd``, a home
folder, another user's data) and embed in the train shard. hetbench reads such a cell only under the
roots rule of ``docs/output-contract.md``:

* a relative path is taken relative to the source's own folder (the folder named by ``--dataset``, or
  the folder of the one file it names); an absolute one must lie in that folder too, every symbolic link
  resolved (:func:`hetbench.roots.inside_root`);
* the file's bytes, checked to decode within hetbench's pixel bound, replace the path (the cell keeps
  only the file's base name), so the published shard never depends on a file outside the source;
* a cell that names a file outside the folder, a missing or unreadable file, or one of a hub data set
  (which has no folder of its own) drops its row: the row is counted and listed in the report's
  ``skipped`` entries (split, row, the file's base name and the reason) and the command goes on.

:func:`decode_problem` is the decode check every file a cell names passes, and, for a build that publishes
a corpus's stored bytes (``build real-devices --recipe fed-isic2019``: ``check_all``), every image of the
source (header within :data:`hetbench.image_limits.MAX_PIXELS` first, then the whole image decoded: a JPEG at
PIL's reduced draft scale, which still reads every entropy-coded byte): a corrupt, truncated or oversized
image is dropped and listed like a cell whose file is not read. ``partition`` publishes a cell that holds
bytes as the source holds it (it re-partitions, it does not re-encode; docs/output-contract.md says so), and
lists in the report's ``not_images`` every cell whose header is no image (:func:`not_image_rows`, header only:
tens of microseconds a cell); a command that reads the pixels stops at one that does not decode, naming its
row.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Iterator

import numpy as np

#: reasons a cell's row is dropped (the report's ``skipped`` entries)
OUTSIDE = "an image cell names a file outside the source's folder (not read)"
NO_FOLDER = "an image cell names a file, and a hub data set has no folder to read it from (not read)"
MISSING = "an image cell names a file that does not exist"


def decode_problem(data: bytes) -> str | None:
    """None when ``data`` decodes as an image within hetbench's pixel bound; else the reason, one line.

    Parameters
    ----------
    data : bytes
        An encoded image (PNG, JPEG, ...).

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from hetbench.sources.image_cells import decode_problem
    >>> buf = io.BytesIO(); Image.new("RGB", (64, 48), (9, 80, 200)).save(buf, "JPEG")
    >>> decode_problem(buf.getvalue()) is None
    True
    >>> decode_problem(buf.getvalue()[:300])
    'unreadable image: Truncated File Read'
    >>> decode_problem(b"not an image")[:40]
    'unreadable image: cannot identify image '
    """
    return _image_problem(data, decode=True)


def header_problem(data: bytes) -> str | None:
    """None when ``data`` starts as an image PIL identifies, within hetbench's pixel bound; else the reason, one
    line. Only the header is read (tens of microseconds): what :func:`not_image_rows` lists.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from hetbench.sources.image_cells import header_problem
    >>> buf = io.BytesIO(); Image.new("RGB", (8, 8)).save(buf, "PNG")
    >>> header_problem(buf.getvalue()) is None, header_problem(b"a text cell")
    (True, 'unreadable image: cannot identify image file')
    """
    return _image_problem(data, decode=False)


def _image_problem(data: bytes, decode: bool) -> str | None:
    """The reason ``data`` is no image within the pixel bound (None: it is), its header alone or (``decode``)
    every byte of it read."""
    from PIL import Image, UnidentifiedImageError

    from hetbench.image_limits import ImageTooLarge, open_image

    try:
        with open_image(bytes(data), "image") as img:
            if decode:
                if img.format == "JPEG":  # every entropy-coded byte is still read; a fraction of the pixels stored
                    img.draft(img.mode, (max(1, img.width // 8), max(1, img.height // 8)))
                img.load()
        return None
    except ImageTooLarge as exc:
        return str(exc)
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "cannot identify image file" in reason:
            reason = "cannot identify image file"
        return f"unreadable image: {reason[:160]}"


def not_image_rows(ds: Any, skip: set[int] | frozenset[int] = frozenset(), batch: int = 4096) -> dict[int, str]:
    """Row -> reason of every image cell of ``ds`` holding bytes whose header is not an image
    (:func:`header_problem`), the rows of ``skip`` left out: what ``partition`` publishes as the source holds it
    and lists in the report's ``not_images``. Null cells are not listed.

    Examples
    --------
    >>> import datasets, io
    >>> from PIL import Image
    >>> from hetbench.sources.image_cells import not_image_rows
    >>> buf = io.BytesIO(); Image.new("RGB", (8, 8)).save(buf, "PNG")
    >>> cells = [{"bytes": buf.getvalue(), "path": None}, {"bytes": b"junk", "path": None}]
    >>> ds = datasets.Dataset.from_dict({"image": cells}, features=datasets.Features({"image": datasets.Image()}))
    >>> not_image_rows(ds)
    {1: 'unreadable image: cannot identify image file'}
    """
    import pyarrow.compute as pc

    bad: dict[int, str] = {}
    col = ds.with_format("arrow")
    for column in image_columns(ds):
        for start in range(0, ds.num_rows, batch):
            cells = pc.struct_field(col[start:start + batch][column], "bytes").to_pylist()
            for k, cell in enumerate(cells):
                row = start + k
                if cell and row not in bad and row not in skip and (reason := header_problem(cell)) is not None:
                    bad[row] = reason
    return dict(sorted(bad.items()))


def image_columns(ds: Any) -> list[str]:
    """The top-level ``datasets.Image`` columns of ``ds``, in column order."""
    return [name for name, f in ds.features.items() if type(f).__name__ == "Image"]


def _path_only_rows(ds: Any, column: str):
    """Row indices whose cell has a path and no bytes (numpy int64)."""
    import pyarrow.compute as pc

    col = ds.data.table.column(column)
    if col.num_chunks == 0 or col.null_count == len(col):
        return np.zeros(0, dtype=np.int64)
    no_bytes = pc.and_(pc.is_valid(col), pc.is_null(pc.struct_field(col, "bytes")))
    return np.flatnonzero(np.asarray(no_bytes.to_numpy(zero_copy_only=False), dtype=bool)).astype(np.int64)


def read_cell_file(path: str, root: Path | None) -> tuple[bytes | None, str | None]:
    """The bytes of the file an image cell names, or the reason it is not read (the module's rules).

    Parameters
    ----------
    path : str
        The cell's ``path``.
    root : Path, optional
        The source's folder; None for a hub data set.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.sources.image_cells import read_cell_file
    >>> root = Path("cells_example"); root.mkdir()
    >>> read_cell_file("/etc/hostname", root)
    (None, "an image cell names a file outside the source's folder (not read)")
    >>> read_cell_file("gone.png", root)
    (None, 'an image cell names a file that does not exist')
    """
    from hetbench.roots import inside_root

    if root is None:
        return None, NO_FOLDER
    candidate = Path(path).expanduser()
    candidate = candidate if candidate.is_absolute() else root / candidate
    if not inside_root(candidate, root):
        return None, OUTSIDE
    if not candidate.is_file():
        return None, MISSING
    try:
        data = candidate.read_bytes()
    except OSError as exc:
        return None, f"unreadable image: {exc.strerror or type(exc).__name__}"
    problem = decode_problem(data)
    return (None, problem) if problem else (data, None)


def resolve_image_cells(splits: dict[str, Any], root: str | os.PathLike | None, num_proc: int | None = None,
                        check_all: bool = False) -> tuple[dict[str, Any], list[dict], list[dict]]:
    """``splits`` with every path-only image cell replaced by its file's bytes (module rules) and, with
    ``check_all``, every other image checked to decode (:func:`undecodable_rows`); the rows whose file is not
    read, or whose image does not decode, dropped; those rows, for the report's ``skipped``; and, without
    ``check_all``, the kept rows whose cell holds bytes that are no image (:func:`not_image_rows`), for the
    report's ``not_images``.

    Parameters
    ----------
    splits : dict
        ``{split: datasets.Dataset}`` as read from the source.
    root : path, optional
        The source's folder (a file source: its folder); None for a hub data set.
    num_proc : int, optional
        Processes that decode (default: the cores this process may use, for sources of over
        :data:`PARALLEL_FROM` images; one below).
    check_all : bool
        Decode-check the cells that hold bytes too (a build that publishes stored bytes: fed-isic2019);
        without it they are published as the source holds them (those whose header is no image listed), and a
        command that reads their pixels stops at one that does not decode, naming its row.

    Returns
    -------
    (dict, list of dict, list of dict)
        The splits (a split whose every cell holds decodable bytes is returned as it was), one
        ``{"split", "row", "file", "reason"}`` per dropped row (``row``: its index in the source's split;
        ``file``: the named file's base name, or None for a cell that held bytes), and one
        ``{"split", "row", "reason"}`` per kept row whose cell is no image (empty with ``check_all``).

    Examples
    --------
    >>> import datasets, io
    >>> from pathlib import Path
    >>> from PIL import Image
    >>> from hetbench.sources.image_cells import resolve_image_cells
    >>> root = Path("resolve_example"); root.mkdir()
    >>> Image.new("RGB", (4, 4)).save(root / "a.png")
    >>> cells = [{"bytes": None, "path": "a.png"}, {"bytes": None, "path": "/etc/hostname"}, {"bytes": b"?", "path": None}]
    >>> ds = datasets.Dataset.from_dict({"image": cells, "label": [0, 1, 2]}, features=datasets.Features(
    ...     {"image": datasets.Image(), "label": datasets.Value("int64")}))
    >>> out, skipped, _ = resolve_image_cells({"train": ds}, root, check_all=True)
    >>> out["train"]["label"][:], out["train"].with_format("arrow")["image"][0]["path"].as_py()
    ([0], 'a.png')
    >>> [(s["row"], s["file"], s["reason"][:30]) for s in skipped]
    [(1, 'hostname', 'an image cell names a file out'), (2, None, 'unreadable image: cannot ident')]
    >>> _, _, kept = resolve_image_cells({"train": ds}, root)  # partition: the bytes kept, and listed
    >>> [(k["row"], k["reason"]) for k in kept]
    [(2, 'unreadable image: cannot identify image file')]
    """
    from hetbench.roots import real_root

    base = None if root is None else real_root(root)
    total = sum(ds.num_rows for ds in splits.values() if image_columns(ds))
    if num_proc is None:
        from hetbench.cores import available_cores

        num_proc = available_cores() if total > PARALLEL_FROM else 1
    out, skipped, not_images = {}, [], []
    for split, ds in splits.items():
        columns = image_columns(ds)
        if not columns:
            out[split] = ds
            continue
        drop: dict[int, dict] = {}
        read_rows: set[int] = set()
        for column in columns:
            ds, read = _read_named_files(ds, column, base, drop)
            read_rows |= read
            if check_all:
                for row, reason in undecodable_rows(ds, column, num_proc, skip=read | set(drop)):
                    drop.setdefault(row, {"row": row, "file": None, "reason": reason})
        if not check_all:  # kept as the source holds them; the cells that are no image are listed
            kept_bad = not_image_rows(ds, skip=read_rows | set(drop))
            not_images += [{"split": split, "row": row, "reason": reason} for row, reason in kept_bad.items()]
        if drop:
            keep = np.ones(ds.num_rows, dtype=bool)
            keep[list(drop)] = False
            ds = ds.select(np.flatnonzero(keep).tolist()).flatten_indices()
        out[split] = ds
        skipped += [{"split": split, **drop[row]} for row in sorted(drop)]
    return out, skipped, not_images


#: sources with more images than this are decode-checked on every core (fewer: in this process)
PARALLEL_FROM = 2000


def _read_named_files(ds: Any, column: str, root: Path | None, drop: dict[int, dict]) -> tuple[Any, set[int]]:
    """``ds`` with the path-only cells of ``column`` holding their files' bytes (a file that is not read: its row
    entered in ``drop``); and the rows read (already decode-checked)."""
    import datasets
    import pyarrow as pa

    rows = _path_only_rows(ds, column)
    if rows.size == 0:
        return ds, set()
    table = ds.data.table
    col = table.column(column).combine_chunks()
    data = col.field("bytes").to_pylist()
    paths = col.field("path").to_pylist()
    digest, read = hashlib.sha256(), set()
    for i in rows.tolist():
        payload, reason = read_cell_file(paths[i], root)
        if reason:
            drop.setdefault(i, {"row": i, "file": os.path.basename(str(paths[i])), "reason": reason})
            continue
        data[i], paths[i] = payload, os.path.basename(str(paths[i]))
        digest.update(hashlib.sha256(payload).digest())
        read.add(i)
    fixed = pa.StructArray.from_arrays([pa.array(data, type=col.type.field("bytes").type),
                                        pa.array(paths, type=col.type.field("path").type)],
                                       fields=[col.type.field("bytes"), col.type.field("path")], mask=col.is_null())
    new_table = table.set_column(table.column_names.index(column), column, fixed)
    fingerprint = hashlib.sha256(f"{ds._fingerprint}|{column}|{digest.hexdigest()}".encode()).hexdigest()
    return datasets.Dataset(datasets.table.InMemoryTable(new_table), info=ds.info.copy(),
                            fingerprint=fingerprint[:16]), read


def undecodable_rows(ds: Any, column: str, num_proc: int = 1, quiet: bool | None = None, batch: int = 256,
                     skip: set[int] | frozenset[int] = frozenset()) -> Iterator[tuple[int, str]]:
    """``(row, reason)`` of every image of ``ds[column]`` that :func:`decode_problem` refuses, decoding ``batch``
    cells at a time on ``num_proc`` worker processes, with a progress bar. Null cells, cells without bytes and
    the rows of ``skip`` are not checked.

    Parameters
    ----------
    ds : datasets.Dataset
        Rows whose image cells hold bytes (:func:`resolve_image_cells` has run).
    column : str
        The image column.
    num_proc, quiet, batch
        Worker processes; no progress bar (None: as the enclosing :func:`hetbench.progress.show_progress`);
        cells in memory at once per step.
    skip : set of int
        Rows not to check (already checked).

    Examples
    --------
    >>> import datasets, io
    >>> from PIL import Image
    >>> from hetbench.sources.image_cells import undecodable_rows
    >>> buf = io.BytesIO(); Image.new("RGB", (8, 8)).save(buf, "PNG")
    >>> cells = [{"bytes": buf.getvalue(), "path": None}, {"bytes": b"junk", "path": None}]
    >>> ds = datasets.Dataset.from_dict({"image": cells}, features=datasets.Features({"image": datasets.Image()}))
    >>> [(row, reason[:17]) for row, reason in undecodable_rows(ds, "image")]
    [(1, 'unreadable image:')]
    """
    import pyarrow.compute as pc

    from hetbench.engines import open_engine
    from hetbench.progress import progress_bar

    col = ds.with_format("arrow")
    n = ds.num_rows
    with progress_bar(f"checking {n:,} images decode", n, quiet) as bar, \
            open_engine(None, num_proc, n, preload=("hetbench.sources.image_cells", "PIL.Image"), quiet=True) as pool:
        for start in range(0, n, batch):
            cells = pc.struct_field(col[start:start + batch][column], "bytes").to_pylist()
            todo = [k for k, c in enumerate(cells) if c and start + k not in skip]
            problems = pool.map(decode_problem, [cells[k] for k in todo]) if todo else ()
            for k, reason in zip(todo, problems):
                if reason:
                    yield start + k, reason
            bar.update(len(cells))


__all__ = ["MISSING", "NO_FOLDER", "OUTSIDE", "PARALLEL_FROM", "decode_problem", "image_columns", "read_cell_file",
           "resolve_image_cells", "undecodable_rows",
           "header_problem", "not_image_rows"]
