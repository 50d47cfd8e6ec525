"""``hetbench build devices --synthetic-color N``: HeteroSwitch section 6.5's synthetic devices.

N device types, each a fixed random setting of brightness, contrast, saturation and hue (drawn once
from the seed, in the ranges of the usual colour-jitter augmentation: factors in [0.6, 1.4], hue
shift in [-0.1, 0.1] of a turn), applied to any labelled image table. Training samples are split
IID over the clients, clients are allocated to devices uniformly, and each training image is seen
through its client's device. Every test image is rendered by every device (``client_id = -1``,
``device`` column), so accuracy can be reported per device as in HeteroSwitch Fig. 8.

Grey images (``builtin:digits``) are colourised first - a random foreground and background colour
per image, fixed by the seed - since hue and saturation do nothing to grey.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetbench.builders.isp_common import allocate_clients
from hetbench.seeding import make_rng
from hetbench.builders.isp_split import DeviceSplit, _dataset
from hetbench.errors import HetbenchError
from hetbench.partition import Partition
from hetbench.splits import FederatedSplit, SplitRows, stratified_holdout
from hetbench.table import SampleTable

RANGES = {"brightness": (0.6, 1.4), "contrast": (0.6, 1.4), "saturation": (0.6, 1.4), "hue": (-0.1, 0.1)}


def device_settings(num_devices: int, rng: np.random.Generator) -> list[dict[str, float]]:
    """One fixed jitter setting per synthetic device."""
    return [
        {k: float(round(rng.uniform(lo, hi), 4)) for k, (lo, hi) in RANGES.items()} for _ in range(num_devices)
    ]


def setting_name(setting: dict[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in setting.items())


def colourise(grey: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(N, H, W) uint8 grey -> (N, H, W, 3): grey level blends a random background into a random
    foreground colour per image."""
    n = grey.shape[0]
    fg = rng.uniform(0.35, 1.0, size=(n, 1, 1, 3))
    bg = rng.uniform(0.0, 0.35, size=(n, 1, 1, 3))
    t = grey[..., None].astype(np.float32) / 255.0
    return np.clip(np.rint((bg + (fg - bg) * t) * 255.0), 0, 255).astype(np.uint8)


def jitter(rgb: np.ndarray, setting: dict[str, float]) -> np.ndarray:
    """Apply one device's brightness, contrast, saturation and hue to uint8 RGB images (..., H, W, 3).

    Brightness scales the image; contrast blends with the image's mean grey; saturation blends with
    the pixel's grey; hue rotates the HSV hue (torchvision ColorJitter's definitions).
    """
    import cv2

    x = rgb.astype(np.float32) / 255.0
    weights = np.array([0.299, 0.587, 0.114], dtype=np.float32)
    x = np.clip(x * setting["brightness"], 0, 1)
    grey = x @ weights
    mean = grey.reshape(grey.shape[:-2] + (-1,)).mean(axis=-1)[..., None, None, None]
    x = np.clip((x - mean) * setting["contrast"] + mean, 0, 1)
    grey = (x @ weights)[..., None]
    x = np.clip(grey + (x - grey) * setting["saturation"], 0, 1)
    flat = (x.reshape(-1, x.shape[-3] * x.shape[-2], 3) if x.ndim == 4 else x.reshape(1, -1, 3))
    hsv = cv2.cvtColor(flat.astype(np.float32), cv2.COLOR_RGB2HSV)  # H in degrees [0, 360)
    hsv[..., 0] = np.mod(hsv[..., 0] + setting["hue"] * 360.0, 360.0)
    out = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB).reshape(x.shape)
    return np.clip(np.rint(out * 255.0), 0, 255).astype(np.uint8)


