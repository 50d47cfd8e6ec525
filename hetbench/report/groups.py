"""Per-device and per-domain plots of splits whose clients belong to devices or domains.

A device split (:class:`~hetbench.partitioners.devices.DevicePartitioner`) and a domain split
(:class:`~hetbench.partitioners.domains.DomainsPartitioner`) name their clients ``<group>/<k>``,
grouped by device or domain, ``k`` counting from 0 inside the group. There every client of a
device sees the same label distribution by design (or every client is a fixed fraction of its
domain), so the size-rank curve is flat and the per-client label EMD is one bar: what a reader
needs is which clients belong to which device or domain, how many samples each holds, and how the
devices' or domains' label distributions differ. :func:`write_group_plots` draws that:

* ``<kind>_client_samples.png`` - training samples per client in ``client_id`` order, coloured by
  device/domain (a box per device/domain of its client sizes past :data:`MAX_BAR_CLIENTS` clients);
* ``<kind>_label_distribution.png`` - device/domain x class share of its training samples, each
  row labelled with its clients, samples and EMD to the population.

``<kind>`` is ``device`` when the report has a ``devices`` entry, else ``domain``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hetbench.plotting import pyplot
from hetbench.report.axes import MAX_HEATMAP_CLASSES, class_ticks, tick_rows
from hetbench.report.metrics import ClientStats

#: a client name ``<group>/<k>``
_NAME = re.compile(r"^(.+)/(\d+)$")
#: past this many groups the clients are not treated as grouped (per-group plots would be unreadable)
MAX_GROUPS = 60
#: past this many clients the samples plot draws one box per group instead of one bar per client
MAX_BAR_CLIENTS = 300
PALETTE = "tab10"


@dataclass(frozen=True)
class ClientGroups:
    """Which device or domain each client belongs to.

    Attributes
    ----------
    kind : str
        ``"device"`` or ``"domain"``.
    names : list of str
        Group names, in the order their clients come.
    of_client : numpy.ndarray
        Group index of every client.
    """

    kind: str
    names: list[str]
    of_client: np.ndarray


def client_groups(report: Mapping[str, Any], client_names: Sequence[str]) -> ClientGroups | None:
    """The devices or domains of a split's clients, or None when the clients are not grouped.

    Clients are grouped when every name is ``<group>/<k>``, the clients of a group are consecutive
    and ``k`` counts 0, 1, ... inside each group (zero-padding allowed), with at most
    :data:`MAX_GROUPS` groups: the names the device and domain partitioners give.

    Parameters
    ----------
    report : mapping
        The report (a ``devices`` entry makes the groups devices, else they are domains).
    client_names : sequence of str
        Client names, in client index order.

    Examples
    --------
    >>> from hetbench.report.groups import client_groups
    >>> g = client_groups({}, ["mnist/0", "mnist/1", "usps/0"])
    >>> g.kind, g.names, g.of_client.tolist()
    ('domain', ['mnist', 'usps'], [0, 0, 1])
    >>> client_groups({}, ["client_0", "client_1"]) is None, client_groups({}, ["a/0", "b/0", "a/1"]) is None
    (True, True)
    """
    n = len(client_names)
    if n == 0:
        return None
    prefixes, ks = [], np.empty(n, dtype=np.int64)
    for i, name in enumerate(client_names):
        m = _NAME.match(str(name))
        if m is None:
            return None
        prefixes.append(m.group(1))
        ks[i] = int(m.group(2))
    new_block = np.array([True] + [a != b for a, b in zip(prefixes, prefixes[1:])])
    starts = np.flatnonzero(new_block)
    if starts.size > MAX_GROUPS:
        return None
    block = np.cumsum(new_block) - 1
    names = [prefixes[s] for s in starts]
    if len(set(names)) != len(names) or not np.array_equal(ks, np.arange(n) - starts[block]):
        return None
    kind = "device" if isinstance(report.get("devices"), Mapping) else "domain"
    return ClientGroups(kind, names, block.astype(np.int64))


def group_label_counts(clients: ClientStats, groups: ClientGroups) -> np.ndarray:
    """Groups x classes training-sample counts, summed from the sparse per-client counts.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.metrics import LabelCounts
    >>> from hetbench.report.groups import client_groups, group_label_counts
    >>> from hetbench.report.metrics import ClientStats
    >>> names = ["a/0", "a/1", "b/0"]
    >>> lc = LabelCounts.from_labels(np.array([0, 1, 2, 2]), np.array([0, 1, 1, 1]), 3, 2)
    >>> group_label_counts(ClientStats(names, lc, {}), client_groups({}, names)).tolist()
    [[1, 1], [0, 2]]
    """
    lc = clients.label_counts
    client_of_cell = np.repeat(np.arange(lc.num_clients), np.diff(lc.indptr))
    g, c = len(groups.names), lc.num_classes
    cells = groups.of_client[client_of_cell] * c + lc.classes
    return np.bincount(cells, weights=lc.counts, minlength=g * c).reshape(g, c).round().astype(np.int64)


def _colours(n: int):
    plt = pyplot()
    cmap = plt.get_cmap(PALETTE if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def plot_group_samples(clients: ClientStats, groups: ClientGroups, path: Path) -> None:
    """Training samples per client in ``client_id`` order, coloured by device/domain."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    plt = pyplot()
    sizes, of = clients.sizes, groups.of_client
    k, g = sizes.size, len(groups.names)
    colours = _colours(g)
    per_group = np.bincount(of, weights=sizes, minlength=g).astype(np.int64)
    members = np.bincount(of, minlength=g)
    handles = [Patch(color=colours[i], label=f"{name}: {members[i]:,} client{'s' if members[i] != 1 else ''}, "
                     f"{per_group[i]:,} samples") for i, name in enumerate(groups.names)]
    legend_w = 0.8 + 0.065 * max(len(h.get_label()) for h in handles) if g <= 12 else 0.0  # inches
    plot_w = min(max(5.0, 1.5 + 0.2 * (k if k <= MAX_BAR_CLIENTS else 3 * g)), 12.0)
    fig, ax = plt.subplots(figsize=(plot_w + legend_w, 4.6), dpi=110)
    if k <= MAX_BAR_CLIENTS:
        ax.bar(np.arange(k), sizes, width=0.85 if k <= 100 else 1.0, color=[colours[i] for i in of], linewidth=0)
        for b in np.flatnonzero(np.diff(of)) + 1:
            ax.axvline(b - 0.5, color="0.35", lw=0.8, ls=":")
        ticks = tick_rows(k)
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks], fontsize=7 if k > 20 else 8)
        ax.set_xlim(-0.6, k - 0.4)
        ax.set_xlabel("client_id")
        ax.set_ylabel("training samples")
        what = "per client"
    else:  # one box per group of its clients' sizes: bounded however many clients there are
        ax.boxplot([sizes[of == i] for i in range(g)], positions=np.arange(g), widths=0.6, patch_artist=True,
                   showfliers=False, boxprops={"linewidth": 0.8}, medianprops={"color": "black"})
        for patch, colour in zip(ax.patches, colours):
            patch.set_facecolor(colour)
        ax.set_xticks(np.arange(g))
        ax.set_xticklabels(groups.names, rotation=60 if g > 6 else 0, ha="right" if g > 6 else "center", fontsize=7)
        ax.set_xlabel(groups.kind)
        ax.set_ylabel("training samples per client")
        what = f"per client ({k:,} clients, one box per {groups.kind})"
    ax.set_ylim(0, max(float(sizes.max()), 1) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    if g <= 12:
        ax.legend(handles=handles, fontsize=7, title=groups.kind, title_fontsize=8, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    elif k <= MAX_BAR_CLIENTS:  # too many groups for a legend: their names above their blocks
        starts = np.flatnonzero(np.concatenate([[True], np.diff(of) != 0]))
        ends = np.concatenate([starts[1:], [k]])
        top = ax.secondary_xaxis("top")
        top.set_xticks((starts + ends - 1) / 2)
        top.set_xticklabels([groups.names[of[s]] for s in starts], rotation=60, ha="left", fontsize=6)
        top.tick_params(length=0)
    ax.set_title(f"Training samples {what}, coloured by {groups.kind} ({g} {groups.kind}s)", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_group_labels(report: Mapping[str, Any], clients: ClientStats, groups: ClientGroups, path: Path) -> None:
    """Share of each class in each device's/domain's training samples, with clients, samples and
    EMD to the population per row."""
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    plt = pyplot()
    counts = group_label_counts(clients, groups).astype(np.float64)
    n_classes = counts.shape[1]
    totals = counts.sum(axis=1)
    population = counts.sum(axis=0) / max(counts.sum(), 1.0)
    share = counts / np.maximum(totals[:, None], 1.0)
    emd = np.abs(share - population).sum(axis=1)
    weighted = float((emd * totals).sum() / max(totals.sum(), 1.0))
    width = -(-n_classes // MAX_HEATMAP_CLASSES)
    if width > 1:
        share = np.pad(share, ((0, 0), (0, -n_classes % width))).reshape(share.shape[0], -1, width).sum(axis=2)
    g, n_c = share.shape
    members = np.bincount(groups.of_client, minlength=g)
    fig, ax = plt.subplots(figsize=(min(5 + 0.35 * n_c, 15), min(2.2 + 0.3 * g, 10)), dpi=110)
    # one fixed 0-100% scale, as the clients' heatmap: a uniform split reads uniform, a mild skew mild
    im = ax.imshow(share, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1,
                   extent=(-0.5, n_c * width - 0.5, g - 0.5, -0.5))
    if n_c <= 40 and width == 1:
        class_ticks(ax, report["class_names"])
        ax.set_xlabel("class")
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(f"class index ({n_classes:,} classes, {width} per column)" if width > 1 else "class index")
    if g * n_c <= 300:  # the shares as numbers: colours alone exaggerate small differences
        for (r, c), v in np.ndenumerate(share):
            ax.text(c * width, r, f"{100 * v:.0f}%", ha="center", va="center", fontsize=7,
                    color="white" if v < 0.6 else "black")
    ax.set_yticks(range(g))
    ax.set_yticklabels([f"{name} ({members[i]:,} client{'s' if members[i] != 1 else ''}, {int(totals[i]):,} samples, EMD {emd[i]:.2f})"
                        for i, name in enumerate(groups.names)], fontsize=7 if g > 8 else 8)
    ax.set_ylabel(groups.kind)
    fig.colorbar(im, ax=ax, label=f"share of the {groups.kind}'s training samples", format=PercentFormatter(1.0))
    # two lines: beside long device names the plot is narrow, and one line would run off the figure
    ax.set_title(f"Label distribution per {groups.kind}\n(EMD of {groups.kind}s to the population {weighted:.3f})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_group_plots(report: Mapping[str, Any], clients: ClientStats, groups: ClientGroups, plots_dir: Path) -> list[str]:
    """Write the per-device or per-domain plots under ``plots_dir``; returns their file names."""
    names = [f"{groups.kind}_client_samples.png", f"{groups.kind}_label_distribution.png"]
    plot_group_samples(clients, groups, Path(plots_dir) / names[0])
    plot_group_labels(report, clients, groups, Path(plots_dir) / names[1])
    return names
