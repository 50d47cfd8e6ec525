"""``plots/feature_shift.png``: every client's feature shift against its IID reference, and each device's or
domain's when the clients are grouped (the numbers of :mod:`hetbench.report.feature_entry`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from hetbench.plotting import pyplot
from hetbench.report.unit_shift import UnitShifts

#: past this many clients the per-client panel draws a line instead of one marker per client
MAX_MARKERS = 200


def _sorted_panel(ax, values: np.ndarray, iid: float | None, ylabel: str, what: str) -> None:
    finite = np.sort(values[np.isfinite(values)])[::-1]
    x = np.arange(1, finite.size + 1)
    ax.plot(x, finite, "o-" if finite.size <= MAX_MARKERS else "-", ms=3, lw=1, color="#1f77b4", label="client")
    if iid is not None:
        ax.axhline(iid, color="0.3", ls="--", lw=1, label=f"IID reference ({iid:.3g})")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # ranks are whole numbers
    ax.set_xlabel(f"client rank by {what} ({finite.size:,} clients measured)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def _group_panel(ax, groups: Mapping[str, Any], field: str, ylabel: str) -> None:
    names = list(groups["names"])
    values = np.array([np.nan if v is None else v for v in groups[field]], float)
    x = np.arange(len(names))
    ax.bar(x, np.nan_to_num(values), color="#ff7f0e", label=groups["kind"])
    iid = groups.get(f"iid_{field}")
    if iid is not None:
        ax.axhline(iid, color="0.3", ls="--", lw=1, label=f"IID reference ({iid:.3g})")
    ax.legend(fontsize=7)
    rows = groups["rows"]
    same = len(set(rows)) == 1
    labels = [n if len(n) <= 24 else n[:22] + ".." for n in names]
    if not same:
        labels = [f"{n} ({r:,})" for n, r in zip(labels, rows)]
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=45 if len(names) > 4 else 0, ha="right" if len(names) > 4 else "center", fontsize=7)
    ax.set_xlabel(f"{groups['kind']} ({rows[0]:,} training rows each)" if same else f"{groups['kind']} (training rows)")
    ax.set_ylabel(ylabel)


def plot_feature_shift(entry: Mapping[str, Any], clients: UnitShifts, path: Path) -> None:
    """Per-group MMD^2 and Fréchet distance bars with their IID references when the clients are grouped into
    devices or domains; otherwise every client's, sorted."""
    plt = pyplot()
    groups = entry.get("groups")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=110)
    if isinstance(groups, Mapping):
        kind = groups["kind"]
        _group_panel(ax1, groups, "mmd2", f"MMD² to the other {kind}s")
        _group_panel(ax2, groups, "frechet", f"Fréchet distance to the other {kind}s")
        ax1.set_title(f"Feature shift per {kind}: MMD² (Gaussian kernel)", fontsize=9)
        ax2.set_title(f"Feature shift per {kind}: Fréchet distance", fontsize=9)
    else:
        summary = entry["clients"]
        _sorted_panel(ax1, clients.mmd2, summary.get("iid_mmd2"), "MMD² to the other clients", "MMD²")
        _sorted_panel(ax2, clients.frechet, summary.get("iid_frechet"), "Fréchet distance to the other clients",
                      "Fréchet distance")
        ax1.set_title("Feature shift per client: MMD² (Gaussian kernel)", fontsize=9)
        ax2.set_title("Feature shift per client: Fréchet distance", fontsize=9)
    fig.suptitle(f"Feature shift, class by class, on {entry['embedder']} embeddings ({entry['components']} principal "
                 f"components, {entry['rows']:,} training rows); dashed: the same rows dealt at random", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


__all__ = ["plot_feature_shift"]
