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

import os
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.builders.device_split import RenderedCaptures, device_extras, device_table, empty_rows
from hetbench.errors import HetbenchError
from hetbench.png import encode_png_opencv
from hetbench.naming import SPLITS_ROOT, dataset_stem
from hetbench.partitioners.devices import DevicePartitioner
from hetbench.pipeline import PreparedSplit
from hetbench.seeding import check_seed, make_rng
from hetbench.splits import stratified_holdout
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


def _grey(x: np.ndarray) -> np.ndarray:
    """Rec. 601 luma of float32 RGB (..., 3), elementwise: a matrix product would go through BLAS,
    whose kernel (and so the last bit of every sum) depends on the CPU."""
    return x[..., 0] * np.float32(0.299) + x[..., 1] * np.float32(0.587) + x[..., 2] * np.float32(0.114)


def rotate_hue(x: np.ndarray, turns: float) -> np.ndarray:
    """Rotate the HSV hue of float32 RGB ``x`` (..., 3) in [0, 1] by ``turns`` of the colour wheel.

    Value and saturation are kept; the hexcone model of Smith (1978), as torchvision's ``adjust_hue``
    uses. Written in element-wise float32 numpy (``+ - * /``, ``floor``, comparisons), each operation
    correctly rounded, so the result has the same bits on every CPU and with every library release
    (OpenCV's float ``cvtColor`` to HSV changed its bits in 5.1).

    Parameters
    ----------
    x : numpy.ndarray
        float32 RGB, last axis of 3, values in [0, 1].
    turns : float
        The hue shift, in turns (0.5 = 180 degrees).

    Returns
    -------
    numpy.ndarray
        float32, the shape of ``x``.

    References
    ----------
    A. R. Smith, "Color Gamut Transform Pairs", SIGGRAPH 1978.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.builders.synthetic_color import rotate_hue
    >>> rotate_hue(np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5]], np.float32), 1 / 3).tolist()
    [[0.0, 1.0, 0.0], [0.5, 0.5, 0.5]]
    """
    f32 = np.float32
    r, g, b = (np.asarray(x[..., c], f32) for c in range(3))
    v = np.maximum(np.maximum(r, g), b)
    delta = v - np.minimum(np.minimum(r, g), b)
    grey = delta == 0
    safe = np.where(grey, f32(1), delta)
    # hue in sixths of a turn, in [-1, 5): the sector of the largest channel plus the offset in it
    h = np.where(v == r, (g - b) / safe, np.where(v == g, f32(2) + (b - r) / safe, f32(4) + (r - g) / safe))
    h = h + f32(6) * f32(turns)
    h = h - f32(6) * np.floor(h / f32(6))  # [0, 6)
    h = np.where(h >= f32(6), f32(0), h)
    sector = np.floor(h)
    frac = h - sector
    sat = np.where(grey, f32(0), delta / np.where(v == 0, f32(1), v))
    p = v * (f32(1) - sat)
    q = v * (f32(1) - sat * frac)
    t = v * (f32(1) - sat * (f32(1) - frac))
    k = sector.astype(np.int8)
    out_r = np.choose(k, [v, q, p, p, t, v])
    out_g = np.choose(k, [t, v, v, q, p, p])
    out_b = np.choose(k, [p, p, t, v, v, q])
    return np.stack([out_r, out_g, out_b], axis=-1).astype(f32)


def jitter(rgb: np.ndarray, setting: dict[str, float]) -> np.ndarray:
    """Apply one device's brightness, contrast, saturation and hue to uint8 RGB images (..., H, W, 3).

    Brightness scales the image; contrast blends with the image's mean grey; saturation blends with
    the pixel's grey; hue rotates the HSV hue (torchvision ColorJitter's definitions; :func:`rotate_hue`).
    """
    x = rgb.astype(np.float32) / 255.0
    x = np.clip(x * setting["brightness"], 0, 1)
    grey = _grey(x)
    mean = grey.reshape(grey.shape[:-2] + (-1,)).mean(axis=-1)[..., None, None, None]
    x = np.clip((x - mean) * setting["contrast"] + mean, 0, 1)
    grey = _grey(x)[..., None]
    x = np.clip(grey + (x - grey) * setting["saturation"], 0, 1).astype(np.float32)
    out = rotate_hue(x, float(setting["hue"]))
    return np.clip(np.rint(out * 255.0), 0, 255).astype(np.uint8)


