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


def plot_device_distance(names: list[str], matrix: list[list[float]], path: Path) -> None:
    plt = pyplot()
    m = np.asarray(matrix)
    fig, ax = plt.subplots(figsize=(2.5 + 0.45 * len(names), 2 + 0.4 * len(names)), dpi=110)
    im = ax.imshow(m, cmap="magma")
    ax.set_xticks(range(len(names)))
    ax.set_yticks(range(len(names)))
    short = [n if len(n) <= 22 else n[:20] + ".." for n in names]
    ax.set_xticklabels(short, rotation=60, ha="right", fontsize=7)
    ax.set_yticklabels(short, fontsize=7)
    fig.colorbar(im, ax=ax, label="distance (standardised image statistics)")
    ax.set_title("Device-to-device distance")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_device_stats(devices: dict[str, dict], path: Path) -> None:
    """Mean RGB, chroma and luminance histogram per device."""
    plt = pyplot()
    names = list(devices)
    st = [devices[d]["image_stats"] for d in names]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2), dpi=110)
    x = np.arange(len(names))
    for k, (key, color) in enumerate((("mean_r", "#d62728"), ("mean_g", "#2ca02c"), ("mean_b", "#1f77b4"))):
        ax1.bar(x + (k - 1) * 0.27, [s[key] for s in st], width=0.27, color=color, label=key[-1].upper())
    ax1.plot(x, [s["chroma"] for s in st], "ko-", label="chroma (Lab)")
    ax1.set_xticks(x)
    ax1.set_xticklabels([n if len(n) <= 18 else n[:16] + ".." for n in names], rotation=60, ha="right", fontsize=7)
    ax1.legend(fontsize=7)
    ax1.set_title("Mean RGB and chroma per device")
    bins = np.arange(len(st[0]["luma_hist"]))
    for n, s in zip(names, st):
        ax2.plot(bins, s["luma_hist"], label=n if len(n) <= 24 else n[:22] + "..")
    ax2.set_xlabel("luminance bin (16 bins over 0-255)")
    ax2.set_ylabel("share of pixels")
    ax2.legend(fontsize=6)
    ax2.set_title("Luminance histogram per device")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def device_plot_writer(sheet: list[tuple[str, bytes]], devices: dict[str, dict], distance: dict[str, Any], title: str) -> Callable[[Path], list[str]]:
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
    """

    def write(out_dir: Path) -> list[str]:
        plots = out_dir / "plots"
        plot_contact_sheet(sheet, plots / "contact_sheet.png", title)
        plot_device_distance(distance["devices"], distance["matrix"], plots / "device_distance.png")
        plot_device_stats(devices, plots / "device_image_stats.png")
        return ["plots/contact_sheet.png", "plots/device_distance.png", "plots/device_image_stats.png"]

    return write
