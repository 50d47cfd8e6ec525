"""A published split for the trainer: labels and client structure in memory, images in a decoded cache.

The split is read only through the output contract (``docs/output-contract.md``): ``datasets.load_dataset``
on a built folder or hub id, the ``train`` and ``test`` splits, clients by ``client_id``, and test groups by
``device`` / ``domain`` / ``s2_cell`` / ``user_id`` where the split has them. Images are decoded once, in
parallel, into a memory-mapped uint8 array per split part (:mod:`hetbench.train.cache`, outside the split
folder, keyed by the split's content and checked on every read) that later runs reuse; a client is an
index array into it, and a batch is gathered from the memory map, so resident memory holds a few batches,
not the split.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hetbench.contract.client_rows import group_by_client
from hetbench.errors import HetbenchError
from hetbench.roots import check_no_links_leaving
from hetbench.train.cache import Decoder, block_rows, cache_folder, decoded_images, image_source, release_pages
from hetbench.train.channel_stats import blocks_stats

if TYPE_CHECKING:
    import torch

GROUP_COLUMNS = ("device", "domain", "s2_cell", "user_id")


@dataclass
class FederatedData:
    """Train and test data of one split plus the client and group structure (numpy indices).

    ``x_train`` / ``x_test`` are uint8 ``(N, C, S, S)`` arrays, read-only memory maps of the decoded-image
    cache when :func:`load_federated` made them (any uint8 numpy array works); ``y_train`` / ``y_test``
    are int64 CPU tensors.
    """

    name: str
    path: str
    fingerprint: str
    x_train: np.ndarray  # uint8 (N, C, S, S), an np.memmap
    y_train: "torch.Tensor"  # int64 (N,)
    x_test: np.ndarray
    y_test: "torch.Tensor"
    client_ids: np.ndarray  # the client_id value of client index k
    client_rows: list[np.ndarray]  # train rows of client k
    label_names: list[str]
    group_by: str  # column the test groups come from ("client_id" or "all" when the split has none)
    group_names: list[str]
    test_group: np.ndarray  # group index of every test row
    test_client: np.ndarray  # client index of every test row, -1 for shared test rows
    client_group: np.ndarray  # group index of client k when all its rows share one group, else -1
    mean: np.ndarray = field(default_factory=lambda: np.zeros(1))
    std: np.ndarray = field(default_factory=lambda: np.ones(1))
    #: the sha256 of the decoded training and test arrays, the pixels as the model sees them ("" when the
    #: arrays were not made by :func:`load_federated`): a run store keys runs by it (hetbench.reproduce.store)
    content: str = ""

    @property
    def num_clients(self) -> int:
        return len(self.client_rows)

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    @property
    def in_channels(self) -> int:
        return int(self.x_train.shape[1])

    @property
    def image_size(self) -> int:
        return int(self.x_train.shape[-1])

    @property
    def num_train(self) -> int:
        return int(self.y_train.shape[0])

    @property
    def num_test(self) -> int:
        return int(self.y_test.shape[0])

    @property
    def client_sizes(self) -> np.ndarray:
        return np.array([r.size for r in self.client_rows], dtype=np.int64)

    def release_pages(self) -> None:
        """Drop the image pages this process has read from its resident memory (they stay in the page
        cache), so a long run's memory does not grow towards the size of the split."""
        release_pages(self.x_train)
        release_pages(self.x_test)


def gather_rows(x: np.ndarray, rows: np.ndarray, pin: bool = False) -> "torch.Tensor":
    """Rows ``rows`` (any order) of the uint8 array ``x`` as a CPU tensor, in pinned memory when ``pin``
    (for a non-blocking copy to a GPU).

    Examples
    --------
    >>> gather_rows(np.arange(6, dtype=np.uint8).reshape(3, 2), np.array([2, 0])).tolist()
    [[4, 5], [0, 1]]
    """
    import torch

    rows = np.asarray(rows, dtype=np.int64)
    if not pin:
        return torch.from_numpy(np.take(x, rows, axis=0))
    out = torch.empty((rows.size, *x.shape[1:]), dtype=torch.uint8, pin_memory=True)
    np.take(x, rows, axis=0, out=out.numpy())
    return out


