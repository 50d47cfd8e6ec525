"""The rows of the noise builders (:mod:`hetbench.builders.noise`): a source table rewritten with each client's
noise, pure numpy between the decode and the PNG encode.

:func:`feature_noise_table` adds Gaussian pixel noise of the row's client's standard deviation
(``noise_std`` column); :func:`label_noise_table` flips labels at the client's rate (``clean_label``
keeps the label before). Each draws from its own seed stream, so the same seed gives the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partitioners.noise import CLEAN_LABEL_COLUMN, NOISE_STD_COLUMN, add_gaussian_noise, flip_labels
from hetbench.png import encode_png
from hetbench.seeding import make_rng
from hetbench.table import SampleTable

#: seed streams (``make_rng(seed, stream)``) of the pixel noise and of the label flips
FEATURE_STREAM, LABEL_STREAM = 41, 42


def image_column(table: SampleTable, split: str = "train") -> str:
    """The (first) image column of a split, or a :class:`~hetbench.errors.HetbenchError`."""
    ds = table.splits[split]
    col = next((c for c, f in ds.features.items() if type(f).__name__ == "Image"), None)
    if col is None:
        raise HetbenchError(f"feature-noise needs an image column; the data has: {', '.join(ds.column_names)}")
    return col


def decode_image(item: dict, row: int | None = None) -> np.ndarray:
    """uint8 pixels of a stored image (``item``, training ``row``): 8-bit grey stays (H, W), everything
    else becomes RGB. Every row is noised, none skipped: an image over hetbench's pixel bound
    (:mod:`hetbench.image_limits`), truncated or missing is a :class:`HetbenchError` naming its row."""
    from PIL import UnidentifiedImageError

    from hetbench.image_limits import open_image

    what = "feature-noise: " + ("an image" if row is None else f"training row {row}")
    if item is None or not (item.get("bytes") or item.get("path")):
        raise HetbenchError(f"{what} has no image")
    try:
        with open_image(item["bytes"] if item.get("bytes") else item["path"], what) as img:
            grey = img.mode in ("L", "1", "LA", "I", "I;16", "F")
            return np.asarray(img.convert("L" if grey else "RGB"))
    except HetbenchError:
        raise
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise HetbenchError(f"{what}: cannot read the image ({type(exc).__name__}: {reason})") from None


def _with_columns(ds, columns: dict[str, tuple[Any, Any]]):
    """``ds`` with columns replaced or appended: name -> (datasets feature, pyarrow array)."""
    import datasets

    table = ds.with_format("arrow")[:]
    features = dict(ds.features)
    for name, (feature, array) in columns.items():
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), name, array)
        else:
            table = table.append_column(name, array)
        features[name] = feature
    feats = datasets.Features(features)
    return datasets.Dataset(datasets.table.InMemoryTable(table.cast(feats.arrow_schema)), info=datasets.DatasetInfo(features=feats))


def _derived(table: SampleTable, splits: dict, labels: dict[str, np.ndarray], note: str) -> SampleTable:
    return SampleTable(
        splits=splits, label_column=table.label_column, class_names=list(table.class_names), labels=labels,
        id_column=table.id_column, source=dict(table.source), description=f"{table.description}, {note}",
        license=table.license,
    )


def feature_noise_table(
    table: SampleTable, assignment: np.ndarray, levels: np.ndarray, seed: int, quiet: bool = True
) -> SampleTable:
    """``table`` with every training image of client k noised by N(0, levels[k]**2) on [0, 1] pixels
    (:func:`~hetbench.partitioners.noise.add_gaussian_noise`), re-encoded as PNG, and a ``noise_std``
    column in every split (0 outside the training split).

    The noise comes from one stream, ``make_rng(seed, FEATURE_STREAM)``, drawn row by row in source
    order, so it depends only on the seed, the assignment and the images.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.sources import load_table
    >>> digits = load_table("builtin:digits")
    >>> a = np.arange(digits.num_rows("train")) % 2
    >>> noisy = feature_noise_table(digits, a, np.array([0.0, 0.3]), seed=0)
    >>> noisy.column("train", "noise_std")[:4].tolist()
    [0.0, 0.30000001192092896, 0.0, 0.30000001192092896]
    """
    import datasets
    import pyarrow as pa

    from hetbench.progress import progress_bar

    col = image_column(table, "train")
    splits = dict(table.splits)
    std = np.asarray(levels, dtype=np.float64)[np.asarray(assignment)]
    items = table.splits["train"].with_format("arrow")[col].to_pylist()
    rng = make_rng(seed, FEATURE_STREAM)
    images = []
    with progress_bar(f"adding noise to {len(items):,} images", len(items), quiet) as bar:
        for row, (item, s) in enumerate(zip(items, std)):
            images.append({"bytes": encode_png(add_gaussian_noise(decode_image(item, row), float(s), rng)) if s > 0 else
                           (item["bytes"] if item.get("bytes") else encode_png(decode_image(item, row))), "path": None})
            bar.update(1)
    image_type = table.splits["train"].features[col]
    splits["train"] = _with_columns(table.splits["train"], {
        col: (image_type, pa.array(images, type=image_type.pa_type)),
        NOISE_STD_COLUMN: (datasets.Value("float32"), pa.array(std.astype(np.float32))),
    })
    for name in splits:
        if name != "train":
            n = table.num_rows(name)
            splits[name] = _with_columns(splits[name], {NOISE_STD_COLUMN: (datasets.Value("float32"), pa.array(np.zeros(n, np.float32)))})
    return _derived(table, splits, dict(table.labels), "training images with per-client Gaussian noise (NIID-Bench sec. 3.2)")


def label_noise_table(
    table: SampleTable, assignment: np.ndarray, rates: np.ndarray, kind: str, seed: int
) -> SampleTable:
    """``table`` with every training label of client k flipped with probability rates[k]
    (:func:`~hetbench.partitioners.noise.flip_labels`, stream ``make_rng(seed, LABEL_STREAM)``); the
    label column holds the noised labels and a ``clean_label`` column the clean ones (equal outside
    the training split).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.sources import load_table
    >>> digits = load_table("builtin:digits")
    >>> noisy = label_noise_table(digits, np.zeros(digits.num_rows("train"), np.int32), np.array([1.0]), "pair", 0)
    >>> noisy.labels["train"][:3].tolist(), noisy.column("train", "clean_label")[:3].tolist()
    ([1, 2, 3], [0, 1, 2])
    """
    import datasets
    import pyarrow as pa

    clean = np.asarray(table.labels["train"], dtype=np.int64)
    noisy, _ = flip_labels(clean, np.asarray(rates)[np.asarray(assignment)], table.num_classes, kind, make_rng(seed, LABEL_STREAM))
    labels = dict(table.labels)
    labels["train"] = noisy
    feature = datasets.ClassLabel(names=list(table.class_names))
    splits = {}
    for name, ds in table.splits.items():
        splits[name] = _with_columns(ds, {
            table.label_column: (feature, pa.array(labels[name], type=pa.int64())),
            CLEAN_LABEL_COLUMN: (feature, pa.array(np.asarray(table.labels[name], np.int64), type=pa.int64())),
        })
    return _derived(table, splits, labels, f"training labels flipped ({kind}, Han et al. NeurIPS 2018)")
