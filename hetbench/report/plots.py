"""The plots every report has: label distribution per client, client sizes, per-client EMD."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from hetbench import metrics
from hetbench.plotting import pyplot

PLOTS = {
    "label_heatmap": "label_distribution_heatmap.png",
    "size_rank": "client_size_rank.png",
    "emd_hist": "emd_histogram.png",
}


def client_sort_order(counts: np.ndarray) -> np.ndarray:
    """Clients sorted by dominant class, then by that class's share (descending): blocks show skew."""
    q, _, _ = metrics.client_distributions(counts)
    dominant = q.argmax(axis=1)
    share = q.max(axis=1)
    return np.lexsort((-share, dominant))


def plot_label_heatmap(report: Mapping[str, Any], path: Path, title: str = "") -> None:
    plt = pyplot()
    counts = np.asarray(report["label_distribution"], dtype=np.float64)
    q, _, _ = metrics.client_distributions(counts)
    q = q[client_sort_order(counts)]
    n_cl, n_c = q.shape
    fig, ax = plt.subplots(figsize=(min(2 + 0.35 * n_c, 14), min(2 + 0.18 * n_cl, 9)), dpi=110)
    im = ax.imshow(q, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1)
    ax.set_xlabel("class")
    ax.set_ylabel(f"client (sorted by dominant class; {n_cl} clients)")
    if n_c <= 40:
        ax.set_xticks(range(n_c))
        ax.set_xticklabels(report["class_names"], rotation=90 if n_c > 12 else 0, fontsize=8)
    if n_cl > 60:
        ax.set_yticks([])
    fig.colorbar(im, ax=ax, label="share of the client's samples")
    ax.set_title(title or f"Label distribution per client (EMD {report['emd']:.3f})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_size_rank(report: Mapping[str, Any], path: Path, title: str = "") -> None:
    """Client sizes against rank on log-log axes (Hsu et al. 2020, Fig. 2b/2c)."""
    plt = pyplot()
    sizes = np.sort(np.asarray(report["client_sizes"], dtype=np.float64))[::-1]
    sizes = sizes[sizes > 0]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    ax.loglog(np.arange(1, sizes.size + 1), sizes, marker="." if sizes.size < 200 else None, lw=1.5)
    ax.set_xlabel("client rank")
    ax.set_ylabel("training samples")
    st = report["size_stats"]
    ax.set_title(title or f"Client sizes (median {st['median']:.0f}, Gini {st['gini']:.2f})")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_emd_hist(report: Mapping[str, Any], path: Path, title: str = "") -> None:
    plt = pyplot()
    values = np.asarray(report["emd_per_client"], dtype=np.float64)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    ax.hist(values, bins=np.linspace(0, 2, 41), color="#4c72b0", edgecolor="white")
    ax.axvline(report["emd"], color="#c44e52", lw=2, label=f"weighted mean {report['emd']:.3f}")
    ax.set_xlim(0, 2)
    ax.set_xlabel("EMD to the population, ||q_i - p||_1")
    ax.set_ylabel("clients")
    ax.legend()
    ax.set_title(title or "Per-client EMD")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(report: Mapping[str, Any], out_dir: Path) -> list[str]:
    """Write ``report.json`` and the plots under ``out_dir``; returns the plot paths (relative)."""
    out_dir = Path(out_dir)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    plot_label_heatmap(report, out_dir / "plots" / PLOTS["label_heatmap"])
    plot_size_rank(report, out_dir / "plots" / PLOTS["size_rank"])
    plot_emd_hist(report, out_dir / "plots" / PLOTS["emd_hist"])
    return [f"plots/{name}" for name in PLOTS.values()]