def read_rows(x: np.ndarray, start: int, stop: int, pin: bool = False) -> "torch.Tensor":
    """Rows ``[start, stop)`` of the uint8 array ``x`` as a CPU tensor (a copy; pinned when ``pin``)."""
    import torch

    if not pin:
        return torch.from_numpy(np.array(x[start:stop]))
    out = torch.empty((max(stop - start, 0), *x.shape[1:]), dtype=torch.uint8, pin_memory=True)
    out.numpy()[...] = x[start:stop]
    return out


def _image_column(features) -> str:
    col = next((c for c, f in features.items() if type(f).__name__ == "Image"), None)
    if col is None:
        raise HetbenchError(
            f"the split has no image column to train on (columns: {', '.join(features)}); "
            "hetbench train needs image data"
        )
    return col


def channel_stats(x: np.ndarray, chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and (population) std of uint8 images ``(N, C, H, W)`` scaled to [0, 1], summed over
    blocks of ``chunk`` rows (default :func:`hetbench.train.cache.block_rows`, as the cache computes them)
    so the float copy never holds the whole split.

    Examples
    --------
    >>> x = np.array([[[[0, 255]]], [[[255, 255]]]], dtype=np.uint8)
    >>> mean, std = channel_stats(x)
    >>> float(mean[0]), round(float(std[0]), 4)
    (0.75, 0.433)
    """
    c = x.shape[1]
    chunk = chunk or block_rows(c, x.shape[-1])
    return blocks_stats((np.asarray(x[start : start + chunk]) for start in range(0, x.shape[0], chunk)), c)


def _column(ds, name: str, kind) -> np.ndarray:
    """One column as a numpy array, read through Arrow (int64, or strings as an object array)."""
    col = ds.with_format("arrow")[0 : len(ds)].column(name)
    if kind is str:
        return np.asarray([str(v) for v in col.to_pylist()], dtype=object)
    return np.asarray(col.to_numpy(zero_copy_only=False)).astype(kind)


def _check_integer_columns(ds, name: str, split: str) -> None:
    """``client_id`` and ``label`` must hold integers (a ClassLabel is one), as the output contract says."""
    import pyarrow as pa

    schema = ds.with_format("arrow")[0:0].schema
    for col in ("client_id", "label"):
        kind = schema.field(col).type
        if not pa.types.is_integer(kind):
            raise HetbenchError(
                f"the {name} split of '{split}' has a '{col}' column of {kind}, not integers; hetbench train needs "
                "integer client ids and labels (as 'hetbench partition' and 'hetbench build' write them)"
            )


def _load_splits(split: str):
    import datasets

    from hetbench.sources.quiet import datasets_bars_off

    path = Path(split).expanduser()
    if not path.exists() and not (split.count("/") == 1 and not split.startswith((".", "/"))):
        raise HetbenchError(f"split '{split}' not found (no such folder, and not a hub id)")
    if path.is_dir():  # a shard linked from outside the folder is never read (hetbench.roots)
        check_no_links_leaving(path)
    try:
        with datasets_bars_off():
            if path.exists():  # a cache keyed by the folder's files (hetbench.local_folders): never another build's rows
                from hetbench.local_folders import load_local

                dd = load_local(path)
            else:
                dd = datasets.load_dataset(split)
    except HetbenchError:
        raise
    except Exception as exc:
        raise HetbenchError(f"could not load split '{split}': {type(exc).__name__}: {exc}".splitlines()[0]) from exc
    return dd


def _identity(split: str, dd) -> tuple[str, str]:
    """(name, fingerprint): from the manifest of a hetbench build, else from the folder name and a hash
    of the client and label columns."""
    from hetbench.contract import manifest_or_none

    path = Path(split).expanduser()
    m = manifest_or_none(path)
    if m is not None:
        return str(m.get("name") or path.name), str(m.get("split_fingerprint") or m.get("partition_fingerprint"))
    h = hashlib.sha256()
    for name in sorted(dd):
        h.update(name.encode())
        for col in ("client_id", "label"):
            if col in dd[name].column_names:
                h.update(_column(dd[name], col, np.int64).tobytes())
    return (path.name if path.exists() else split.replace("/", "__")), h.hexdigest()


def choose_group_column(test_columns: list[str], group_by: str | None, test_client_ids: np.ndarray) -> str:
    """The column test groups come from: ``group_by`` if given, else the first of device / domain /
    s2_cell / user_id the test split has, else ``client_id`` when test rows belong to clients, else one
    group ``all``."""
    if group_by:
        if group_by in ("all", "client_id") or group_by in test_columns:
            return group_by
        raise HetbenchError(
            f"`group_by` '{group_by}' is not a column of the test split (columns: {', '.join(test_columns)})"
        )
    for col in GROUP_COLUMNS:
        if col in test_columns:
            return col
    if test_client_ids.size and (test_client_ids >= 0).all():
        return "client_id"
    return "all"


def _content(split: str, dd, part: str) -> str:
    """What the rows of ``part`` are, for the cache key: the manifest's content digest of a hetbench build,
    else the ``datasets`` fingerprint (which follows the data files)."""
    from hetbench.contract import manifest_or_none

    info = (manifest_or_none(split) or {}).get("splits", {}).get(part)
    digest = (info.get("content_sha256") or info.get("file_sha256")) if isinstance(info, dict) else None
    if digest:
        return json.dumps(digest, sort_keys=True)
    return str(getattr(dd[part], "_fingerprint", "") or "")


def load_federated(
    split: str,
    image_size: int | None = None,
    group_by: str | None = None,
    quiet: bool = True,
    cache_dir: str | os.PathLike | None = None,
    processes: int | None = None,
) -> FederatedData:
    """Load ``split`` (a built folder or hub id) into a :class:`FederatedData`.

    Parameters
    ----------
    split : str
        A split folder (``hetbench partition`` / ``hetbench build`` output) or a hub id.
    image_size : int, optional
        Side the images are resized to (area interpolation when shrinking, bilinear when growing); None
        keeps their size, which all must share.
    group_by : str, optional
        The test groups' column (:func:`choose_group_column`).
    quiet : bool
        No progress bars.
    cache_dir : path, optional
        Where the decoded images are cached (:func:`hetbench.train.cache.cache_folder`: default
        ``$HETBENCH_CACHE``, else ``$XDG_CACHE_HOME/hetbench/train`` or ``~/.cache/hetbench/train``;
        never inside the split folder). A cache entry that fails its checks is decoded again after one
        :class:`hetbench.train.cache.CacheWarning`.
    processes : int, optional
        Decode processes when the cache is built (default: one per core).

    Returns
    -------
    FederatedData
        ``x_train`` / ``x_test`` are read-only memory maps of the cache.

    Raises
    ------
    HetbenchError
        For a split without ``client_id`` or ``label``, without a test split, with no image column, a
        missing or unreadable image, images of mixed or non-square sizes without ``image_size``, where a
        training group has no test data, or when the cache cannot be written or lies inside the split folder.
    """
    import torch

    dd = _load_splits(split)
    if "train" not in dd:
        raise HetbenchError(f"split '{split}' has no 'train' split (has: {', '.join(dd)})")
    if "test" not in dd:
        raise HetbenchError(f"split '{split}' has no 'test' split to evaluate on (has: {', '.join(dd)})")
    train, test = dd["train"], dd["test"]
    for name, ds in (("train", train), ("test", test)):
        for col in ("client_id", "label"):
            if col not in ds.column_names:
                raise HetbenchError(
                    f"the {name} split of '{split}' has no '{col}' column; hetbench train needs a federated split "
                    "with client_id and label (build one with 'hetbench partition' or 'hetbench build')"
                )
    for name, ds in (("train", train), ("test", test)):
        _check_integer_columns(ds, name, split)
    label_feature = train.features["label"]
    label_names = list(getattr(label_feature, "names", None) or [])
    train_cid = _column(train, "client_id", np.int64)
    train_y = _column(train, "label", np.int64)
    test_cid = _column(test, "client_id", np.int64)
    test_y = _column(test, "label", np.int64)
    if not label_names:
        label_names = [str(i) for i in range(int(max(train_y.max(initial=-1), test_y.max(initial=-1))) + 1)]
    keep_train = (train_cid >= 0) & (train_y >= 0)
    keep_test = test_y >= 0
    if not keep_train.any():
        raise HetbenchError(f"the train split of '{split}' has no labelled rows that belong to a client")
    if not keep_test.any():
        raise HetbenchError(f"the test split of '{split}' has no labelled rows")
    name, fingerprint = _identity(split, dd)
    train_column, test_column = _image_column(train.features), _image_column(test.features)
    rows = np.flatnonzero(keep_train)
    train_cid, train_y = train_cid[rows], train_y[rows]
    te_rows = np.flatnonzero(keep_test)
    test_cid, test_y = test_cid[te_rows], test_y[te_rows]

    client_ids = np.unique(train_cid)  # the clients with labelled rows, numbered 0 .. size - 1 below
    grouped = group_by_client(np.searchsorted(client_ids, train_cid), client_ids.size)
    client_rows = [grouped.indices(k) for k in range(client_ids.size)]
    pos = np.searchsorted(client_ids, test_cid).clip(0, max(client_ids.size - 1, 0))
    test_client = np.where((test_cid >= 0) & (client_ids[pos] == test_cid), pos, -1)

    group_col = choose_group_column(test.column_names, group_by, test_cid)
    if group_col == "all":
        group_names = ["all"]
        test_group = np.zeros(test_y.size, dtype=np.int64)
        client_group = np.zeros(client_ids.size, dtype=np.int64)
    elif group_col == "client_id":
        if (test_client < 0).any():
            raise HetbenchError(
                "`group_by` client_id needs every test row to belong to a training client; this split has shared "
                "test rows (client_id -1)"
            )
        group_names = [str(c) for c in client_ids]
        test_group = test_client.copy()
        client_group = np.arange(client_ids.size)
    else:
        test_vals = _column(test, group_col, str)[te_rows]
        group_names = sorted(set(test_vals.tolist()))
        lookup = {g: i for i, g in enumerate(group_names)}
        test_group = np.array([lookup[v] for v in test_vals], dtype=np.int64)
        client_group = np.full(client_ids.size, -1, dtype=np.int64)
        if group_col in train.column_names:
            train_vals = _column(train, group_col, str)[rows]
            missing = sorted(set(train_vals.tolist()) - set(group_names))
            if missing:
                shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
                raise HetbenchError(
                    f"group '{shown}' of column '{group_col}' has training data but no test data; rebuild the split "
                    f"with a test split per {group_col}, or pass `group_by` all"
                )
            for k, r in enumerate(client_rows):
                vals = set(train_vals[r].tolist())
                if len(vals) == 1:
                    client_group[k] = lookup[vals.pop()]
    folder = cache_folder(split, cache_dir)
    with Decoder(processes) as decoder:
        x_tr, meta = decoded_images(image_source(train, train_column), folder, name, "train",
                                    {"split": fingerprint, "content": _content(split, dd, "train")}, rows,
                                    image_size, None, decoder, quiet, stats=True)
        x_te, meta_te = decoded_images(image_source(test, test_column), folder, name, "test",
                                 {"split": fingerprint, "content": _content(split, dd, "test")}, te_rows,
                                 int(x_tr.shape[-1]), int(x_tr.shape[1]), decoder, quiet)
    return FederatedData(
        name=name,
        path=str(split),
        fingerprint=fingerprint,
        x_train=x_tr,
        y_train=torch.from_numpy(train_y),
        x_test=x_te,
        y_test=torch.from_numpy(test_y),
        client_ids=client_ids,
        client_rows=client_rows,
        label_names=label_names,
        group_by=group_col,
        group_names=group_names,
        test_group=test_group,
        test_client=test_client,
        client_group=client_group,
        mean=np.asarray(meta["mean"], dtype=np.float64),
        std=np.asarray(meta["std"], dtype=np.float64),
        content=f"{meta.get('sha256', '')}:{meta_te.get('sha256', '')}",
    )
