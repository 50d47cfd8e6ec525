"""The plots every report has, and writing a report (:func:`write_report`: ``report.json``,
``report/clients.parquet``, the plots).

Every split gets the label distribution per client (:func:`plot_label_heatmap`, rows in
``client_id`` order with integer ``client_id`` ticks). A split whose clients belong to devices or
domains (:func:`hetbench.report.groups.client_groups`) gets per-device or per-domain plots
(:mod:`hetbench.report.groups`) instead of the size-rank curve and the EMD histogram, which say
little there. Any other split gets the size-rank curve (log-log when sizes span a factor of
:data:`LOG_SIZE_RATIO` or more, linear axes from zero otherwise, no plot when every client holds
the same number of rows) and the per-client EMD histogram.

With thousands of clients the plots sample or aggregate, so the time and memory of a report are
bounded by the client count (linear) and never by a picture of every client: the heatmap shows at
most :data:`MAX_HEATMAP_CLIENTS` clients picked evenly by size rank (its axis says so) and, with
more than :data:`MAX_HEATMAP_CLASSES` classes, sums adjacent classes into one column (its axis says
how many), the size-rank curve is drawn through at most :data:`MAX_CURVE_POINTS` log-spaced ranks,
and the histogram counts every client (on a log scale when bins differ a hundredfold).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from hetbench import metrics
from hetbench.plotting import pyplot
from hetbench.report.axes import MAX_HEATMAP_CLASSES, class_ticks, tick_rows
from hetbench.report.classes import CLASSES_FILE
from hetbench.report.metrics import CLIENTS_FILE, ClientStats

PLOTS = {
    "label_heatmap": "label_distribution_heatmap.png",
    "size_rank": "client_size_rank.png",
    "emd_hist": "emd_histogram.png",
}
MAX_HEATMAP_CLIENTS = 200
MAX_CURVE_POINTS = 2000
#: the size-rank plot is log-log when the largest client holds at least this many times the
#: smallest one's rows; below it a one-row difference would look like a cliff on log axes
LOG_SIZE_RATIO = 10.0


def sample_by_size_rank(sizes: np.ndarray, limit: int = MAX_HEATMAP_CLIENTS) -> np.ndarray:
    """At most ``limit`` client indices, evenly spaced over the clients sorted by size.

    Parameters
    ----------
    sizes : numpy.ndarray
        Rows per client.
    limit : int
        Most clients to return.

    Returns
    -------
    numpy.ndarray
        Client indices (all of them, in index order, when there are at most ``limit``), always
        including the smallest and the largest client.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.plots import sample_by_size_rank
    >>> sample_by_size_rank(np.array([5, 1, 9, 3, 7]), 3).tolist()
    [1, 0, 2]
    """
    sizes = np.asarray(sizes)
    if sizes.size <= limit:
        return np.arange(sizes.size)
    by_size = np.argsort(sizes, kind="stable")
    return by_size[np.unique(np.linspace(0, sizes.size - 1, limit).round().astype(np.int64))]


def size_scale(sizes: np.ndarray) -> str | None:
    """How the size-rank plot draws ``sizes``: ``"log"`` when the largest non-empty client holds
    at least :data:`LOG_SIZE_RATIO` times the smallest one's rows, ``"linear"`` when sizes vary
    less, None (no plot) when every non-empty client holds the same number of rows.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.plots import size_scale
    >>> size_scale(np.array([71, 72, 72])), size_scale(np.array([9, 742])), size_scale(np.array([40, 40, 0]))
    ('linear', 'log', None)
    """
    sizes = np.asarray(sizes)
    sizes = sizes[sizes > 0]
    if sizes.size == 0 or sizes.min() == sizes.max():
        return None
    return "log" if sizes.max() >= LOG_SIZE_RATIO * sizes.min() else "linear"


def _client_axis(ax, rows: np.ndarray, ids: np.ndarray, sampled: bool) -> None:
    """Integer ``client_id`` ticks on the y axis of a clients x something image."""
    pick = tick_rows(rows.size, ids if sampled else None)
    ax.set_yticks(pick)
    ax.set_yticklabels([str(int(ids[i])) for i in pick], fontsize=7 if rows.size > 20 else 8)


def plot_label_heatmap(report: Mapping[str, Any], clients: ClientStats, path: Path, title: str = "",
                       groups=None) -> None:
    """Share of each class in each client's samples, rows in ``client_id`` order (a sample of
    clients, still in id order, when there are many); device or domain blocks are marked."""
    from matplotlib.ticker import MaxNLocator

    plt = pyplot()
    shown = np.sort(sample_by_size_rank(clients.sizes))
    counts = clients.label_counts.to_dense(shown).astype(np.float64)
    n_classes = counts.shape[1]
    width = -(-n_classes // MAX_HEATMAP_CLASSES)  # classes per column: one-pixel cells would vanish
    if width > 1:
        counts = np.pad(counts, ((0, 0), (0, -n_classes % width))).reshape(counts.shape[0], -1, width).sum(axis=2)
    q, _, _ = metrics.client_distributions(counts)
    n_cl, n_c = q.shape
    total = clients.num_clients
    sampled = n_cl < total
    heat_inches = min(4.5 + 0.35 * n_c, 14)
    fig = plt.figure(figsize=(heat_inches + 1.4, min(2.2 + 0.2 * n_cl, 9)), dpi=110)
    inches = heat_inches - 1.5  # the heatmap's own width: the size panel about 1.2 inches, the colour bar 0.15
    grid = fig.add_gridspec(1, 3, width_ratios=[1.0, 1.2 / inches, 0.15 / inches])
    ax = fig.add_subplot(grid[0])
    size_ax = fig.add_subplot(grid[1], sharey=ax)
    size_ax.tick_params(axis="y", labelleft=False)
    extent = (-0.5, n_c * width - 0.5, n_cl - 0.5, -0.5)  # x in class indices, also when binned
    im = ax.imshow(q, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1, extent=extent)
    ax.set_xlabel(f"class index ({n_classes:,} classes, {width} per column)" if width > 1 else "class")
    ax.set_ylabel(f"client_id ({n_cl:,} of {total:,} clients, sampled evenly by size rank)" if sampled
                  else f"client_id ({n_cl} clients)")
    if n_c <= 40 and width == 1:
        class_ticks(ax, report["class_names"])
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _client_axis(ax, np.arange(n_cl), shown, sampled)
    _size_bars(size_ax, clients.sizes[shown])
    if groups is not None:
        _mark_groups(ax, size_ax, groups.of_client[shown], groups.names)
    fig.colorbar(im, cax=fig.add_subplot(grid[2]), label="share of the client's samples")
    default = f"Label distribution per client (EMD {report['emd']:.3f})"
    if sampled:
        default = (
            f"Label distribution of {n_cl:,} of {total:,} clients\n"
            f"(sampled evenly by size rank; EMD of all clients {report['emd']:.3f})"
        )
    ax.set_title(title or default, fontsize=10 if sampled else None)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _size_bars(ax, sizes: np.ndarray) -> None:
    """Each shown client's row count as a bar beside its heatmap row: shares alone hide that a
    client with one row and a client with a thousand look alike (log axis when sizes span
    :data:`LOG_SIZE_RATIO`)."""
    from matplotlib.ticker import MaxNLocator

    sizes = np.asarray(sizes, dtype=np.float64)
    scale = size_scale(sizes)
    floor = 0.8 if scale == "log" else 0.0  # log bars start just below one row
    ax.barh(np.arange(sizes.size), np.maximum(sizes - floor, 0), left=floor, height=0.8, color="0.45")
    if scale == "log":
        ax.set_xscale("log")
        ax.set_xlim(0.8, sizes.max() * 1.5)
    else:
        ax.set_xlim(0, max(sizes.max(), 1) * 1.08)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3, integer=True))
    ax.set_xlabel("rows" + (" (log)" if scale == "log" else ""), fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.tick_params(axis="y", left=False)
    ax.set_title(f"{int(sizes.min()):,}-{int(sizes.max()):,} rows" if sizes.min() != sizes.max()
                 else f"{int(sizes.max()):,} rows each", fontsize=8)


def _mark_groups(ax, size_ax, group_of_row: np.ndarray, names: list[str]) -> None:
    """White lines between blocks of rows of one device/domain (grey across the size panel
    ``size_ax``), and the group names on the right of the size panel."""
    change = np.flatnonzero(np.diff(group_of_row)) + 1
    for r in change:
        ax.axhline(r - 0.5, color="white", lw=1.2)
        size_ax.axhline(r - 0.5, color="0.75", lw=0.8)
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [group_of_row.size]])
    if starts.size > 40:
        return
    right = size_ax.secondary_yaxis("right")
    right.set_yticks((starts + ends - 1) / 2)
    right.set_yticklabels([names[group_of_row[s]] for s in starts], fontsize=7)
    right.tick_params(length=0)


def plot_size_rank(report: Mapping[str, Any], clients: ClientStats, path: Path, title: str = "") -> bool:
    """Client sizes against rank (Hsu et al. 2020, Fig. 2b/2c): log-log when sizes span a factor of
    :data:`LOG_SIZE_RATIO`, linear axes from zero otherwise; nothing (returns False) when every
    non-empty client holds the same number of rows."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    scale = size_scale(clients.sizes)
    if scale is None:
        return False
    plt = pyplot()
    sizes = np.sort(clients.sizes[clients.sizes > 0])[::-1].astype(np.float64)
    ranks = np.arange(1, sizes.size + 1)
    if sizes.size > MAX_CURVE_POINTS:  # the curve through log-spaced ranks (first and last kept)
        pick = np.unique(np.geomspace(1, sizes.size, MAX_CURVE_POINTS).round().astype(np.int64)) - 1
        ranks, sizes = ranks[pick], sizes[pick]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    marker = "." if sizes.size < 200 else None
    if scale == "log":
        ax.loglog(ranks, sizes, marker=marker, lw=1.5)
        _plain_log_ticks(ax.xaxis)
        _plain_log_ticks(ax.yaxis)
    else:
        ax.plot(ranks, sizes, marker=marker, lw=1.5)
        ax.set_ylim(0, sizes[0] * 1.12)
        ax.set_xlim(0.5 if sizes.size > 1 else 0, ranks[-1] + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("client rank (largest first)" + (", log scale" if scale == "log" else ""))
    ax.set_ylabel("training samples" + (", log scale" if scale == "log" else ""))
    st = report["size_stats"]
    empty = int(report.get("empty_clients", 0))
    default = f"Client sizes (min {st['min']:,.0f}, median {st['median']:,.0f}, max {st['max']:,.0f}; Gini {st['gini']:.2f})"
    if empty:
        default = f"Client sizes (median {st['median']:,.0f}, max {st['max']:,.0f}; Gini {st['gini']:.2f})"
        default += f"\n{empty:,} empty clients not shown"
    ax.set_title(title or default, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _plain_log_ticks(axis) -> None:
    """Log-axis ticks as plain numbers (1, 10, 1,000) rather than powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    if lo > 0 and hi / lo <= 1000:  # three decades or less: 1, 2, 5, 10, 20, 50, ... all labelled
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def plot_emd_hist(report: Mapping[str, Any], clients: ClientStats, path: Path, title: str = "",
                  beside: tuple[str, np.ndarray, float] | None = None) -> None:
    """Histogram of per-client EMD over [0, 2] (clients with training rows), weighted mean marked.

    ``beside`` = (name, per-client values, weighted mean) draws a second EMD (e.g. over embedding
    clusters) beside the label EMD, in its own colour, with its own mean.
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    plt = pyplot()
    keep = clients.sizes > 0
    series = [("label EMD", clients.emd[keep], float(report["emd"]), "#4c72b0", "#c44e52")]
    if beside is not None:
        series.append((beside[0], np.asarray(beside[1])[keep], float(beside[2]), "#dd8452", "#8c3b00"))
    fig, ax = plt.subplots(figsize=(6.4, 4), dpi=110)
    bins = np.linspace(0, 2, 41)
    heights = np.concatenate([np.histogram(v, bins)[0] for _, v, _, _, _ in series])
    if len(series) == 1:
        ax.hist(series[0][1], bins=bins, color=series[0][3], edgecolor="white", label=f"{series[0][1].size:,} clients")
    else:
        ax.hist([s[1] for s in series], bins=bins, color=[s[3] for s in series], edgecolor="white",
                label=[s[0] for s in series])
    for name, _, mean, _, line in series:
        ax.axvline(mean, color=line, lw=2, ls="-" if name == "label EMD" else "--",
                   label=f"{name}: weighted mean {mean:.3f}" if len(series) > 1 else f"weighted mean {mean:.3f}")
    nonzero = heights[heights > 0]
    log = nonzero.size > 0 and nonzero.max() > 100 * nonzero.min()  # else small bins look empty
    ax.set_xlim(0, 2)
    ax.set_xlabel("EMD to the population, ||q_i - p||_1" + (" (labels, clusters)" if len(series) > 1 else ""))
    if log:
        ax.set_yscale("log")
        ax.set_ylim(0.7, nonzero.max() * 2)
        _plain_log_ticks(ax.yaxis)
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_ylabel("clients (log scale)" if log else "clients")
    ax.legend(fontsize=8)
    empty = int(report.get("empty_clients", 0))
    what = "Per-client EMD, labels and clusters" if len(series) > 1 else "Per-client EMD"
    n = int(keep.sum())
    ax.set_title(title or (f"{what} ({n:,} clients" + (f"; {empty:,} empty not shown)" if empty else ")")))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(report: Mapping[str, Any], out_dir: Path, clients: ClientStats | None = None) -> list[str]:
    """Write ``report.json``, ``report/clients.parquet`` (and ``report/classes.parquet`` for a split of many
    classes: :mod:`hetbench.report.classes`) and the plots under ``out_dir``.

    Parameters
    ----------
    report : Report
        As from :func:`hetbench.report.compute_report` (with family entries added).
    out_dir : path
        The build folder (or a temporary one).
    clients : ClientStats, optional
        The per-client statistics; default ``report.clients``.

    Returns
    -------
    list of str
        The plot paths, relative to ``out_dir``: the label heatmap, then either the per-device or
        per-domain plots (:mod:`hetbench.report.groups`) or the size-rank curve (unless every
        client holds as many rows) and the EMD histogram.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report import compute_report, write_report
    >>> rep = compute_report({"train": np.array([0, 1, 1])}, {"train": np.array([0, 1, 1])}, ["a", "b"], ["x", "y"])
    >>> write_report(rep, "report-example")
    ['plots/label_distribution_heatmap.png', 'plots/client_size_rank.png', 'plots/emd_histogram.png']
    >>> rep = compute_report({"train": np.array([0, 1, 2, 2])}, {"train": np.array([0, 1, 1, 0])}, ["a", "b"],
    ...                      ["mnist/0", "mnist/1", "usps/0"])
    >>> write_report(rep, "report-example-domains")
    ['plots/label_distribution_heatmap.png', 'plots/domain_client_samples.png', 'plots/domain_label_distribution.png']
    """
    from hetbench.report.groups import client_groups, write_group_plots

    out_dir = Path(out_dir)
    clients = clients if clients is not None else getattr(report, "clients", None)
    if clients is None:
        raise TypeError("write_report needs the per-client statistics (compute_report(...).clients)")
    plots = out_dir / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    clients.write(out_dir / CLIENTS_FILE)
    if getattr(report, "classes", None) is not None:
        report.classes.write(out_dir / CLASSES_FILE)
    groups = client_groups(report, clients.names)
    plot_label_heatmap(report, clients, plots / PLOTS["label_heatmap"], groups=groups)
    written = [PLOTS["label_heatmap"]]
    if groups is not None:
        written += write_group_plots(report, clients, groups, plots)
    else:
        if plot_size_rank(report, clients, plots / PLOTS["size_rank"]):
            written.append(PLOTS["size_rank"])
        plot_emd_hist(report, clients, plots / PLOTS["emd_hist"])
        written.append(PLOTS["emd_hist"])
    return [f"plots/{name}" for name in written]
