"""Renders -> the table of a device split, and the report entries every device family adds.

Samples are (capture, device). Train and test are split *by capture* (stratified by label) when
the table is made, so no test scene crop is ever seen in training under any device; the test split
is shared (``client_id = -1``) and carries the ``device`` column, so accuracy can be reported per
device. Which client each training row goes to is the
:class:`~hetbench.partitioners.devices.DevicePartitioner`'s decision, through the one pipeline
(:class:`hetbench.pipeline.PreparedSplit`).
"""

from __future__ import annotations

import os
from pathlib import Path

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.isp.jobs import CaptureJob, JobResult
from hetbench.pipeline import Extras
from hetbench.seeding import make_rng
from hetbench.splits import FederatedSplit, stratified_holdout
from hetbench.table import SampleTable

COLUMNS = ("image", "label", "device", "isp", "capture_id", "sample_id")


def device_dataset(rows: dict[str, list], class_names: list[str]):
    """A ``datasets.Dataset`` of rendered rows (PNG bytes, label index, device, ISP, capture, sample id)."""
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


def empty_rows() -> dict[str, dict[str, list]]:
    return {s: {c: [] for c in COLUMNS} for s in ("train", "test")}


def device_table(
    rows: dict[str, dict[str, list]], class_names: list[str], source: dict[str, Any], description: str, license: str
) -> SampleTable:
    """The train and test rows as a :class:`SampleTable` (label column ``label``, ids ``sample_id``)."""
    splits = {s: device_dataset(rows[s], class_names) for s in ("train", "test")}
    labels = {s: np.asarray(rows[s]["label"], dtype=np.int64) for s in ("train", "test")}
    return SampleTable(
        splits=splits, label_column="label", class_names=class_names, labels=labels, id_column="sample_id",
        source=source, description=description, license=license,
    )


@dataclass
class RenderedCaptures:
    """Every capture rendered by every device, split train/test by capture."""

    table: SampleTable
    stats: list[dict] = field(default_factory=list)  # image statistics, one per rendered row
    stat_devices: list[str] = field(default_factory=list)
    sheet: list[tuple[str, bytes]] = field(default_factory=list)  # one capture under every device
    captures: dict[str, int] | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)


def held_out_captures(labels: Sequence[str], test_fraction: float, seed: int) -> np.ndarray:
    """Which captures are held out for testing (a boolean mask): ``round(test_fraction x captures)``
    of them, stratified by label. Every device renders every capture, so the held-out captures are
    also each device's test images; counting them needs the labels only, not the renders.

    Examples
    --------
    >>> from hetbench.builders.device_split import held_out_captures
    >>> int(held_out_captures(["a"] * 6 + ["b"] * 4, 0.2, seed=0).sum())
    2
    """
    class_names = sorted(set(labels))
    cap_labels = np.array([class_names.index(x) for x in labels], dtype=np.int64)
    return stratified_holdout(np.zeros(len(labels), np.int32), cap_labels, 1, len(class_names), test_fraction, make_rng(seed, 1))


def rendered_table(
    jobs: Sequence[CaptureJob],
    results: Sequence[JobResult],
    devices: Sequence[str],
    isp_of: dict[str, str],
    test_fraction: float,
    seed: int,
    source: dict[str, Any],
    description: str,
    license: str,
) -> RenderedCaptures:
    """Rows of every usable capture under every device; captures held out for testing by label."""
    # a skipped file by its path under the folder the captures came from: no local path is published
    paths = [os.path.abspath(j.source.path) for j in jobs if hasattr(j.source, "path")]
    root = os.path.commonpath([os.path.dirname(p) for p in paths]) if paths else ""
    skipped = [{"file": j.capture_id if not hasattr(j.source, "path") else
                Path(os.path.relpath(os.path.abspath(j.source.path), root)).as_posix(), "reason": r.skipped}
               for j, r in zip(jobs, results) if r.skipped]
    kept = [r for r in results if not r.skipped]
    if not kept:
        raise HetbenchError(f"no capture could be rendered ({len(skipped)} skipped: {skipped[0]['reason'] if skipped else 'none'})")
    if not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"--test-fraction must be between 0 and 1 (got {test_fraction})")
    class_names = sorted({r.label for r in kept})
    held = held_out_captures([r.label for r in kept], test_fraction, seed)
    if held.all() or len(kept) < 2:
        raise HetbenchError(f"need at least 2 usable captures to split train/test by capture (have {len(kept)})")
    rows = empty_rows()
    out = RenderedCaptures(table=None)  # type: ignore[arg-type]
    for r, is_test in zip(kept, held):
        split_rows = rows["test" if is_test else "train"]
        for d, png, st in zip(devices, r.images, r.stats):
            split_rows["image"].append(png)
            split_rows["label"].append(class_names.index(r.label))
            split_rows["device"].append(d)
            split_rows["isp"].append(isp_of[d])
            split_rows["capture_id"].append(r.capture_id)
            split_rows["sample_id"].append(f"{r.capture_id}@{d}")
            out.stats.append(st)
            out.stat_devices.append(d)
    out.table = device_table(rows, class_names, source, description, license)
    out.sheet = [(d, png) for d, png in zip(devices, kept[0].images)]
    out.captures = {"used": len(kept), "train": int((~held).sum()), "test": int(held.sum())}
    out.skipped = skipped
    return out


def clients_per_device(split: FederatedSplit, devices: Sequence[str]) -> dict[str, int]:
    """How many clients each device has (client names are ``<device>/<k>``)."""
    counts = dict.fromkeys(devices, 0)
    for name in split.client_names:
        counts[name.rsplit("/", 1)[0]] += 1
    return counts


def device_extras(
    rendered: RenderedCaptures, isp_of: dict[str, str], weights: dict[str, float], title: str | None,
    settings: dict[str, dict[str, float]] | None = None, corpus: dict[str, Any] | None = None,
) -> Extras:
    """The ``extras`` of a device split: per-device ISP, clients, weight and image statistics, the
    device distance matrix, captures and skipped files, the corpus of a corpus recipe (its published
    statistics beside ours), and the device plots (when ``title``)."""
    from hetbench.isp.image_stats import device_distances, device_summary

    def extras(split: FederatedSplit):
        from hetbench.report.devices import device_plot_writer

        summary = device_summary(rendered.stats, rendered.stat_devices)
        names, dist = device_distances(summary)
        per_device = clients_per_device(split, list(isp_of))
        devices = {}
        for d in isp_of:
            entry: dict[str, Any] = {"isp": isp_of[d]}
            if settings is not None:
                entry["setting"] = settings[d]
            entry.update({"clients": per_device[d], "weight": weights[d], "image_stats": summary[d]})
            devices[d] = entry
        report: dict[str, Any] = {"devices": devices, "device_distance": {"devices": names, "matrix": dist}}
        if rendered.captures is not None:
            report["captures"] = rendered.captures
        report.update({"skipped": rendered.skipped, "num_skipped": len(rendered.skipped)})
        if corpus is not None:
            report["corpus"] = dict(corpus, classes=len(split.class_names))
        plots = None if title is None else device_plot_writer(rendered.sheet, devices, report["device_distance"], title)
        return report, plots

    return extras
