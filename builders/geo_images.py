"""Images named by a metadata table (``--image-root`` / ``--image-col`` of ``build geo`` / ``build users``).

Every path is resolved and must stay inside the root; every file is decoded once at build time.
Rows whose image is outside the root, missing, undecodable or over hetbench's pixel bound
(:data:`hetbench.image_limits.MAX_PIXELS`) are removed from the table, counted
among the dropped rows (``filtered``; ``missing-value`` for a missing file) and listed in the
report's ``skipped`` entries, as the device builds list their skipped captures.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hetbench.errors import HetbenchError

if TYPE_CHECKING:  # pragma: no cover
    from hetbench.splits import FederatedSplit

#: most skipped images listed by name in report.json (all are counted in ``num_skipped``)
MAX_LISTED_SKIPPED = 1000


def _image_problem(path: Path) -> str | None:
    """Why ``path`` cannot be attached (None when it decodes): missing, over hetbench's pixel bound
    (checked from its header before decoding, :mod:`hetbench.image_limits`), or undecodable."""
    from hetbench.image_limits import ImageTooLarge, open_image

    if not path.is_file():
        return "missing under --image-root"
    try:
        with open_image(path, "image") as im:
            im.load()
    except ImageTooLarge as exc:
        return str(exc)
    except Exception as exc:  # any decoder failure (truncated, not an image)
        return f"cannot be decoded as an image ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
    return None


def attach_images(table, image_root: str, path_col: str) -> list[dict[str, str]]:
    """Add an ``image`` column read from ``image_root/<path_col value>``; drop the rows whose image
    cannot be used.

    A path leaving the root (``../``, an absolute path, a link pointing out) is never followed; a
    missing file and one that does not decode (each file is decoded once, here) are skipped too.
    Their rows are removed from ``table`` and the build goes on. The bytes are embedded at publish
    time.

    Parameters
    ----------
    table : SampleTable
        The metadata table; changed in place.
    image_root : str
        The folder holding the images.
    path_col : str
        The column naming each row's image, relative to ``image_root``.

    Returns
    -------
    list of dict
        One ``{"file", "split", "reason", "drop"}`` per skipped row, in split and row order
        (``drop``: the :class:`~hetbench.partition.DropReason` label it is counted under).

    Raises
    ------
    HetbenchError
        If ``image_root`` is not a folder, or no row of a split has a usable image.

    Examples
    --------
    >>> import pathlib
    >>> from PIL import Image
    >>> import datasets
    >>> from hetbench.builders.geo_images import attach_images
    >>> from hetbench.sources import load_table
    >>> root = pathlib.Path("geo_images_example")
    >>> root.mkdir()
    >>> Image.new("RGB", (4, 4)).save(root / "a.png")
    >>> _ = (root / "b.png").write_bytes(b"not a png")
    >>> table = load_table(datasets.Dataset.from_dict({"file": ["a.png", "b.png", "../a.png"], "label": [0, 1, 0]}))
    >>> [(s["file"], s["drop"]) for s in attach_images(table, str(root), "file")]
    [('b.png', 'filtered'), ('../a.png', 'filtered')]
    >>> table.num_rows("train"), table.splits["train"].column_names
    (1, ['file', 'label', 'image'])
    """
    import datasets

    root = Path(image_root)
    if not root.is_dir():
        raise HetbenchError(f"`image_root` '{image_root}' is not a folder")
    root = root.resolve()
    skipped: list[dict[str, str]] = []
    checked: dict[Path, str | None] = {}
    for split, ds in list(table.splits.items()):
        rel = table.column(split, path_col)
        keep, paths = [], []
        for row, value in enumerate(rel.tolist()):
            name = "" if value is None or (isinstance(value, float) and value != value) else str(value)
            if not name:
                skipped.append({"file": name, "split": split, "reason": "no image named", "drop": "missing-value"})
                continue
            path = (root / name).resolve()
            if not path.is_relative_to(root):
                skipped.append({"file": name, "split": split, "reason": "outside --image-root", "drop": "filtered"})
                continue
            if path not in checked:
                checked[path] = _image_problem(path)
            if checked[path] is not None:
                drop = "missing-value" if checked[path].startswith("missing") else "filtered"
                skipped.append({"file": name, "split": split, "reason": checked[path], "drop": drop})
                continue
            keep.append(row)
            paths.append(str(path))
        if rel.size and not keep:
            raise HetbenchError(
                f"no image named by '{path_col}' in split '{split}' can be used under `image_root` "
                f"'{image_root}' (e.g. '{skipped[-1]['file']}': {skipped[-1]['reason']})"
            )
        if len(keep) < rel.size:  # through Arrow: no "Flattening the indices" progress bar
            from datasets.table import InMemoryTable

            rows = np.asarray(keep, dtype=np.int64)
            ds = datasets.Dataset(InMemoryTable(ds.with_format("arrow")[:].take(rows)), info=ds.info.copy(), split=ds.split)
            table.labels[split] = table.labels[split][rows]
        table.splits[split] = ds.add_column("image", paths).cast_column("image", datasets.Image())
    table._cache.clear()  # cached columns and the fingerprint describe the rows before the drop
    return skipped


def skipped_report(fs: "FederatedSplit", skipped: list[dict[str, str]] | None) -> dict[str, Any]:
    """Count the skipped image rows among ``fs``'s dropped rows; the report's ``skipped`` entries.

    Parameters
    ----------
    fs : FederatedSplit
        The split built from the table :func:`attach_images` changed; its ``dropped`` counts grow.
    skipped : list of dict or None
        What :func:`attach_images` returned (None: no images were attached).

    Returns
    -------
    dict
        ``{"skipped": [{"file", "split", "reason"}, ...], "num_skipped": n}`` (at most
        ``MAX_LISTED_SKIPPED`` listed), or ``{}`` for None.

    Examples
    --------
    >>> from hetbench.builders.geo_images import skipped_report
    >>> skipped_report(None, None)
    {}
    """
    if skipped is None:
        return {}
    for s in skipped:
        counts = fs.dropped.setdefault(s["split"], {})
        counts[s["drop"]] = counts.get(s["drop"], 0) + 1
    listed = [{"file": s["file"], "split": s["split"], "reason": s["reason"]} for s in skipped[:MAX_LISTED_SKIPPED]]
    return {"skipped": listed, "num_skipped": len(skipped)}
