"""``hetbench build geo`` and ``hetbench build users``: where people are and who they are.

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


def _with_images(table, image_root: str | None, image_col: str | None):
    """The table and its skipped image rows (None without ``image_root``)."""
    if not image_root:
        return table, None
    return table, attach_images(table, image_root, image_col or table.id_column or "image_path")


def _check_columns(table, columns: dict[str, str]) -> None:
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
    table, skipped = _with_images(load_table(metadata or EMBEDDED, params["label_col"], params["id_col"]), image_root, image_col)
    _check_columns(table, {"`lat_col`": lat_col, "`lon_col`": lon_col})

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


def prepare_users(
    metadata: str | None = None,
    user_col: str | None = None,
    label_col: str | None = None,
    id_col: str | None = None,
    filters: str | None = None,
    min_samples: int = 1,
    test_split: str | None = None,
    test_fraction: float = 0.1,
    seed: int = 0,
    image_root: str | None = None,
    image_col: str | None = None,
    thresholds: dict[str, int] | None = None,
    recipe: str | None = None,
    mode: str | None = None,
) -> PreparedSplit:
    """One client per user after the published filters; the split, not yet published.

    Parameters
    ----------
    metadata : str, optional
        A table with a user column (default: the generated ``builtin:observations``).
    user_col, label_col, id_col : str, optional
        Its columns (default user column: ``observer`` for the generated table, else ``user_id``).
    filters : {"landmarks", "inaturalist", "none"}
        Landmarks-User-160k's class and user thresholds to a fixed point, iNaturalist-User-120k's
        class balancing, or none (default: landmarks).
    min_samples : int
        Drop users with fewer training rows (after the per-user hold-out of --test-split client).
    test_split, test_fraction
        The test policy; default: by user (``natural``) when every split has users, a shared test
        set when the test file has none, and held-out users (``heldout``) for a single split.
    thresholds : dict, optional
        Overrides of the filter thresholds.
    recipe, mode : str, optional
        A canonical recipe (``landmarks-user-160k``, ``inaturalist-user-120k``) and its mode
        (``import`` the published split files, or ``rebuild`` from raw metadata).
    Others
        As for :func:`prepare_geo`.

    References
    ----------
    Hsu, Qi and Brown, ECCV 2020, sec. 4.2 and Table 1 (Landmarks-User-160k, iNaturalist-User-120k).

    Examples
    --------
    >>> from hetbench.builders.geo import prepare_users
    >>> prepared = prepare_users()
    >>> prepared.test_split, prepared.build().num_clients > 10
    ('heldout', True)
    """
    from hetbench.partitioners.users import UsersPartitioner
    from hetbench.sources import load_table

    params = {"user_col": user_col, "label_col": label_col, "id_col": id_col, "filters": filters, "test_split": test_split}
    published = resolve_recipe(recipe, "users", mode, metadata, params)
    filters = params["filters"] or "landmarks"
    user_col = params["user_col"] or ("observer" if metadata is None else "user_id")
    table, skipped = _with_images(load_table(metadata or EMBEDDED, params["label_col"], params["id_col"]), image_root, image_col)
    _check_columns(table, {"`user_col`": user_col})
    test_split = params["test_split"]
    if test_split is None:
        # a published test file without users (Landmarks' test.csv) is a shared test set of unseen users
        others_have_users = all(user_col in table.splits[s].column_names for s in table.split_names if s != "train")
        test_split = ("natural" if others_have_users else "global") if len(table.split_names) > 1 else "heldout"
    # min_samples counts training rows: under the client policy, the rows each user keeps after its hold-out
    partitioner = UsersPartitioner(column=user_col, filters=filters, min_samples=min_samples, **(thresholds or {}),
                                   holdout_fraction=test_fraction if test_split == "client" else None)

    def extras(fs: FederatedSplit):  # user_id: UsersPartitioner.derive_columns
        train_labels = fs.labels("train")
        users = {
            "filters": filters,
            "users": fs.num_clients,
            "classes_in_train": int(np.unique(train_labels).size),
            "train_images": int(train_labels.size),
            "test_images": int(len(fs.outputs["test"])) if "test" in fs.outputs else 0,
            "heldout_users": len(fs.partition.recipe.get("heldout_clients", [])),
            "published": PUBLISHED["landmarks-user-160k" if filters == "landmarks" else "inaturalist-user-120k"],
        }
        if published:
            users["published"] = published
        return {"users": users, **skipped_report(fs, skipped)}, map_plot_writer(fs, f"{fs.num_clients} users", False)

    return PreparedSplit(table, partitioner, seed, test_split, test_fraction, extras)


def _publish(prepared_of: Callable[..., PreparedSplit], tag: Callable[[dict], str], out, name, overwrite, quiet, params):
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

    return _publish(prepare_geo, tag, out, name, overwrite, quiet, params)


def build_users(
    out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    recipe: str | None = None, mode: str | None = None, metadata: str | None = None, user_col: str | None = None,
    label_col: str | None = None, id_col: str | None = None, filters: str | None = None, min_samples: int = 1,
    test_split: str | None = None, test_fraction: float = 0.1, seed: int = 0, image_root: str | None = None,
    image_col: str | None = None, thresholds: dict[str, int] | None = None,
) -> tuple[Path, dict[str, Any]]:
    """One client per user after the published per-user filters, published (``hetbench build users``);
    returns the folder and its report.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/<recipe>``, or ``hetbench_splits/users-<input>-<filters>-s<seed>``,
        ``<input>`` as for :func:`build_geo`).
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False).
    quiet : bool
        No progress bar (default False).
    recipe : {"landmarks-user-160k", "inaturalist-user-120k"}, optional
        A canonical recipe (``manifests/recipes``); default None.
    mode : {"import", "rebuild"}, optional
        With ``recipe``: import the published split files, or rebuild from raw metadata (default None: import).
    metadata : str, optional
        A table with a user column (default None: the generated ``builtin:observations``).
    user_col : str, optional
        Its user column (default None: ``observer`` for the generated table, else ``user_id``).
    label_col, id_col : str, optional
        Its label and sample-id columns, as for :func:`build_geo`.
    filters : {"landmarks", "inaturalist", "none"}, optional
        ``landmarks``: classes with >= 30 images and 10 users, users with >= 30 images and 5 classes, to a
        fixed point (Landmarks-User-160k); ``inaturalist``: classes with >= 100 training images,
        subsampled to 100 (iNaturalist-User-120k); ``none``. Default None: ``landmarks``.
    min_samples : int
        Drop users with fewer training rows, counted after the per-user hold-out of ``test_split="client"`` (default 1).
    test_split : {"global", "client", "natural", "heldout"}, optional
        The test policy; default None: by user (``natural``) when every split has users, a shared test
        set when the test file has none, held-out users (``heldout``) for a single split.
    test_fraction : float
        With ``heldout``: the share of users held out (default 0.1).
    seed : int
        Seed of every random choice (default 0).
    image_root, image_col : str, optional
        Attach image files, as for :func:`build_geo`.
    thresholds : dict, optional
        Overrides of the filters' thresholds (:class:`hetbench.partitioners.users.UsersPartitioner`); not
        a CLI option.

    Returns
    -------
    folder : pathlib.Path
        The published folder.
    report : dict
        Its ``report.json`` (``users``: the filters, users, classes and images, beside the published ones).

    References
    ----------
    Hsu, Qi and Brown, ECCV 2020, sec. 4.2 and Table 1 (Landmarks-User-160k, iNaturalist-User-120k).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.builders.geo import build_users
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder, report = build_users(Path(tmp.name) / "users", quiet=True)
    >>> report["users"]["filters"], report["users"]["users"] == report["num_clients"] > 10
    ('landmarks', True)
    >>> tmp.cleanup()
    """
    params = dict(recipe=recipe, mode=mode, metadata=metadata, user_col=user_col, label_col=label_col, id_col=id_col,
                  filters=filters, min_samples=min_samples, test_split=test_split, test_fraction=test_fraction,
                  seed=seed, image_root=image_root, image_col=image_col, thresholds=thresholds)

    def tag(p: dict) -> str:
        slug = input_slug(p.get("metadata"), "observations")
        return p.get("recipe") or f"users-{slug}-{p.get('filters') or 'landmarks'}-s{p.get('seed', 0)}"

    return _publish(prepare_users, tag, out, name, overwrite, quiet, params)