def _images(table: SampleTable, split: str) -> np.ndarray:
    """Every image of a split as uint8 RGB (N, H, W, 3); images must share one size. Every row is
    rendered, so none is skipped: an image over hetbench's pixel bound (:mod:`hetbench.image_limits`),
    missing or unreadable is a :class:`HetbenchError` naming its split and row."""
    from PIL import UnidentifiedImageError

    from hetbench.image_limits import open_image

    ds = table.splits[split]
    col = next((c for c, f in ds.features.items() if type(f).__name__ == "Image"), None)
    if col is None:
        raise HetbenchError(f"`synthetic_color` needs an image column; the data has: {', '.join(ds.column_names)}")
    arrays = []
    for row, item in enumerate(ds.with_format("arrow")[col].to_pylist()):
        what = f"--synthetic-color: row {row} of split '{split}'"
        if item is None or not (item.get("bytes") or item.get("path")):
            raise HetbenchError(f"{what} has no image")
        try:
            with open_image(item["bytes"] if item.get("bytes") else item["path"], what) as img:
                arrays.append(np.asarray(img.convert("L") if img.mode in ("L", "1", "I", "I;16") else img.convert("RGB")))
        except HetbenchError:
            raise
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise HetbenchError(f"{what}: cannot read the image ({type(exc).__name__}: {reason})") from None
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise HetbenchError(f"`synthetic_color` needs images of one size; found {len(shapes)} sizes")
    return np.stack(arrays)


def _png_batch(images: np.ndarray, size: int | None) -> list[bytes]:
    import cv2

    out = []
    for img in images:
        if size is not None and img.shape[0] != size:
            img = cv2.resize(img, (size, size), interpolation=cv2.INTER_NEAREST if img.shape[0] < size else cv2.INTER_AREA)
        out.append(encode_png_opencv(img))
    return out


def prepare_synthetic_color(
    num_devices: int = 10,
    dataset: str = "builtin:digits",
    label_col: str | None = None,
    clients: int | None = None,
    size: int | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    quiet: bool = False,
    title: str | None = None,
) -> PreparedSplit:
    """``num_devices`` synthetic colour devices over ``dataset``; the split, not yet published.

    Parameters
    ----------
    num_devices : int
        Number of synthetic devices (2-1000), each a fixed random jitter setting.
    dataset, label_col : str
        Any labelled image table and its label column.
    clients : int, optional
        Number of clients (default: one per device), IID over the training rows, a random device each.
    size : int, optional
        Side of the output images (default: the source's own).
    test_fraction : float
        Held-out share of the training rows when the source has no test split.
    seed, quiet
        Seed of every random choice; no progress bar.
    title : str, optional
        Title of the contact sheet; None writes no device plots.

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024, sec. 6.5 and Fig. 8 (synthetic device heterogeneity).

    Examples
    --------
    >>> from hetbench.builders.synthetic_color import prepare_synthetic_color
    >>> split = prepare_synthetic_color(3, clients=6, quiet=True).build()
    >>> split.num_clients, sorted({name.split("/")[0] for name in split.client_names})
    (6, ['synthetic-00', 'synthetic-01', 'synthetic-02'])
    """
    from hetbench.isp.image_stats import image_stats
    from hetbench.progress import progress_bar
    from hetbench.sources import load_table

    seed = check_seed(seed)
    if not 2 <= num_devices <= 1000:
        raise HetbenchError(f"`synthetic_color` must be between 2 and 1000 devices (got {num_devices})")
    if size is not None and not 8 <= size <= 4096:
        raise HetbenchError(f"`size` must be between 8 and 4096 pixels (got {size})")
    clients = num_devices if clients is None else int(clients)
    if clients < num_devices:
        raise HetbenchError(f"`clients` {clients} is fewer than the {num_devices} devices; every device needs a client")
    src = load_table(dataset, label_col)
    settings = device_settings(num_devices, make_rng(seed, 20))
    devices = [f"synthetic-{d:02d}" for d in range(num_devices)]
    isp_of = {d: setting_name(s) for d, s in zip(devices, settings)}
    weights = {d: 1.0 for d in devices}

    # train / test rows of the source
    train_imgs = _images(src, "train")
    if "test" in src.splits:
        test_imgs, test_labels, test_ids = _images(src, "test"), src.labels["test"], src.ids("test")
        tr_labels, tr_ids = src.labels["train"], src.ids("train")
    else:
        if not 0.0 < test_fraction < 1.0:
            raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {test_fraction})")
        held = stratified_holdout(np.zeros(len(train_imgs), np.int32), src.labels["train"], 1, src.num_classes, test_fraction, make_rng(seed, 21))
        test_imgs, test_labels, test_ids = train_imgs[held], src.labels["train"][held], src.ids("train")[held]
        train_imgs, tr_labels, tr_ids = train_imgs[~held], src.labels["train"][~held], src.ids("train")[~held]
    params: dict[str, Any] = {"synthetic_color": num_devices, "dataset": dataset, "label_col": label_col,
                              "clients": clients, "size": size, "test_fraction": test_fraction}
    partitioner = DevicePartitioner(clients, weights, "device", "iid", build={"method": "synthetic-color", "params": params})
    plan = partitioner.plan(len(train_imgs), seed)  # each row's client and each client's device, before rendering
    if train_imgs.ndim == 3:
        train_imgs = colourise(train_imgs, make_rng(seed, 22))
        test_imgs = colourise(test_imgs, make_rng(seed, 23))

    rows = empty_rows()
    rendered = RenderedCaptures(table=None)  # type: ignore[arg-type]
    with progress_bar(f"rendering {num_devices} synthetic devices", num_devices, quiet) as bar:
        for d, dev in enumerate(devices):
            mine = plan.rows_of_device(d)
            tr = jitter(train_imgs[mine], settings[d])
            te = jitter(test_imgs, settings[d])
            for split, imgs, labels, ids in (("train", tr, tr_labels[mine], tr_ids[mine]), ("test", te, test_labels, test_ids)):
                pngs = _png_batch(imgs, size)
                r = rows[split]
                r["image"] += pngs
                r["label"] += labels.tolist()
                r["device"] += [dev] * len(pngs)
                r["isp"] += [isp_of[dev]] * len(pngs)
                r["capture_id"] += [str(i) for i in ids]
                r["sample_id"] += [f"{i}@{dev}" for i in ids]
            sample = te[: min(len(te), 200)]
            rendered.stats += [image_stats(img) for img in sample]
            rendered.stat_devices += [dev] * len(sample)
            rendered.sheet.append((f"{dev},{isp_of[dev]}", _png_batch(te[:1], 96)[0]))  # the sheet puts each setting on a line
            bar.update(1)

    source = {"dataset": dataset, "label_col": src.label_column, "id_col": "sample_id"}
    description = (f"{src.description}, seen through {num_devices} synthetic devices "
                   "(HeteroSwitch sec. 6.5: fixed random brightness/contrast/saturation/hue per device)")
    rendered.table = device_table(rows, src.class_names, source, description, src.license)
    extras = device_extras(rendered, isp_of, weights, title, settings=dict(zip(devices, settings)))
    return PreparedSplit(rendered.table, partitioner, seed, "global", extras=extras)


