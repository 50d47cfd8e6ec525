"""What a device's or a domain's images look like: ``plots/<kind>_samples.png``, a grid of stored images
with one row per device or domain.

A split whose table has a ``domain`` or ``device`` column and an image column (``hetbench build
digits-domains``, ``iso-isp``, ``devices``, ``real-devices``, ``partition domains``) gets the grid; ``<kind>``
is the column's name. The images are the published rows of the test split when it carries the column (the
training rows otherwise), :data:`PER_GROUP` per group, chosen by :func:`choose_samples`: seeded (the same
split draws the same grid), one of each class before a second of any. Where every group renders the same
captures (a ``capture_id`` column shared by every device: ``iso-isp``, ``devices``), each column is one
capture under every device, so a difference along a column is the device's and not the scene's.

Every image is drawn at one size per cell and with its stored values (0-255, no per-image contrast
stretch; grey images in grey), so brightness and colour compare across rows; the title says how large the
images are stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hetbench.plotting import pyplot

#: the columns whose values are the groups, in the order they are looked for
GROUP_COLUMNS = ("domain", "device")
#: images per group
PER_GROUP = 8
#: images larger than this (either side) are box-averaged down before drawing (the cell is ~100 px)
MAX_SIDE = 256
#: cell size on the page, inches (image, then the class label under it)
CELL, LABEL = 1.0, 0.22
#: the narrowest page, inches (the title's two lines fit)
MIN_WIDTH = 8.0


def choose_samples(groups: np.ndarray, labels: np.ndarray, captures: np.ndarray | None = None,
                   per_group: int = PER_GROUP, seed: int = 0) -> tuple[list[str], list[np.ndarray], bool]:
    """The rows drawn for each group: seeded, one of each class before a second of any class.

    Parameters
    ----------
    groups : numpy.ndarray
        Each row's group (device or domain name).
    labels : numpy.ndarray
        Each row's class index.
    captures : numpy.ndarray, optional
        Each row's capture id. When some captures are present in every group, the same captures are drawn
        for every group, in the same order (the columns line up).
    per_group : int
        Rows per group (fewer when a group has fewer).
    seed : int
        Seed of the draw.

    Returns
    -------
    names : list of str
        The groups, in order of first appearance.
    rows : list of numpy.ndarray
        Each group's row positions, ordered by class.
    aligned : bool
        Whether column j is the same capture in every group.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.samples import choose_samples
    >>> groups = np.array(["b", "a"] * 6)
    >>> names, rows, aligned = choose_samples(groups, np.arange(12) % 4, per_group=3)
    >>> names, [groups[r].tolist() for r in rows], aligned
    (['b', 'a'], [['b', 'b', 'b'], ['a', 'a', 'a']], False)
    >>> same = choose_samples(groups, np.arange(12) % 4, per_group=3)[1]
    >>> all(np.array_equal(x, y) for x, y in zip(rows, same))
    True
    >>> names, rows, aligned = choose_samples(groups, np.zeros(12, int), np.arange(12) // 2, per_group=4)
    >>> aligned, (np.arange(12)[rows[0]] // 2).tolist() == (np.arange(12)[rows[1]] // 2).tolist()
    (True, True)
    """
    groups = np.asarray(groups).astype(str)
    labels = np.asarray(labels, np.int64)
    names, first = np.unique(groups, return_index=True)
    names = [str(n) for n in names[np.argsort(first)]]
    rng = np.random.default_rng(seed)
    if captures is not None and len(groups):
        captures = np.asarray(captures).astype(str)
        shared = set(captures[groups == names[0]].tolist())
        for name in names[1:]:
            shared &= set(captures[groups == name].tolist())
        if shared:
            pool = np.array(sorted(shared))
            # one row per capture (its first), for its label
            cap_rows = np.array([np.flatnonzero(captures == c)[0] for c in pool])
            picked = pool[_diverse(labels[cap_rows], per_group, rng)]
            rows = []
            for name in names:
                mine = np.flatnonzero(groups == name)
                row_of = {}
                for r in mine:
                    row_of.setdefault(captures[r], r)
                rows.append(np.array([row_of[c] for c in picked], np.int64))
            return names, rows, True
    rows = []
    for name in names:
        mine = np.flatnonzero(groups == name)
        rows.append(mine[_diverse(labels[mine], per_group, rng)])
    return names, rows, False


def _diverse(labels: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of ``k`` of ``labels``: a random order within each class, then the classes taken in turn
    (every class once before any twice); returned ordered by class, then by draw."""
    tie = rng.random(len(labels))
    order = np.lexsort((tie, labels))  # by class, at random within it
    sorted_labels = labels[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_labels)) + 1] if len(labels) else np.zeros(0, np.int64)
    rank = np.arange(len(labels)) - np.repeat(starts, np.diff(np.r_[starts, len(labels)]))
    turn = np.empty(len(labels), np.int64)
    turn[order] = rank
    chosen = np.lexsort((tie, turn))[:k]
    return chosen[np.lexsort((tie[chosen], labels[chosen]))]


