"""The data side of ``flower_fedavg.py``: a hetbench split read the way a Flower app would read it.

Every process (the ServerApp's driver and each Ray actor) loads the split once with
``datasets.load_dataset`` and keeps it: every image decoded to uint8 (N, 1, H, W) (grayscale "L"),
float = u8 / 255 normalised with the per-channel mean and population std of the whole train split. Client
k (0-based) is the k-th smallest ``client_id`` of the train split and owns the train rows with that
``client_id`` in row order - the same tensors and clients as ``hetbench.train.data.load_federated``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np


@dataclass
class SplitData:
    x_train: "torch.Tensor"  # float32 (N, 1, H, W), normalised
    y_train: "torch.Tensor"  # int64 (N,)
    client_rows: list[np.ndarray]  # train rows of client k (k-th smallest client_id), in row order
    client_ids: np.ndarray
    mean: "torch.Tensor"  # (1, C, 1, 1) float32, of the train split
    std: "torch.Tensor"
    num_classes: int
    x_test: "torch.Tensor | None" = None
    y_test: "torch.Tensor | None" = None

    @property
    def in_channels(self) -> int:
        return int(self.x_train.shape[1])

    @property
    def image_size(self) -> int:
        return int(self.x_train.shape[-1])


_CACHE: dict[str, SplitData] = {}


def _column(ds, name: str) -> np.ndarray:
    return ds.data.column(name).to_numpy()


def _decode(ds) -> np.ndarray:
    """Every image of ``ds`` as uint8 (N, 1, H, W) (grayscale "L"), decoded from the stored bytes."""
    import io

    from PIL import Image

    images = []
    for item in ds.data.column("image").to_pylist():
        img = Image.open(io.BytesIO(item["bytes"])) if item.get("bytes") else Image.open(item["path"])
        images.append(np.asarray(img.convert("L") if img.mode != "L" else img, dtype=np.uint8))
    return np.stack(images)[:, None, :, :]


def _channel_stats(x_u8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and population std of ``x_u8 / 255`` (float64)."""
    x = x_u8.astype(np.float64) / 255.0
    return x.mean(axis=(0, 2, 3)), x.std(axis=(0, 2, 3))


def load_split(split: str, with_test: bool = False) -> SplitData:
    """The split's tensors, loaded and decoded once per process (the test rows only when asked)."""
    import datasets
    import torch

    key = os.path.abspath(split)
    data = _CACHE.get(key)
    if data is not None and (data.x_test is not None or not with_test):
        return data
    datasets.disable_progress_bars()
    dd = datasets.load_dataset(split)
    if data is None:
        train = dd["train"]
        x_u8 = _decode(train)
        mean, std = _channel_stats(x_u8)
        cid = _column(train, "client_id").astype(np.int64)
        client_ids = np.unique(cid)
        index = np.searchsorted(client_ids, cid)
        order = np.argsort(index, kind="stable")
        bounds = np.searchsorted(index[order], np.arange(client_ids.size + 1))
        labels = train.features["label"]
        y = _column(train, "label").astype(np.int64)
        mean_t = torch.tensor(mean, dtype=torch.float32).reshape(1, -1, 1, 1)
        std_t = torch.tensor(std, dtype=torch.float32).reshape(1, -1, 1, 1)
        data = SplitData(
            x_train=(torch.from_numpy(x_u8).float().div_(255.0) - mean_t) / std_t,
            y_train=torch.from_numpy(y),
            client_rows=[order[bounds[k] : bounds[k + 1]] for k in range(client_ids.size)],
            client_ids=client_ids,
            mean=mean_t,
            std=std_t,
            num_classes=len(getattr(labels, "names", None) or []) or int(y.max()) + 1,
        )
        _CACHE[key] = data
    if with_test:
        test = dd["test"]
        data.x_test = (torch.from_numpy(_decode(test)).float().div_(255.0) - data.mean) / data.std
        data.y_test = torch.from_numpy(_column(test, "label").astype(np.int64))
    return data


def new_model(data: SplitData, model_name: str):
    """``hetbench.train.models.build_model(model_name)`` for the split's channels, classes and image size."""
    from hetbench.train.models import build_model

    return build_model(model_name, in_channels=data.in_channels, num_classes=data.num_classes,
                       image_size=data.image_size)
