"""``plots/feature_shift.png``: the feature shift against its IID band (the numbers of
:mod:`hetbench.report.feature_entry`).

* Grouped clients (devices, domains): per group, the MMD^2 and the Fréchet distance of its pooled rows, each
  a dot over its IID band (the lowest to the highest value over the random deals).
* Otherwise: every client's MMD^2, sorted, over the band the same ranks span in the random deals: a curve
  inside the band is no feature shift, whatever its spread (a pure label split reads inside it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hetbench.plotting import pyplot
from hetbench.report.unit_shift import UnitShifts

#: past this many clients the per-client panel draws a line instead of one marker per client
MAX_MARKERS = 200
BAND = "0.6"


def sorted_band(iids: Sequence[UnitShifts], field: str = "mmd2") -> tuple[np.ndarray, np.ndarray] | None:
    """The IID band of a sorted per-client curve: at each rank (largest first), the lowest and highest value
    that rank takes over the deals; None without deals.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_plot import sorted_band
    >>> from hetbench.report.unit_shift import UnitShifts
    >>> deal = lambda v: UnitShifts(np.zeros(3), np.array(v, float), np.ones(3, int), np.ones(3, int))
    >>> [b.tolist() for b in sorted_band([deal([0.1, -0.2, 0.0]), deal([0.3, 0.1, -0.1])])]
    [[0.1, 0.0, -0.2], [0.3, 0.1, -0.1]]
    """
    curves = [np.sort(v[np.isfinite(v)])[::-1] for v in (getattr(i, field) for i in iids)]
    if not curves or not min(len(c) for c in curves):
        return None
    n = min(len(c) for c in curves)
    stack = np.stack([c[:n] for c in curves])
    return stack.min(axis=0), stack.max(axis=0)


def _client_panel(ax, values: np.ndarray, band: tuple[np.ndarray, np.ndarray] | None, draws: int) -> None:
    finite = np.sort(values[np.isfinite(values)])[::-1]
    x = np.arange(1, finite.size + 1)
    if band is not None:
        lo, hi = band
        ax.fill_between(np.arange(1, lo.size + 1), lo, hi, color=BAND, lw=0, step="mid",
                        label=f"IID band: the rows dealt at random within each class ({draws} deals, min to max)")
    ax.plot(x, finite, "o-" if finite.size <= MAX_MARKERS else "-", ms=3, lw=1, color="#1f77b4", label="client")
    ax.axhline(0.0, color="0.3", lw=0.6)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # ranks are whole numbers
    ax.set_xlabel(f"client rank by MMD² ({finite.size:,} clients measured)")
    ax.set_ylabel("MMD² to the other clients")
    ax.legend(fontsize=7, loc="upper right")


def _group_panel(ax, groups: Mapping[str, Any], field: str, ylabel: str, deal: str) -> None:
    """Each group's value as a dot over its IID band at the same place: a dot above its band is a shift (a bar
    would hang below 0 for the unbiased MMD², where the most shifted group draws the shortest bar)."""
    names = list(groups["names"])
    values = np.array([np.nan if v is None else v for v in groups[field]], float)
    x = np.arange(len(names))
    band = groups.get(f"iid_{field}_band")
    if band:
        lo = np.array([np.nan if b[0] is None else b[0] for b in band], float)
        hi = np.array([np.nan if b[1] is None else b[1] for b in band], float)
        ax.bar(x, hi - lo, bottom=lo, width=0.35, color=BAND, label=f"IID band (rows dealt at random {deal}, min to max)")
    ax.plot(x, values, "o", ms=7, color="#ff7f0e", label=groups["kind"], zorder=3)
    if field == "mmd2":
        ax.axhline(0.0, color="0.3", lw=0.6)
    ax.margins(x=0.15, y=0.15)
    rows = groups["rows"]
    same = len(set(rows)) == 1
    labels = [n if len(n) <= 24 else n[:22] + ".." for n in names]
    if not same:
        labels = [f"{n} ({r:,})" for n, r in zip(labels, rows)]
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=45 if len(names) > 4 else 0, ha="right" if len(names) > 4 else "center", fontsize=7)
    ax.set_xlabel(f"{groups['kind']} ({rows[0]:,} training rows each)" if same else f"{groups['kind']} (training rows)")
    ax.set_ylabel(ylabel)


def plot_feature_shift(entry: Mapping[str, Any], clients: UnitShifts, path: Path,
                       iid_clients: Sequence[UnitShifts] = ()) -> None:
    """Per-group MMD^2 and pooled Fréchet distance bars with their IID bands when the clients are grouped into
    devices or domains; otherwise every client's MMD^2, sorted, over its IID band (module notes)."""
    plt = pyplot()
    groups = entry.get("groups")
    if isinstance(groups, Mapping):
        kind = groups["kind"]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=110)
        deal = entry.get("iid_deal") or "within each class"
        _group_panel(ax1, groups, "mmd2", f"MMD² to the other {kind}s", deal)
        _group_panel(ax2, groups, "frechet", f"Fréchet distance to the other {kind}s", deal)
        ax1.set_title(f"Feature shift per {kind}: unbiased MMD² (a dot above its band is a shift)", fontsize=9)
        ax2.set_title(f"Feature shift per {kind}: Fréchet distance of its pooled rows", fontsize=9)
        handles, labels = ax1.get_legend_handles_labels()  # one legend for both panels, above them: it hides no dot
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.95), ncol=2, fontsize=7, frameon=False)
    else:
        fig, ax1 = plt.subplots(1, 1, figsize=(8, 4.6), dpi=110)
        _client_panel(ax1, clients.mmd2, sorted_band(iid_clients), len(iid_clients))
        ax1.set_title("Feature shift per client: unbiased MMD² (0 when nothing differs, so it can dip below 0);\n"
                      "a curve inside the grey band is no feature shift", fontsize=9)
    fig.suptitle(f"Feature shift, class by class, on {entry['embedder']} embeddings ({entry['components']} principal "
                 f"components, {entry['rows']:,} training rows)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.92) if isinstance(groups, Mapping) else (0, 0, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


__all__ = ["plot_feature_shift", "sorted_band"]