def _shrink(img: np.ndarray) -> np.ndarray:
    """Box-average an image whose longer side exceeds :data:`MAX_SIDE` by a whole factor (exact, numpy only)."""
    f = -(-max(img.shape[:2]) // MAX_SIDE)
    if f <= 1:
        return img
    h, w = img.shape[0] // f * f, img.shape[1] // f * f
    return img[:h, :w].reshape(h // f, f, w // f, f, -1).mean(axis=(1, 3)).round().astype(np.uint8)


@dataclass
class SampleGrid:
    """The drawn images of a split's groups (:func:`collect_samples`), ready to plot."""

    kind: str
    names: list[str]
    images: list[list[np.ndarray | None]]
    labels: list[list[str]]
    split: str
    aligned: bool
    stored_sizes: list[tuple[int, int]]

    @property
    def path(self) -> str:
        return f"plots/{self.kind}_samples.png"

    def write(self, folder: Path) -> list[str]:
        """Draw the grid under ``folder``; returns its path, relative to ``folder``."""
        plot_samples(self, Path(folder) / self.path)
        return [self.path]


def group_column(columns) -> str | None:
    """The first of :data:`GROUP_COLUMNS` among ``columns`` (a split's device or domain column), else None.

    Examples
    --------
    >>> group_column(["image", "label", "device"]), group_column(["image", "label"])
    ('device', None)
    """
    return next((c for c in GROUP_COLUMNS if c in columns), None)


def collect_samples(fs, per_group: int = PER_GROUP, seed: int = 0) -> SampleGrid | None:
    """The sample grid of a built split, or None when its table has no image column or no ``domain`` /
    ``device`` column (:data:`GROUP_COLUMNS`).

    Examples
    --------
    >>> from hetbench.partitioners import DomainsPartitioner
    >>> from hetbench.report.samples import collect_samples
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> grid = collect_samples(build_split(load_table("builtin:digits-domains"), DomainsPartitioner(4, 0.05, "domain")))
    >>> grid.kind, grid.names, [len(row) for row in grid.images], grid.split
    ('domain', ['mnist', 'usps', 'mnistm', 'syn'], [8, 8, 8, 8], 'test')
    >>> from hetbench.partitioners import IIDPartitioner
    >>> collect_samples(build_split(load_table("builtin:digits"), IIDPartitioner(4))) is None  # no domain column
    True
    """
    from hetbench.embed.images import decode
    from hetbench.errors import HetbenchError

    for split in ("test", "train"):
        if split not in fs.outputs or not len(fs.outputs[split]):
            continue
        ds = fs.table.splits[fs.outputs[split].source_split]
        kind = group_column(ds.column_names)
        if kind is not None:
            break
    else:
        return None
    image = next((n for n, f in ds.features.items() if type(f).__name__ == "Image"), None)
    if image is None:
        return None
    out = fs.outputs[split]
    keep = np.flatnonzero(out.client_ids >= 0) if split == "train" else np.arange(len(out))
    rows = out.rows[keep]
    arrow = ds.with_format("arrow")
    groups = np.asarray(arrow[kind].to_numpy(zero_copy_only=False))[rows]
    captures = (np.asarray(arrow["capture_id"].to_numpy(zero_copy_only=False))[rows]
                if kind == "device" and "capture_id" in ds.column_names else None)
    labels = np.asarray(fs.labels(split))[keep]
    names, picked, aligned = choose_samples(groups, labels, captures, per_group, seed)
    class_names = fs.class_names
    images, texts, sizes = [], [], []
    for positions in picked:
        stored = ds.select(rows[positions].tolist()).with_format("arrow")[image]
        row_images = []
        for item in stored.to_pylist():
            try:
                pixels = decode(item)
                sizes.append((pixels.shape[1], pixels.shape[0]))
                row_images.append(_shrink(pixels))
            except HetbenchError:  # unreadable (counted by the feature shift): an empty cell
                row_images.append(None)
        images.append(row_images)
        texts.append([str(class_names[int(c)]) for c in labels[positions]])
    return SampleGrid(kind, names, images, texts, split, aligned, sizes)


def plot_samples(grid: SampleGrid, path: Path) -> None:
    """One row per group (its name on the left), one stored image per cell with its class under it."""
    plt = pyplot()
    cols = max((len(r) for r in grid.images), default=1) or 1
    left = 0.3 + 0.08 * min(max(len(n) for n in grid.names), 40)  # the group names, 9 pt
    top = 0.75
    natural = left + cols * CELL + 0.15
    width = max(natural, MIN_WIDTH)  # room for the title; the grid centred
    left += (width - natural) / 2
    height = top + len(grid.names) * (CELL + LABEL) + 0.1
    fig = plt.figure(figsize=(width, height), dpi=100)
    for g, (name, row, texts) in enumerate(zip(grid.names, grid.images, grid.labels)):
        y = height - top - (g + 1) * (CELL + LABEL) + LABEL
        label = name if len(name) <= 40 else name[:38] + ".."
        fig.text((left - 0.12) / width, (y + CELL / 2) / height, label, ha="right", va="center", fontsize=9)
        for j, (img, text) in enumerate(zip(row, texts)):
            ax = fig.add_axes(((left + j * CELL + 0.04) / width, y / height, (CELL - 0.08) / width, (CELL - 0.08) / height))
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_color("0.8")
            if img is None:
                ax.text(0.5, 0.5, "unreadable", ha="center", va="center", fontsize=7, transform=ax.transAxes)
            else:  # RGB uint8: drawn as stored, no normalisation
                ax.imshow(img, vmin=0, vmax=255, interpolation="antialiased")
            ax.text(0.5, -0.03, text if len(text) <= 14 else text[:13] + "..", ha="center", va="top", fontsize=8,
                    transform=ax.transAxes)
    w = sorted({s[0] for s in grid.stored_sizes})
    h = sorted({s[1] for s in grid.stored_sizes})
    stored = (f"{w[0]} x {h[0]} px" if len(w) == 1 and len(h) == 1
              else f"{w[0]}-{w[-1]} x {h[0]}-{h[-1]} px") if w else "unreadable"
    what = "test" if grid.split == "test" else "training"
    line2 = (f"each column is one capture under every {grid.kind}" if grid.aligned
             else "a seeded draw, classes in turn") + f"; stored {stored}, drawn at one size, values as stored"
    fig.suptitle(f"{len(grid.names)} {grid.kind}s: {cols} {what} images each, class under each image\n{line2}",
                 fontsize=10, y=1 - 0.1 / height, va="top")
    fig.savefig(path)
    plt.close(fig)


__all__ = ["group_column", "choose_samples", "collect_samples", "plot_samples", "SampleGrid", "GROUP_COLUMNS", "PER_GROUP"]
