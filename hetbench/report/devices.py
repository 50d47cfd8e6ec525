"""Plots of device splits: one capture under every device, device-to-device distances, image statistics.

The report entries they draw (``devices``, ``device_distance``) are described in
``docs/output-contract.md``; the statistics come from :mod:`hetbench.isp.image_stats`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from hetbench.plotting import pyplot

def plot_contact_sheet(sheet: list[tuple[str, bytes]], path: Path, title: str) -> None:
    """One capture rendered by every device/variant, labelled (each image decoded within hetbench's pixel
    bound, :func:`hetbench.image_limits.decode_cv2`)."""
    from hetbench.image_limits import decode_cv2

    plt = pyplot()
    n = len(sheet)
    cols = min(n, 5)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.9 * rows), dpi=110, squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, (label, png) in zip(axes.ravel(), sheet):
        img = decode_cv2(png, what=f"the contact sheet's image of '{label}'")[..., ::-1]
        ax.imshow(img)
        ax.set_title(label.replace(",", "\n"), fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_device_distance(names: list[str], matrix: list[list[float]], path: Path,
                         basis: str = "the devices' standardised image statistics") -> None:
    """The device-to-device distance matrix, its numbers printed up to 12 devices, ``basis`` (what the distance
    is measured on) under the title."""
    import textwrap

    plt = pyplot()
    m = np.asarray(matrix)
    fig, ax = plt.subplots(figsize=(2.5 + 0.45 * len(names), 2 + 0.4 * len(names)), dpi=110)
    im = ax.imshow(m, cmap="magma")
    ax.set_xticks(range(len(names)))
    ax.set_yticks(range(len(names)))
    short = [n if len(n) <= 40 else n[:38] + ".." for n in names]
    if len(names) <= 12:  # the distances as numbers: the colour alone is hard to read across the scale
        for (r, c), v in np.ndenumerate(m):
            ax.text(c, r, f"{v:.1f}", ha="center", va="center", fontsize=7, color="white" if v < 0.6 * m.max() else "black")
    ax.set_xticklabels(short, rotation=60, ha="right", fontsize=7)
    ax.set_yticklabels(short, fontsize=7)
    fig.colorbar(im, ax=ax, label="distance (z-scored statistics)")
    width = max(40, int(7 * (2.5 + 0.45 * len(names))))  # characters that fit the figure's width
    ax.set_title("Device-to-device distance\n" + textwrap.fill(basis, width), fontsize=7, loc="left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _device_colours(n: int):
    """n distinct colours: tab10 up to 10 devices, tab20 up to 20, then evenly spaced on a perceptual map."""
    plt = pyplot()
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(n)]
    if n <= 20:
        return [plt.get_cmap("tab20")(i) for i in range(n)]
    return [plt.get_cmap("turbo")(v) for v in np.linspace(0.05, 0.95, n)]


def plot_device_stats(devices: dict[str, dict], path: Path) -> None:
    """Mean R, G, B per device (bars, 0-255) with its chroma on its own axis, and each device's luminance
    histogram (one distinct colour per device, names in full)."""
    plt = pyplot()
    names = list(devices)
    st = [devices[d]["image_stats"] for d in names]
    n = len(names)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(12, 6 + 0.5 * n), 4.8), dpi=110)
    x = np.arange(n)
    for k, (key, color) in enumerate((("mean_r", "#d62728"), ("mean_g", "#2ca02c"), ("mean_b", "#1f77b4"))):
        ax1.bar(x + (k - 1) * 0.27, [s[key] for s in st], width=0.27, color=color, label=f"mean {key[-1].upper()}")
    ax1.set_ylabel("mean channel value (0-255)")
    chroma = ax1.twinx()  # chroma is C*ab of CIELAB, not a channel value: its own axis
    chroma.plot(x, [s["chroma"] for s in st], "kD", ms=5, ls="none", label="chroma C*ab (CIELAB)")  # devices are categories: no line
    chroma.set_ylabel("chroma C*ab (CIELAB)")
    chroma.set_ylim(bottom=0)
    ax1.set_xticks(x)
    ax1.set_xticklabels(names, rotation=45, ha="right", fontsize=7)
    handles = ax1.get_legend_handles_labels()[0] + chroma.get_legend_handles_labels()[0]
    ax1.legend(handles, [h.get_label() for h in handles], fontsize=7, ncol=4, loc="lower left", bbox_to_anchor=(0, 1.0),
               frameon=False)
    ax1.set_title("Mean colour and chroma per device", pad=22)
    centres = (np.arange(len(st[0]["luma_hist"])) + 0.5) * (256 / len(st[0]["luma_hist"]))
    for name, s, colour in zip(names, st, _device_colours(n)):
        ax2.plot(centres, s["luma_hist"], color=colour, label=name)
    ax2.set_xlabel(f"luminance (0-255; {len(centres)} bins)")
    ax2.set_ylabel("share of pixels")
    ax2.legend(fontsize=6, ncol=1 if n <= 12 else 2, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax2.set_title("Luminance histogram per device")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def device_plot_writer(sheet: list[tuple[str, bytes]], devices: dict[str, dict], distance: dict[str, Any], title: str,
                       basis: str | None = None) -> Callable[[Path], list[str]]:
    """A plot writer for ``publish_split``: writes the three device plots under ``plots/``.

    Parameters
    ----------
    sheet : list of (str, bytes)
        (device label, PNG) of one capture under every device.
    devices : dict
        The report's ``devices`` entry (per device: ``image_stats``, ...).
    distance : dict
        The report's ``device_distance`` entry (``devices``, ``matrix``).
    title : str
        Title of the contact sheet (the data set name).
    basis : str, optional
        What the distance is measured on, in words (printed under the distance plot's title).
    """

    def write(out_dir: Path) -> list[str]:
        plots = out_dir / "plots"
        plot_contact_sheet(sheet, plots / "contact_sheet.png", title)
        # in the devices' own order, as every other device plot (report.json keeps its matrix sorted by name)
        order = [distance["devices"].index(d) for d in devices if d in distance["devices"]]
        matrix = [[distance["matrix"][i][j] for j in order] for i in order]
        plot_device_distance([distance["devices"][i] for i in order], matrix, plots / "device_distance.png",
                             *([basis] if basis else []))
        plot_device_stats(devices, plots / "device_image_stats.png")
        return ["plots/contact_sheet.png", "plots/device_distance.png", "plots/device_image_stats.png"]

    return write
