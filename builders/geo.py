"""``hetbench build geo`` (and what ``hetbench build users``, :mod:`hetbench.builders.users`, shares with it):
where people are and who they are.

* geo: adaptive S2 cells (Hsu et al. 2020 sec. 4.1; :class:`~hetbench.partitioners.geo_s2.GeoS2Partitioner`),
  one client per cell, client name = S2 token; output columns ``s2_cell``, ``lat``, ``lon``.
* users: one client per user after the published filters (Landmarks-User-160k, iNaturalist class
  balancing, or none; :class:`~hetbench.partitioners.users.UsersPartitioner`); output
  column ``user_id``. With a single-split source the test split is user-disjoint (``heldout``).

Both work on metadata alone (ids, labels, coordinates, users); ``--image-root`` attaches images.
The embedded default is a generated observation table (``builtin:observations``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hetbench.builders.geo_images import attach_images, skipped_report
from hetbench.errors import HetbenchError
from hetbench.naming import SPLITS_ROOT, input_slug
from hetbench.pipeline import PreparedSplit
from hetbench.report.geo_map import map_plot_writer
from hetbench.splits import FederatedSplit

EMBEDDED = "builtin:observations"

#: published statistics set beside ours in the report (TFF and Hsu et al. 2020)
PUBLISHED = {
    "inaturalist-geo": {"nmax_to_clients": {100: 3607, 300: 1209, 1000: 369, 3000: 136, 10000: 39, 30000: 12}},
    "inaturalist-user-120k": {"users": 9275, "classes": 1203, "train_images": 120300},
    "landmarks-user-160k": {"users": 1262, "classes": 2028, "train_images": 164172, "test_images": 19526},
}


def with_images(table, image_root: str | None, image_col: str | None):
    """The table and its skipped image rows (None without ``image_root``)."""
    if not image_root:
        return table, None
    return table, attach_images(table, image_root, image_col or table.id_column or "image_path")


def check_columns(table, columns: dict[str, str]) -> None:
    """Every named column is in the training split (bad input, before any output folder is touched)."""
    have = table.splits["train"].column_names if "train" in table.splits else []
    for flag, col in columns.items():
        if col not in have:
            raise HetbenchError(f"{flag} '{col}' is not a column of the metadata (columns: {', '.join(have)})")


def _check_sizes(nmax: Any, nmin: Any) -> None:
    for flag, value, least in (("`nmax`", nmax, 1), ("`nmin`", nmin, 0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            kind = "a positive" if least else "a non-negative"
            raise HetbenchError(f"{flag} must be {kind} integer (got {value!r})")


def resolve_recipe(recipe: str | None, builder: str, mode: str | None, metadata: str | None, params: dict[str, Any]) -> dict[str, Any] | None:
    """Fill ``params`` (in place; explicit values win) from a canonical recipe's columns and settings;
    returns the recipe's published statistics (None without a recipe)."""
    if not recipe:
        return None
    from hetbench.errors import HetbenchError
    from hetbench.publish.recipes import recipe_mode

    spec, settings = recipe_mode(recipe, builder, mode)
    if metadata is None:
        need = spec["rebuild"].get("columns") if builder == "geo" else settings.get("inputs", "the public metadata table")
        raise HetbenchError(f"`recipe` {recipe} needs `metadata`: {need} from the public files" if builder == "geo"
                            else f"`recipe` {recipe} needs `metadata`, e.g. \"{need}\"")
    cols = settings.get("columns", {})
    names = {"lat": "lat_col", "lon": "lon_col", "label": "label_col", "id": "id_col", "user": "user_col"}
    for key, param in names.items():
        if key in cols and params.get(param) is None:
            params[param] = cols[key]
    for key in ("nmax", "filters", "test_split"):
        if key in settings and params.get(key) is None:
            params[key] = settings[key]
    return dict(spec["published"], recipe=recipe) if spec.get("published") else None


