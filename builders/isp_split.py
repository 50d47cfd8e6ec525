"""Renders -> a federated split where every client is one device (an ISP variant or a phone).

Samples are (capture, device). Train and test are split *by capture* (stratified by label), so no
test scene crop is ever seen in training under any device. Clients are allocated to devices
(uniformly, or by weights such as market shares), and each device's training renders are dealt
evenly at random among that device's clients. The test split is shared (``client_id = -1``) and
carries the ``device`` column, so accuracy can be reported per device.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hetbench.builders.isp_common import allocate_clients
from hetbench.isp.jobs import CaptureJob, JobResult
from hetbench.seeding import make_rng
from hetbench.errors import HetbenchError
from hetbench.partition import Partition
from hetbench.splits import FederatedSplit, SplitRows, stratified_holdout
from hetbench.table import SampleTable


@dataclass
class DeviceSplit:
    """The split plus what the ISP report adds to it."""

    split: FederatedSplit
    extra_report: dict[str, Any]
    contact_sheet: list[tuple[str, bytes]]  # (device label, PNG) of one capture under every device


def _dataset(rows: dict[str, list], class_names: list[str]):
    import datasets

    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=class_names),
            "device": datasets.Value("string"),
            "isp": datasets.Value("string"),
            "capture_id": datasets.Value("string"),
            "sample_id": datasets.Value("string"),
        }
    )
    data = dict(rows)
    data["image"] = [{"bytes": b, "path": None} for b in rows["image"]]
    return datasets.Dataset.from_dict(data, features=features)


def assemble_device_split(
    jobs: Sequence[CaptureJob],
    results: Sequence[JobResult],
    devices: Sequence[str],
    isp_of: dict[str, str],
    weights: dict[str, float],
    num_clients: int | None,
    test_fraction: float,
    seed: int,
    recipe: dict[str, Any],
    source: dict[str, Any],
    description: str,
    license: str,
) -> DeviceSplit:
    """Build the FederatedSplit (see module docstring) from ordered job results."""
    from hetbench.isp.image_stats import device_distances, device_summary

    skipped = [{"file": j.capture_id if not hasattr(j.source, "path") else j.source.path, "reason": r.skipped}
               for j, r in zip(jobs, results) if r.skipped]
    kept = [r for r in results if not r.skipped]
    if not kept:
        raise HetbenchError(f"no capture could be rendered ({len(skipped)} skipped: {skipped[0]['reason'] if skipped else 'none'})")
    if not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"--test-fraction must be between 0 and 1 (got {test_fraction})")
    class_names = sorted({r.label for r in kept})
    cap_labels = np.array([class_names.index(r.label) for r in kept], dtype=np.int64)
    rng = make_rng(seed, 1)
    held = stratified_holdout(np.zeros(len(kept), np.int32), cap_labels, 1, len(class_names), test_fraction, rng)
    if held.all() or len(kept) < 2:
        raise HetbenchError(f"need at least 2 usable captures to split train/test by capture (have {len(kept)})")

    num_clients = len(devices) if num_clients is None else int(num_clients)
    per_device = allocate_clients(num_clients, weights, make_rng(seed, 2))
    client_names: list[str] = []
    first_client: dict[str, int] = {}
    for d in devices:
        first_client[d] = len(client_names)
        width = len(str(per_device[d] - 1))
        client_names += [f"{d}/{k:0{width}d}" for k in range(per_device[d])]

    split_rows: dict[str, dict[str, list]] = {
        s: {"image": [], "label": [], "device": [], "isp": [], "capture_id": [], "sample_id": []} for s in ("train", "test")
    }
    all_stats, stat_devices = [], []
    for r, is_test in zip(kept, held):
        rows = split_rows["test" if is_test else "train"]
        for d, png, st in zip(devices, r.images, r.stats):
            rows["image"].append(png)
            rows["label"].append(class_names.index(r.label))
            rows["device"].append(d)
            rows["isp"].append(isp_of[d])
            rows["capture_id"].append(r.capture_id)
            rows["sample_id"].append(f"{r.capture_id}@{d}")
            all_stats.append(st)
            stat_devices.append(d)

    train_dev = np.array(split_rows["train"]["device"])
    assignment = np.empty(train_dev.size, dtype=np.int32)
    deal_rng = make_rng(seed, 3)
    for d in devices:
        rows = np.flatnonzero(train_dev == d)
        k = per_device[d]
        deal = np.resize(np.arange(k, dtype=np.int32), rows.size)
        assignment[rows[deal_rng.permutation(rows.size)]] = first_client[d] + deal
    splits = {s: _dataset(split_rows[s], class_names) for s in ("train", "test")}
    labels = {s: np.asarray(split_rows[s]["label"], dtype=np.int64) for s in ("train", "test")}
    table = SampleTable(
        splits=splits, label_column="label", class_names=class_names, labels=labels, id_column="sample_id",
        source=source, description=description, license=license,
    )
    part = Partition(assignment, len(client_names), client_names, dict(recipe, input_fingerprint=table.fingerprint))
    n_test = len(split_rows["test"]["label"])
    order = np.lexsort((np.arange(assignment.size), assignment))
    outputs = {
        "train": SplitRows("train", order.astype(np.int64), assignment[order]),
        "test": SplitRows("test", np.arange(n_test, dtype=np.int64), np.full(n_test, -1, np.int32)),
    }
    fs = FederatedSplit(
        table=table, partition=part, outputs=outputs,
        recipe={"partition": part.recipe, "test_split": "global", "test_fraction": None, "train_split": "train"},
        dropped={"train": {}},
    )
    summary = device_summary(all_stats, stat_devices)
    names, dist = device_distances(summary)
    extra = {
        "devices": {
            d: {"isp": isp_of[d], "clients": per_device[d], "weight": weights[d], "image_stats": summary[d]} for d in devices
        },
        "device_distance": {"devices": names, "matrix": dist},
        "captures": {"used": len(kept), "train": int((~held).sum()), "test": int(held.sum())},
        "skipped": skipped,
        "num_skipped": len(skipped),
    }
    sheet = [(d, png) for d, png in zip(devices, kept[0].images)]
    return DeviceSplit(fs, extra, sheet)


# ---- plots ----------------------------------------------------------------------------------
def plot_contact_sheet(sheet: list[tuple[str, bytes]], path: Path, title: str) -> None:
    """One capture rendered by every device/variant, labelled."""
    import cv2

    from hetbench.plotting import pyplot

    plt = pyplot()
    n = len(sheet)
    cols = min(n, 5)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.9 * rows), dpi=110, squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, (label, png) in zip(axes.ravel(), sheet):
        img = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        ax.imshow(img)
        ax.set_title(label.replace(",", "\n"), fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_device_distance(names: list[str], matrix: list[list[float]], path: Path) -> None:
    from hetbench.plotting import pyplot

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
    from hetbench.plotting import pyplot

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


def isp_plots(ds: DeviceSplit, title: str):
    """A callable for publish_split: writes the ISP plots into ``plots/`` and returns their paths."""

    def write(out_dir: Path) -> list[str]:
        plots = out_dir / "plots"
        plot_contact_sheet(ds.contact_sheet, plots / "contact_sheet.png", title)
        dd = ds.extra_report["device_distance"]
        plot_device_distance(dd["devices"], dd["matrix"], plots / "device_distance.png")
        plot_device_stats(ds.extra_report["devices"], plots / "device_image_stats.png")
        return ["plots/contact_sheet.png", "plots/device_distance.png", "plots/device_image_stats.png"]

    return write
