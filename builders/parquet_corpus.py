"""Real-device corpora published as Parquet on the Hugging Face Hub: one device per value of a column.

``hetbench build real-devices --recipe fed-isic2019 --dataset <local copy or hub id>`` reads Fed-ISIC2019
(FLamby, Ogier du Terrail et al., NeurIPS 2022 Datasets and Benchmarks; the Hub mirror
``flwrlabs/fed-isic2019``): 23,247 dermoscopy images of 8 lesion classes from 6 centres, three of them
the dermoscope types of HAM10000 (``HAM_vidir_molemax``, ``HAM_vidir_modern``, ``HAM_vienna_dias``). The
recipe (``manifests/recipes/fed-isic2019.yaml``, ``import.reader: hub-parquet``) names:

* ``device_column`` (``center``) and ``device_names``: the centre of every row; an integer centre is
  the index into ``device_names`` (FLamby's order), a string or class-label centre is its name;
* the corpus's own train/test split, kept as it is (FLamby's split, stratified by centre): the test
  split stays whole and shared, with its ``device`` column, so per-centre accuracy is measured on the
  centre's own test images;
* ``published``: FLamby's counts, which the card shows beside the build's.

The images are published as their stored bytes, each checked to decode first (within hetbench's pixel
bound, :func:`hetbench.sources.image_cells.decode_problem`): a corrupt, truncated or oversized image drops
its row, counted and listed in the report's ``skipped`` with the cells that name files outside the copy
(:mod:`hetbench.sources.image_cells`); clients are one per centre by default,
``--clients N`` allocates N by the centres' training images, ``--clients-per-device K`` K each, and
``--purity`` mixes them (:mod:`hetbench.partitioners.purity`).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from hetbench.builders.corpus_split import AS_CAPTURED
from hetbench.errors import HetbenchError
from hetbench.pipeline import PreparedSplit


def _device_names(ds, column: str, names: list[str]) -> list[str]:
    """Every row's device name from ``column`` (an index into ``names``, a class label, or a string)."""
    feature = ds.features[column]
    values = ds.with_format("arrow")[column].to_pylist()
    if type(feature).__name__ == "ClassLabel":
        values = [feature.names[v] if v is not None else None for v in values]
    out = []
    for v in values:
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            if not 0 <= int(v) < len(names):
                raise HetbenchError(f"column '{column}' holds centre {v}, outside the recipe's {len(names)} centres")
            out.append(names[int(v)])
        elif isinstance(v, str) and v:
            out.append(v)
        else:
            raise HetbenchError(f"column '{column}' has a row without a centre ({v!r})")
    return out


def prepare_parquet_corpus(spec: dict[str, Any], settings: dict[str, Any], recipe: str, dataset: str,
                           clients: int | None, clients_per_device: int | None, seed: int, quiet: bool,
                           on_checked: Callable[[], None] | None, purity: float,
                           client_allocation: Callable, num_proc: int | None = None) -> PreparedSplit:
    """The split of a Hub-Parquet corpus (module notes); ``client_allocation`` is the real-device builder's.

    Parameters
    ----------
    spec, settings : dict
        The recipe and its ``import`` settings.
    recipe : str
        The recipe's name.
    dataset : str
        The local copy of the Hub dataset (a folder of Parquet files, as the Hub lays them out) or its id
        (read from the Hugging Face cache: nothing is downloaded when ``HF_HUB_OFFLINE=1``).
    clients, clients_per_device, seed, quiet, on_checked, purity
        As for :func:`hetbench.builders.real_devices.prepare_real_devices`.
    """
    import datasets

    from hetbench.partitioners.devices import DevicePartitioner
    from hetbench.sources import load_table

    column, names = settings["device_column"], [str(n) for n in settings["device_names"]]
    from hetbench.progress import show_progress

    with show_progress(not quiet):  # every image is decode-checked as it is read (a bar with an ETA)
        table = load_table(dataset, settings.get("label_column", "label"), check_images=True)
    if set(table.splits) != {"train", "test"}:
        raise HetbenchError(f"the {recipe} recipe reads the corpus's own train and test splits; '{dataset}' has "
                            f"{', '.join(sorted(table.splits)) or 'none'}")
    for split, ds in table.splits.items():
        if column not in ds.column_names:
            raise HetbenchError(f"'{dataset}' split '{split}' has no '{column}' column (columns: {', '.join(ds.column_names)})")
        if not any(type(f).__name__ == "Image" for f in ds.features.values()):
            raise HetbenchError(f"'{dataset}' split '{split}' has no image column")
    skipped = table.skipped  # cells naming files outside the copy, corrupt, truncated or oversized images
    if not table.num_rows("train"):
        raise HetbenchError(f"no training image of '{dataset}' could be read ({len(skipped)} skipped"
                            + (f": {skipped[0]['reason']})" if skipped else ")"))
    devices_of = {s: _device_names(ds, column, names) for s, ds in table.splits.items()}
    present = set(devices_of["train"])
    devices = [d for d in names if d in present] + sorted(present - set(names))
    if purity != 1.0:
        from hetbench.partitioners.purity import check_purity

        check_purity(purity, len(devices), "devices")
    counts = {d: int(devices_of["train"].count(d)) for d in devices}
    clients, weights = client_allocation(clients, clients_per_device, devices, {d: float(counts[d]) for d in devices})
    if on_checked is not None:
        on_checked()
    for split in table.splits:
        device = datasets.Value("string")
        table.splits[split] = table.splits[split].add_column("device", devices_of[split], feature=device)
    table.source = {"dataset": f"{recipe}:{dataset}", "label_col": table.label_column, "id_col": None}
    shown = os.path.basename(os.path.abspath(dataset)) if os.path.exists(dataset) else dataset  # a name, never a path
    table.description = f"{str(spec.get('description', recipe)).split(':')[0]} (copy '{shown}')"
    table.license = spec.get("license", "other")
    params = {"recipe": recipe, "dataset": dataset, "clients": None if clients_per_device else clients,
              "clients_per_device": clients_per_device}
    if purity != 1.0:
        params["purity"] = float(purity)
    partitioner = DevicePartitioner(clients, weights, "device", "deal", build={"method": "real-devices", "params": params},
                                    purity=purity)
    test_counts = {d: int(devices_of["test"].count(d)) for d in devices}
    return PreparedSplit(table, partitioner, seed, "global", extras=_extras(spec, devices, weights, counts, test_counts, skipped))


def _extras(spec: dict[str, Any], devices: list[str], weights: dict[str, float], train: dict[str, int],
            test: dict[str, int], skipped: list[dict[str, Any]]):
    """Per centre its clients, weight and images; the corpus's published counts beside the build's."""
    from hetbench.builders.device_split import clients_per_device
    from hetbench.pipeline import skipped_entries

    def extras(split):
        per_device = clients_per_device(split, devices)
        entries = {d: {"isp": AS_CAPTURED, "clients": per_device[d], "weight": weights[d], "train_images": train[d],
                       "test_images": test[d]} for d in devices}
        ours = {"images": sum(train.values()) + sum(test.values()), "classes": len(split.class_names),
                "devices": len(devices)}
        ours.update({f"{d} train": train[d] for d in devices})
        ours.update({f"{d} test": test[d] for d in devices})
        report = {"devices": entries, "captures": {"train": sum(train.values()), "test": sum(test.values())},
                  "corpus": {"recipe": spec["name"], **{k: v for k, v in ours.items() if k in ("images", "classes", "devices")},
                             "counts": ours, "published": spec.get("published", {})},
                  **skipped_entries(skipped)}
        return report, None

    return extras


__all__ = ["prepare_parquet_corpus"]
