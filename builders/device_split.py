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
from typing import Any, Iterable, Sequence

import numpy as np

from hetbench.builders.row_spill import RowSpill
from hetbench.errors import HetbenchError
from hetbench.isp.jobs import CaptureJob, JobResult
from hetbench.pipeline import Extras
from hetbench.seeding import make_rng
from hetbench.splits import FederatedSplit, stratified_holdout
from hetbench.table import SampleTable

COLUMNS = ("image", "label", "device", "isp", "capture_id", "sample_id")


def device_features(class_names: list[str]):
    """The features of a device split's rows: image, label (a ``ClassLabel`` of ``class_names``), device,
    ISP, capture and sample id (:data:`COLUMNS`)."""
    import datasets

    return datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=class_names),
            "device": datasets.Value("string"),
            "isp": datasets.Value("string"),
            "capture_id": datasets.Value("string"),
            "sample_id": datasets.Value("string"),
        }
    )


def device_dataset(rows: dict[str, list], class_names: list[str]):
    """A ``datasets.Dataset`` of rendered rows held in memory (PNG bytes, label index, device, ISP, capture,
    sample id); :func:`spilled_table` makes the same table from rows spilled to disk."""
    import datasets

    data = dict(rows)
    data["image"] = [{"bytes": b, "path": None} for b in rows["image"]]
    return datasets.Dataset.from_dict(data, features=device_features(class_names))


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


def spilled_table(
    spill: RowSpill, rows: dict[str, dict[str, list]], class_names: list[str], source: dict[str, Any], description: str,
    license: str,
) -> SampleTable:
    """The train and test rows as a :class:`SampleTable`, their images read from ``spill``: ``rows`` as for
    :func:`device_table`, but its ``image`` column holds spill row numbers (:meth:`RowSpill.add`), not bytes.
    The tables are the ones :func:`device_table` makes from the bytes themselves; the spill's folder is
    removed once they are made (their images stay mapped).

    Parameters
    ----------
    spill : RowSpill
        Where the images are.
    rows : dict
        ``train`` / ``test`` -> column -> values (:data:`COLUMNS`; ``label`` as class indices).
    class_names, source, description, license
        As for :func:`device_table`.

    Examples
    --------
    >>> from hetbench.builders.device_split import empty_rows, spilled_table
    >>> from hetbench.builders.row_spill import RowSpill
    >>> spill, rows = RowSpill(), empty_rows()
    >>> for split, png in (("train", b"a"), ("test", b"b"), ("train", b"c")):
    ...     for column, value in zip(COLUMNS, (spill.add(png), 0, "d", "isp", png.decode(), png.decode())):
    ...         rows[split][column].append(value)
    >>> table = spilled_table(spill, rows, ["scene"], {}, "", "other")
    >>> table.column("train", "sample_id").tolist(), table.num_rows("test")
    (['a', 'c'], 1)
    """
    features = device_features(class_names)
    try:
        splits = {s: spill.dataset(s, rows[s]["image"], {c: rows[s][c] for c in COLUMNS if c != "image"}, features)
                  for s in ("train", "test")}
    finally:
        spill.close()
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
    results: Iterable[JobResult],
    devices: Sequence[str],
    isp_of: dict[str, str],
    test_fraction: float,
    seed: int,
    source: dict[str, Any],
    description: str,
    license: str,
) -> RenderedCaptures:
    """Rows of every usable capture under every device; captures held out for testing by label, or as
    their jobs say (``CaptureJob.held_out``, the embedded photographs' ``unseen-region`` test crops).

    ``results`` may be a stream (:func:`hetbench.builders.captures.run_jobs` with ``stream=True``): each
    capture's images go to disk as it arrives (:class:`RowSpill`), so memory holds one capture at a time,
    not the split; the tables then map them (:func:`spilled_table`). A capture that could not be rendered
    is skipped, counted and listed.
    """
    if not 0.0 < test_fraction < 1.0:  # before the first capture is rendered
        raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {test_fraction})")
    # a skipped file by its path under the folder the captures came from: no local path is published
    paths = [os.path.abspath(j.source.path) for j in jobs if hasattr(j.source, "path")]
    root = os.path.commonpath([os.path.dirname(p) for p in paths]) if paths else ""
    out = RenderedCaptures(table=None)  # type: ignore[arg-type]
    kept: list[tuple[str, str, int]] = []  # (capture id, label, its first spill row)
    chosen: list[bool | None] = []  # a kept capture's held_out, where its job chose it (unseen-region test crops)
    spill = RowSpill()
    try:
        for j, r in zip(jobs, results):
            if r.skipped:
                where = j.capture_id if not hasattr(j.source, "path") else \
                    Path(os.path.relpath(os.path.abspath(j.source.path), root)).as_posix()
                out.skipped.append({"file": where, "reason": r.skipped})
                continue
            kept.append((r.capture_id, r.label, len(spill)))
            chosen.append(j.held_out)
            for d, png, st in zip(devices, r.images, r.stats):
                spill.add(png)
                out.stats.append(st)
                out.stat_devices.append(d)
            if not out.sheet:
                out.sheet = [(d, png) for d, png in zip(devices, r.images)]
        if not kept:
            skipped = out.skipped
            raise HetbenchError(f"no capture could be rendered ({len(skipped)} skipped: {skipped[0]['reason'] if skipped else 'none'})")
        class_names = sorted({label for _, label, _ in kept})
        if any(c is not None for c in chosen):  # each job says whether it is a test capture
            held = np.array([bool(c) for c in chosen])
            if held.all() or not held.any():
                raise HetbenchError(f"the usable captures are all {'test' if held.all() else 'training'} captures "
                                    f"({len(kept)} of {len(jobs)} could be rendered)")
        else:
            held = held_out_captures([label for _, label, _ in kept], test_fraction, seed)
        if held.all() or len(kept) < 2:
            raise HetbenchError(f"need at least 2 usable captures to split train/test by capture (have {len(kept)})")
    except BaseException:
        spill.close()
        raise
    rows = empty_rows()
    for (capture_id, label, first), is_test in zip(kept, held):
        split_rows = rows["test" if is_test else "train"]
        for k, d in enumerate(devices):
            split_rows["image"].append(first + k)
            split_rows["label"].append(class_names.index(label))
            split_rows["device"].append(d)
            split_rows["isp"].append(isp_of[d])
            split_rows["capture_id"].append(capture_id)
            split_rows["sample_id"].append(f"{capture_id}@{d}")
    out.table = spilled_table(spill, rows, class_names, source, description, license)
    out.captures = {"used": len(kept), "train": int((~held).sum()), "test": int(held.sum())}
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
    from hetbench.isp.image_stats import DISTANCE_BASIS, device_distances, device_summary

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
        plots = None if title is None else device_plot_writer(rendered.sheet, devices, report["device_distance"], title,
                                                              DISTANCE_BASIS)
        return report, plots

    return extras
