"""The plots every report has (label distribution per client, client sizes, per-client EMD), and
writing a report (:func:`write_report`: ``report.json``, ``report/clients.parquet``, the plots).

With thousands of clients the plots sample or aggregate: the heatmap shows at most
:data:`MAX_HEATMAP_CLIENTS` clients picked evenly by size rank (its title says so) and, with more
than :data:`MAX_HEATMAP_CLASSES` classes, sums adjacent classes into one column (its axis says
how many), the size-rank curve is drawn through at most :data:`MAX_CURVE_POINTS` log-spaced
ranks, and the histogram counts every client (on a log scale when bins differ a hundredfold).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from hetbench import metrics
from hetbench.plotting import pyplot
from hetbench.report.metrics import CLIENTS_FILE, ClientStats

PLOTS = {
    "label_heatmap": "label_distribution_heatmap.png",
    "size_rank": "client_size_rank.png",
    "emd_hist": "emd_histogram.png",
}
MAX_HEATMAP_CLIENTS = 200
MAX_HEATMAP_CLASSES = 200
MAX_CURVE_POINTS = 2000


def client_sort_order(counts: np.ndarray) -> np.ndarray:
    """Clients sorted by dominant class, then by that class's share (descending): blocks show skew.

    Parameters
    ----------
    counts : numpy.ndarray
        Clients x classes counts.

    Returns
    -------
    numpy.ndarray
        Row indices in display order.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.plots import client_sort_order
    >>> client_sort_order(np.array([[0, 5], [4, 1], [9, 0]])).tolist()
    [2, 1, 0]
    """
    q, _, _ = metrics.client_distributions(counts)
    dominant = q.argmax(axis=1)
    share = q.max(axis=1)
    return np.lexsort((-share, dominant))


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


def plot_label_heatmap(report: Mapping[str, Any], clients: ClientStats, path: Path, title: str = "") -> None:
    """Share of each class in each client's samples (a sample of clients when there are many)."""
    plt = pyplot()
    shown = sample_by_size_rank(clients.sizes)
    counts = clients.label_counts.to_dense(shown).astype(np.float64)
    n_classes = counts.shape[1]
    width = -(-n_classes // MAX_HEATMAP_CLASSES)  # classes per column: one-pixel cells would vanish
    if width > 1:
        counts = np.pad(counts, ((0, 0), (0, -n_classes % width))).reshape(counts.shape[0], -1, width).sum(axis=2)
    q, _, _ = metrics.client_distributions(counts)
    order = client_sort_order(counts)
    q = q[order]
    n_cl, n_c = q.shape
    total = clients.num_clients
    sampled = n_cl < total
    fig, ax = plt.subplots(figsize=(min(2 + 0.35 * n_c, 14), min(2 + 0.18 * n_cl, 9)), dpi=110)
    extent = (-0.5, n_c * width - 0.5, n_cl - 0.5, -0.5)  # x in class indices, also when binned
    im = ax.imshow(q, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1, extent=extent)
    ax.set_xlabel(f"class index ({n_classes:,} classes, {width} per column)" if width > 1 else "class")
    ax.set_ylabel(f"client (sorted by dominant class; {n_cl:,} shown)" if sampled else f"client (sorted by dominant class; {n_cl} clients)")
    if n_c <= 40 and width == 1:
        ax.set_xticks(range(n_c))
        ax.set_xticklabels(report["class_names"], rotation=90 if n_c > 12 else 0, fontsize=8)
    if n_cl <= 40:  # rows are sorted, so label them with the clients' names, not positions
        ax.set_yticks(range(n_cl))
        ax.set_yticklabels([str(clients.names[i]) for i in shown[order]], fontsize=7)
    else:
        ax.set_yticks([])
    fig.colorbar(im, ax=ax, label="share of the client's samples")
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


def plot_size_rank(report: Mapping[str, Any], clients: ClientStats, path: Path, title: str = "") -> None:
    """Client sizes against rank on log-log axes (Hsu et al. 2020, Fig. 2b/2c)."""
    plt = pyplot()
    sizes = np.sort(clients.sizes[clients.sizes > 0])[::-1].astype(np.float64)
    ranks = np.arange(1, sizes.size + 1)
    if sizes.size > MAX_CURVE_POINTS:  # the curve through log-spaced ranks (first and last kept)
        pick = np.unique(np.geomspace(1, sizes.size, MAX_CURVE_POINTS).round().astype(np.int64)) - 1
        ranks, sizes = ranks[pick], sizes[pick]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    ax.loglog(ranks, sizes, marker="." if sizes.size < 200 else None, lw=1.5)
    ax.set_xlabel("client rank")
    ax.set_ylabel("training samples")
    if sizes.size and sizes[0] < 10 * sizes[-1]:  # at least a decade, or 71 vs 72 looks like a cliff
        ax.set_ylim(max(min(sizes[-1] / 1.5, sizes[0] / 10), 0.7), sizes[0] * 1.5)  # no client holds < 1
    _plain_log_ticks(ax.xaxis)
    _plain_log_ticks(ax.yaxis)
    st = report["size_stats"]
    empty = int(report.get("empty_clients", 0))
    default = f"Client sizes (median {st['median']:.0f}, Gini {st['gini']:.2f})"
    if empty:
        default += f"\n{empty:,} empty clients not shown"
    ax.set_title(title or default)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plain_log_ticks(axis) -> None:
    """Log-axis ticks as plain numbers (1, 10, 1,000) rather than powers of ten."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def plot_emd_hist(report: Mapping[str, Any], clients: ClientStats, path: Path, title: str = "") -> None:
    """Histogram of per-client EMD over [0, 2] (clients with training rows), weighted mean marked."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    plt = pyplot()
    values = clients.emd[clients.sizes > 0]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    heights, _, _ = ax.hist(values, bins=np.linspace(0, 2, 41), color="#4c72b0", edgecolor="white")
    nonzero = heights[heights > 0]
    log = nonzero.size > 0 and nonzero.max() > 100 * nonzero.min()  # else small bins look empty
    ax.axvline(report["emd"], color="#c44e52", lw=2, label=f"weighted mean {report['emd']:.3f}")
    ax.set_xlim(0, 2)
    ax.set_xlabel("EMD to the population, ||q_i - p||_1")
    if log:
        ax.set_yscale("log")
        ax.set_ylim(0.7, nonzero.max() * 2)
        _plain_log_ticks(ax.yaxis)
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_ylabel("clients (log scale)" if log else "clients")
    ax.legend()
    empty = int(report.get("empty_clients", 0))
    ax.set_title(title or (f"Per-client EMD ({values.size:,} clients" + (f"; {empty:,} empty not shown)" if empty else ")")))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(report: Mapping[str, Any], out_dir: Path, clients: ClientStats | None = None) -> list[str]:
    """Write ``report.json``, ``report/clients.parquet`` and the plots under ``out_dir``.

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
        The plot paths, relative to ``out_dir``.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report import compute_report, write_report
    >>> rep = compute_report({"train": np.array([0, 1, 1])}, {"train": np.array([0, 1, 1])}, ["a", "b"], ["x", "y"])
    >>> write_report(rep, "report-example")
    ['plots/label_distribution_heatmap.png', 'plots/client_size_rank.png', 'plots/emd_histogram.png']
    """
    out_dir = Path(out_dir)
    clients = clients if clients is not None else getattr(report, "clients", None)
    if clients is None:
        raise TypeError("write_report needs the per-client statistics (compute_report(...).clients)")
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    clients.write(out_dir / CLIENTS_FILE)
    plot_label_heatmap(report, clients, out_dir / "plots" / PLOTS["label_heatmap"])
    plot_size_rank(report, clients, out_dir / "plots" / PLOTS["size_rank"])
    plot_emd_hist(report, clients, out_dir / "plots" / PLOTS["emd_hist"])
    return [f"plots/{name}" for name in PLOTS.values()]