def build_synthetic_color(
    out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    num_devices: int = 10, dataset: str = "builtin:digits", label_col: str | None = None, clients: int | None = None,
    size: int | None = None, test_fraction: float = 0.2, seed: int = 0,
) -> tuple[Path, dict[str, Any]]:
    """Render ``num_devices`` synthetic colour devices over ``dataset`` and publish the device split
    (``hetbench build devices --synthetic-color N``); returns the folder and its report.

    Each device is a fixed random setting of brightness, contrast, saturation (factors in [0.6, 1.4])
    and hue (a shift in [-0.1, 0.1] of a turn), drawn once from the seed; training rows are split IID over
    the clients and seen through their client's device, and every test row is rendered by every device.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/devices-synthetic<N>-<data set>-s<seed>``).
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False).
    quiet : bool
        No progress bar (default False).
    num_devices : int
        Number of synthetic devices, 2-1000 (default 10; the CLI's ``--synthetic-color N``).
    dataset : str
        Any labelled image table :func:`hetbench.load_table` reads (default ``"builtin:digits"``; grey
        images are colourised first, since hue and saturation do nothing to grey).
    label_col : str, optional
        Its label column (default None: ``label``).
    clients : int, optional
        Number of clients, at least ``num_devices`` (default None: one per device).
    size : int, optional
        Side of the output images in pixels, 8-4096 (default None: the source's own size).
    test_fraction : float
        Held-out share of the training rows when the source has no test split (default 0.2).
    seed : int
        Seed of the device settings and of every other random choice (default 0).

    Returns
    -------
    folder : pathlib.Path
        The published folder.
    report : dict
        Its ``report.json`` (``num_devices`` with each device's jitter setting, ...).

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024, sec. 6.5 and Fig. 8 (synthetic device heterogeneity).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.builders.synthetic_color import build_synthetic_color
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder, report = build_synthetic_color(Path(tmp.name) / "colour", num_devices=3, clients=6, quiet=True)
    >>> sorted(report["devices"]), report["num_clients"]
    (['synthetic-00', 'synthetic-01', 'synthetic-02'], 6)
    >>> tmp.cleanup()
    """
    from hetbench.atomic import locked_out

    tag = f"devices-synthetic{num_devices}-{dataset_stem(dataset)}-s{seed}"
    name = name or tag
    # the input first (a cheap render of a small table)
    prepared = prepare_synthetic_color(num_devices, dataset, label_col, clients, size, test_fraction, seed, quiet, title=name)
    with locked_out(Path(out) if out else SPLITS_ROOT / tag, overwrite, inputs={"`dataset`": dataset}) as out_path:
        _, report = prepared.publish(out_path, name=name, overwrite=overwrite, quiet=quiet)
    return out_path, report


def _recorded(synthetic_color: int, dataset: str, clients: int | None, test_fraction: float, label_col: str | None = None,
              size: int | None = None) -> None:
    """The parameters a synthetic-colour recipe records, with their types (what :func:`rebuild` checks)."""


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run the recorded recipe (for ``hetbench verify``); returns the split."""
    from hetbench.param_types import check_params
    from hetbench.contract import recorded_build

    part = recorded_build(manifest)
    where = "recipe.build.params" if isinstance(manifest["recipe"].get("build"), dict) else "recipe.partition.params"
    check_params(_recorded, part["params"], where)
    p = dict(part["params"])
    return prepare_synthetic_color(
        p["synthetic_color"], p["dataset"], p.get("label_col"), p["clients"], p.get("size"),
        p["test_fraction"], part["seed"], quiet=True,
    ).build()