def prepare_geo(
    metadata: str | None = None,
    lat_col: str | None = None,
    lon_col: str | None = None,
    label_col: str | None = None,
    id_col: str | None = None,
    nmax: int | None = None,
    nmin: int | None = None,
    test_split: str | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    image_root: str | None = None,
    image_col: str | None = None,
    recipe: str | None = None,
) -> PreparedSplit:
    """Adaptive-S2 clients of a geo-tagged table; the split, not yet published.

    Parameters
    ----------
    metadata : str, optional
        A CSV / parquet / ``save_to_disk`` table (default: the generated ``builtin:observations``).
    lat_col, lon_col, label_col, id_col : str, optional
        Its columns (default: ``latitude``, ``longitude``, the label column, row numbers).
    nmax, nmin : int, optional
        Split S2 cells holding more than ``nmax`` examples (default 3000); drop cells with fewer
        than ``nmin`` (default ``0.01 * nmax``).
    test_split, test_fraction
        The test policy (:func:`hetbench.splits.build_split`).
    seed : int
        Seed of every random choice.
    image_root, image_col : str, optional
        Attach image files under ``image_root`` named by ``image_col``.
    recipe : str, optional
        A canonical recipe (``inaturalist-geo-3k``, ...; ``manifests/recipes``) whose columns and
        parameters fill the ones not given.

    References
    ----------
    Hsu, Qi and Brown, "Federated Visual Classification with Real-World Data Distribution", ECCV
    2020, sec. 4.1 (iNaturalist-Geo: adaptive S2 cells with at most Nmax examples).

    Examples
    --------
    >>> from hetbench.builders.geo import prepare_geo
    >>> split = prepare_geo(nmax=1000).build()
    >>> split.client_names[0][:2], split.num_clients > 5
    ('0c', True)
    """
    from hetbench.partitioners.geo_s2 import GeoS2Partitioner
    from hetbench.sources import load_table

    params = {"lat_col": lat_col, "lon_col": lon_col, "label_col": label_col, "id_col": id_col, "nmax": nmax, "test_split": test_split}
    published = resolve_recipe(recipe, "geo", "rebuild", metadata, params)
    lat_col, lon_col = params["lat_col"] or "latitude", params["lon_col"] or "longitude"
    _check_sizes(params["nmax"], nmin)
    nmax = 3000 if params["nmax"] is None else params["nmax"]
    partitioner = GeoS2Partitioner(lat_col=lat_col, lon_col=lon_col, nmax=nmax, nmin=nmin)
    table, skipped = with_images(load_table(metadata or EMBEDDED, params["label_col"], params["id_col"]), image_root, image_col)
    check_columns(table, {"`lat_col`": lat_col, "`lon_col`": lon_col})

    def extras(fs: FederatedSplit):  # s2_cell, lat and lon: GeoS2Partitioner.derive_columns
        from hetbench import s2

        levels = [int(s2.level(np.array([s2.from_token(t)], dtype=np.uint64))[0]) for t in fs.client_names]
        geo = {
            "nmax": partitioner.nmax,
            "nmin": partitioner.nmin,
            "cells": fs.num_clients,
            "cell_levels": {str(lv): levels.count(lv) for lv in sorted(set(levels))},
            "published_inaturalist_geo_clients": PUBLISHED["inaturalist-geo"]["nmax_to_clients"],
        }
        if published:
            geo["published"] = published
        return {"geo": geo, **skipped_report(fs, skipped)}, map_plot_writer(fs, f"{fs.num_clients} S2 cells (Nmax {nmax})", True)

    return PreparedSplit(table, partitioner, seed, params["test_split"], test_fraction, extras)