def _images(table: SampleTable, split: str) -> np.ndarray:
    """Every image of a split as uint8 RGB (N, H, W, 3); images must share one size."""
    import io

    from PIL import Image

    ds = table.splits[split]
    col = next((c for c, f in ds.features.items() if type(f).__name__ == "Image"), None)
    if col is None:
        raise HetbenchError(f"--synthetic-color needs an image column; the data has: {', '.join(ds.column_names)}")
    arrays = []
    for item in ds.with_format("arrow")[col].to_pylist():
        img = Image.open(io.BytesIO(item["bytes"])) if item.get("bytes") else Image.open(item["path"])
        arrays.append(np.asarray(img.convert("L") if img.mode in ("L", "1", "I", "I;16") else img.convert("RGB")))
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise HetbenchError(f"--synthetic-color needs images of one size; found {len(shapes)} sizes")
    return np.stack(arrays)


def _png_batch(images: np.ndarray, size: int | None) -> list[bytes]:
    import cv2

    out = []
    for img in images:
        if size is not None and img.shape[0] != size:
            img = cv2.resize(img, (size, size), interpolation=cv2.INTER_NEAREST if img.shape[0] < size else cv2.INTER_AREA)
        ok, buf = cv2.imencode(".png", np.ascontiguousarray(img[..., ::-1]))
        out.append(buf.tobytes())
    return out


