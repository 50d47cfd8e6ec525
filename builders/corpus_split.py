"""A real-device corpus once its images are read: train and test by capture, its labels, its device
partitioner and its report entries, shared by the two readers of ``hetbench build real-devices`` (a folder of
photographs, :mod:`hetbench.builders.real_devices`; RAW files rendered by the baseline ISP,
:mod:`hetbench.builders.raw_cameras`).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from hetbench.builders.captures import check_clients, check_clients_fit
from hetbench.builders.device_split import empty_rows, held_out_captures, spilled_table
from hetbench.errors import HetbenchError
from hetbench.partitioners.devices import DevicePartitioner
from hetbench.pipeline import PreparedSplit

#: the ``isp`` column of a real device: the photographs as the device's own camera app made them
AS_CAPTURED = "as-captured"


def folder_name(path: str) -> str:
    """A folder's name for the card, never its path (the card is published; :mod:`hetbench.local_paths`)."""
    return os.path.basename(os.path.abspath(path)) or str(path)


def client_allocation(clients: int | None, clients_per_device: int | None, devices: list[str],
                      weights: dict[str, float]) -> tuple[int | None, dict[str, float]]:
    """(clients, device weights): ``--clients N`` with ``weights``, or ``--clients-per-device K`` (K x
    devices clients, uniform weights); checked (one of the two at most, every device a client).

    Examples
    --------
    >>> client_allocation(None, 2, ["a", "b"], {"a": 3.0, "b": 1.0})
    (4, {'a': 1.0, 'b': 1.0})
    """
    if clients is not None and clients_per_device is not None:
        raise HetbenchError("give `clients` or `clients_per_device`, not both")
    if clients_per_device is not None:
        if clients_per_device < 1:
            raise HetbenchError(f"`clients_per_device` must be at least 1 (got {clients_per_device})")
        clients, weights = clients_per_device * len(devices), {d: 1.0 for d in devices}
    check_clients(clients, devices)
    return clients, weights


def split_by_capture(kept, test_fraction: float, seed: int, per_device: bool = False) -> tuple[dict, dict[str, int]]:
    """Rows of every kept image (``(CorpusImage, its spill row)``), train/test by capture, stratified by the
    capture's label; with ``per_device`` (each capture on one device), by device and label, so that every
    device keeps at least one training capture (the per-client hold-out of
    :func:`hetbench.splits.stratified_holdout`). The ``image`` column holds the spill rows."""
    first: dict[str, tuple[str, str]] = {}
    for im, _ in kept:
        first.setdefault(im.capture, (im.label, im.device))
    captures = sorted(first)
    if per_device:
        from hetbench.seeding import make_rng
        from hetbench.splits import stratified_holdout

        labels = sorted({lab for lab, _ in first.values()})
        devs = sorted({dev for _, dev in first.values()})
        held = stratified_holdout(np.array([devs.index(first[c][1]) for c in captures], np.int32),
                                  np.array([labels.index(first[c][0]) for c in captures], np.int64),
                                  len(devs), len(labels), test_fraction, make_rng(seed, 1))
    else:
        held = held_out_captures([first[c][0] for c in captures], test_fraction, seed)
    if held.all() or not held.any():
        raise HetbenchError(f"need captures in both train and test to split by capture (have {len(captures)})")
    is_test = dict(zip(captures, held.tolist()))
    rows = empty_rows()
    for im, row in kept:
        r = rows["test" if is_test[im.capture] else "train"]
        r["image"].append(row)
        r["label"].append(im.label)
        r["device"].append(im.device)
        r["isp"].append(AS_CAPTURED)
        r["capture_id"].append(im.capture)
        r["sample_id"].append(im.file)
    counts = {"captures": len(captures), "train": int((~held).sum()), "test": int(held.sum())}
    return rows, counts


def stable_reason(reason: str | None) -> str | None:
    """A skip reason without the memory addresses an error message may quote (PIL names the file object it
    could not identify, ``<_io.BytesIO object at 0x7f...>``), so the report is the same bytes on every run.

    Examples
    --------
    >>> stable_reason("unreadable image: cannot identify image file <_io.BytesIO object at 0x7f27e7d79350>")
    'unreadable image: cannot identify image file <_io.BytesIO object>'
    """
    import re

    return None if reason is None else re.sub(r" at 0x[0-9a-fA-F]+>", ">", reason)


def corpus_extras(spec: dict[str, Any], setting_of: Callable[[str], dict] | None, devices: list[str],
            weights: dict[str, float], counts: dict[str, int], skipped: list[dict[str, str]], scanned: int):
    """Report entries: per device its clients, weight and images; the captures; the skipped files;
    the corpus's published statistics beside ours."""
    from hetbench.builders.device_split import clients_per_device

    def extras(split):
        per_device = clients_per_device(split, devices)
        train_dev = np.asarray(split.table.column("train", "device"))
        test_dev = np.asarray(split.table.column("test", "device"))
        entries = {}
        for d in devices:
            entry: dict[str, Any] = {"isp": AS_CAPTURED}
            if setting_of is not None:
                entry["setting"] = setting_of(d)
            entry.update({"clients": per_device[d], "weight": weights[d],
                          "train_images": int((train_dev == d).sum()), "test_images": int((test_dev == d).sum())})
            entries[d] = entry
        report: dict[str, Any] = {
            "devices": entries,
            "captures": counts,
            "corpus": {"recipe": spec["name"], "images": scanned - len(skipped), "classes": len(split.class_names),
                       "devices": len(devices), "published": spec.get("published", {})},
            "skipped": skipped, "num_skipped": len(skipped),
        }
        return report, None

    return extras


def corpus_device_split(spec: dict[str, Any], recipe: str, data_dir: str, description: str, spill, rows: dict,
                        kept: list, params: dict[str, Any], clients: int, weights: dict[str, float], purity: float,
                        seed: int, extras, fit_rows: int | None = None) -> PreparedSplit:
    """The split of a corpus read into ``spill``, shared by both readers: each image's label as an index into
    the sorted class names, the table, and a device partitioner dealing ``clients`` by ``weights`` (its
    recipe records ``purity`` only when set, so the recipes of pure splits stay as they were). ``fit_rows``:
    the training rows the clients must fit in, checked once the table is made."""
    class_names = sorted({im.label for im, _ in kept})
    for split in rows.values():
        split["label"] = [class_names.index(x) for x in split["label"]]
    source = {"dataset": f"{recipe}:{data_dir}", "label_col": "label", "id_col": "sample_id"}
    table = spilled_table(spill, rows, class_names, source, description, spec.get("license", "other"))
    if fit_rows is not None:
        check_clients_fit(clients, weights, fit_rows, training=True)
    if purity != 1.0:
        params["purity"] = float(purity)
    partitioner = DevicePartitioner(clients, weights, "device", "deal", build={"method": "real-devices", "params": params},
                                    purity=purity)
    return PreparedSplit(table, partitioner, seed, "global", extras=extras)