def publish_prepared(prepared_of: Callable[..., PreparedSplit], tag: Callable[[dict], str], out, name, overwrite, quiet, params):
    from hetbench.atomic import locked_out
    from hetbench.outputs import input_paths

    prepared = prepared_of(**params)  # the input first: a bad input is reported before an existing folder
    with locked_out(Path(out) if out else SPLITS_ROOT / tag(params), overwrite, inputs=input_paths(params)) as out_path:
        _, report = prepared.publish(out_path, name=name or tag(params), overwrite=overwrite, quiet=quiet)
    return out_path, report


def build_geo(
    out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    recipe: str | None = None, metadata: str | None = None, lat_col: str | None = None, lon_col: str | None = None,
    label_col: str | None = None, id_col: str | None = None, nmax: int | None = None, nmin: int | None = None,
    test_split: str | None = None, test_fraction: float = 0.2, seed: int = 0, image_root: str | None = None,
    image_col: str | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Split a geo-tagged table into adaptive S2-cell clients and publish it (``hetbench build geo``);
    returns the folder and its report. One client per cell, named by its S2 token.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/<recipe>``, or ``hetbench_splits/geo-<input>-nmax<N>-s<seed>``
        where ``<input>`` is ``observations`` or the metadata's name and a short hash of its path).
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False).
    quiet : bool
        No progress bar (default False).
    recipe : str, optional
        A canonical recipe (``inaturalist-geo-3k``, ...; ``manifests/recipes``) whose columns and
        parameters fill the ones not given (default None).
    metadata : str, optional
        A CSV / parquet / ``save_to_disk`` table (default None: the generated ``builtin:observations``).
    lat_col, lon_col : str, optional
        Its latitude and longitude columns, in degrees (default None: ``latitude``, ``longitude``).
    label_col : str, optional
        Its label column (default None: ``species`` for the generated table, else ``label``).
    id_col : str, optional
        Its sample-id column, recorded in the manifest (default None: row numbers).
    nmax : int, optional
        Split S2 cells holding more than this many examples (default None: 3000; Hsu et al. publish
        100 to 30,000).
    nmin : int, optional
        Drop cells with fewer examples (default None: ``0.01 * nmax``).
    test_split : {"global", "client", "natural", "heldout"}, optional
        The test policy (:func:`hetbench.build_split`); default None: ``natural`` with a source test
        split, else ``client``.
    test_fraction : float
        Share of the rows held out when the policy makes a test split (default 0.2).
    seed : int
        Seed of every random choice (default 0).
    image_root : str, optional
        Attach images: files under this folder named by ``image_col`` (default None: metadata only).
    image_col : str, optional
        Column with image paths relative to ``image_root`` (default None: the id column).

    Returns
    -------
    folder : pathlib.Path
        The published folder.
    report : dict
        Its ``report.json`` (``geo``: cells, their S2 levels, the published client counts).

    References
    ----------
    Hsu, Qi and Brown, "Federated Visual Classification with Real-World Data Distribution", ECCV
    2020, sec. 4.1 (iNaturalist-Geo: adaptive S2 cells with at most Nmax examples).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.builders.geo import build_geo
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder, report = build_geo(Path(tmp.name) / "geo", nmax=1000, quiet=True)
    >>> report["geo"]["nmax"], report["geo"]["cells"] == report["num_clients"] > 5, (folder / "plots").is_dir()
    (1000, True, True)
    >>> tmp.cleanup()
    """
    params = dict(recipe=recipe, metadata=metadata, lat_col=lat_col, lon_col=lon_col, label_col=label_col, id_col=id_col,
                  nmax=nmax, nmin=nmin, test_split=test_split, test_fraction=test_fraction, seed=seed,
                  image_root=image_root, image_col=image_col)

    def tag(p: dict) -> str:
        _check_sizes(p.get("nmax"), p.get("nmin"))
        nmax = 3000 if p.get("nmax") is None else p["nmax"]
        return p.get("recipe") or f"geo-{input_slug(p.get('metadata'), 'observations')}-nmax{nmax}-s{p.get('seed', 0)}"

    return publish_prepared(prepare_geo, tag, out, name, overwrite, quiet, params)