def build_synthetic_color(
    num_devices: int = 10,
    dataset: str = "builtin:digits",
    label_col: str | None = None,
    clients: int | None = None,
    size: int | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    quiet: bool = False,
) -> DeviceSplit:
    from hetbench.isp.image_stats import device_distances, device_summary, image_stats
    from hetbench.partitioners.iid import iid_assignment
    from hetbench.progress import progress_bar
    from hetbench.sources import load_table

    if not 2 <= num_devices <= 1000:
        raise HetbenchError(f"--synthetic-color must be between 2 and 1000 devices (got {num_devices})")
    if size is not None and not 8 <= size <= 4096:
        raise HetbenchError(f"--size must be between 8 and 4096 pixels (got {size})")
    clients = num_devices if clients is None else int(clients)
    if clients < num_devices:
        raise HetbenchError(f"--clients {clients} is fewer than the {num_devices} devices; every device needs a client")
    src = load_table(dataset, label_col)
    settings = device_settings(num_devices, make_rng(seed, 20))
    devices = [f"synthetic-{d:02d}" for d in range(num_devices)]
    isp_of = {d: setting_name(s) for d, s in zip(devices, settings)}

    # train / test rows of the source
    train_imgs = _images(src, "train")
    if "test" in src.splits:
        test_imgs, test_labels, test_ids = _images(src, "test"), src.labels["test"], src.ids("test")
        tr_labels, tr_ids = src.labels["train"], src.ids("train")
    else:
        if not 0.0 < test_fraction < 1.0:
            raise HetbenchError(f"--test-fraction must be between 0 and 1 (got {test_fraction})")
        held = stratified_holdout(np.zeros(len(train_imgs), np.int32), src.labels["train"], 1, src.num_classes, test_fraction, make_rng(seed, 21))
        test_imgs, test_labels, test_ids = train_imgs[held], src.labels["train"][held], src.ids("train")[held]
        train_imgs, tr_labels, tr_ids = train_imgs[~held], src.labels["train"][~held], src.ids("train")[~held]
    if clients > len(train_imgs):
        raise HetbenchError(f"more clients ({clients}) than training samples ({len(train_imgs)})")
    if train_imgs.ndim == 3:
        train_imgs = colourise(train_imgs, make_rng(seed, 22))
        test_imgs = colourise(test_imgs, make_rng(seed, 23))

    sizes = np.full(clients, len(train_imgs) // clients)
    sizes[: len(train_imgs) % clients] += 1
    client_of = iid_assignment(len(train_imgs), sizes, make_rng(seed, 24))
    per_device = allocate_clients(clients, {d: 1.0 for d in devices}, make_rng(seed, 25))
    device_of_client = np.repeat(np.arange(num_devices), [per_device[d] for d in devices])
    device_of_client = make_rng(seed, 26).permutation(device_of_client)
    client_names = [f"{devices[device_of_client[c]]}/{c:03d}" for c in range(clients)]

    rows = {s: {"image": [], "label": [], "device": [], "isp": [], "capture_id": [], "sample_id": []} for s in ("train", "test")}
    assignment_rows: list[int] = []
    all_stats, stat_devices = [], []
    sheet = []
    with progress_bar(f"rendering {num_devices} synthetic devices", num_devices, quiet) as bar:
        for d, dev in enumerate(devices):
            mine = np.flatnonzero(device_of_client[client_of] == d)
            tr = jitter(train_imgs[mine], settings[d])
            te = jitter(test_imgs, settings[d])
            for split, imgs, labels, ids, cl in (
                ("train", tr, tr_labels[mine], tr_ids[mine], client_of[mine]),
                ("test", te, test_labels, test_ids, None),
            ):
                pngs = _png_batch(imgs, size)
                r = rows[split]
                r["image"] += pngs
                r["label"] += labels.tolist()
                r["device"] += [dev] * len(pngs)
                r["isp"] += [isp_of[dev]] * len(pngs)
                r["capture_id"] += [str(i) for i in ids]
                r["sample_id"] += [f"{i}@{dev}" for i in ids]
                if cl is not None:
                    assignment_rows += cl.tolist()
            sample = te[: min(len(te), 200)]
            all_stats += [image_stats(img) for img in sample]
            stat_devices += [dev] * len(sample)
            sheet.append((f"{dev},{isp_of[dev]}", _png_batch(te[:1], 96)[0]))  # the sheet puts each setting on a line
            bar.update(1)

    splits = {s: _dataset(rows[s], src.class_names) for s in ("train", "test")}
    labels = {s: np.asarray(rows[s]["label"], dtype=np.int64) for s in ("train", "test")}
    source = {"dataset": dataset, "label_col": src.label_column, "id_col": "sample_id"}
    table = SampleTable(
        splits=splits, label_column="label", class_names=src.class_names, labels=labels, id_column="sample_id",
        source=source, description=f"{src.description}, seen through {num_devices} synthetic devices "
        "(HeteroSwitch sec. 6.5: fixed random brightness/contrast/saturation/hue per device)",
        license=src.license,
    )
    params: dict[str, Any] = {"synthetic_color": num_devices, "dataset": dataset, "label_col": label_col,
                              "clients": clients, "size": size, "test_fraction": test_fraction}
    recipe = {"method": "synthetic-color", "params": params, "seed": seed, "split": "train",
              "input_fingerprint": table.fingerprint}
    assignment = np.asarray(assignment_rows, dtype=np.int32)
    part = Partition(assignment, clients, client_names, recipe)
    order = np.lexsort((np.arange(assignment.size), assignment))
    n_test = len(rows["test"]["label"])
    outputs = {
        "train": SplitRows("train", order.astype(np.int64), assignment[order]),
        "test": SplitRows("test", np.arange(n_test, dtype=np.int64), np.full(n_test, -1, np.int32)),
    }
    fs = FederatedSplit(table, part, outputs,
                        {"partition": part.recipe, "test_split": "global", "test_fraction": None, "train_split": "train"},
                        {"train": {}})
    summary = device_summary(all_stats, stat_devices)
    names, dist = device_distances(summary)
    extra = {
        "devices": {d: {"isp": isp_of[d], "setting": s, "clients": per_device[d], "weight": 1.0, "image_stats": summary[d]}
                    for d, s in zip(devices, settings)},
        "device_distance": {"devices": names, "matrix": dist},
        "skipped": [],
        "num_skipped": 0,
    }
    return DeviceSplit(fs, extra, sheet)


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run the recorded recipe (for ``hetbench verify``)."""
    part = manifest["recipe"]["partition"]
    p = dict(part["params"])
    return build_synthetic_color(
        p["synthetic_color"], p["dataset"], p.get("label_col"), p["clients"], p.get("size"),
        p["test_fraction"], part["seed"], quiet=True,
    ).split
