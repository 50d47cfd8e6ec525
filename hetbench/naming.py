"""Default names of output folders: ``hetbench_splits/<data set>-<method and parameters>-s<seed>``."""

from __future__ import annotations

from pathlib import Path

SPLITS_ROOT = Path("hetbench_splits")


def dataset_stem(dataset: str) -> str:
    """A file-name-safe short name of a data set reference (``builtin:digits`` -> ``digits``,
    ``data/obs.csv`` -> ``obs``).

    Examples
    --------
    >>> from hetbench.naming import dataset_stem
    >>> dataset_stem("builtin:mnist5k"), dataset_stem("data/my obs.csv")
    ('mnist5k', 'my-obs')
    """
    base = dataset.split(":", 1)[1] if dataset.startswith("builtin:") else Path(dataset.rstrip("/")).stem or "data"
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in base)


def default_out_dir(dataset: str, tag: str, seed: int) -> Path:
    """Where a split of ``dataset`` made by the method ``tag`` with ``seed`` goes by default.

    Examples
    --------
    >>> from hetbench.naming import default_out_dir
    >>> default_out_dir("builtin:digits", "dirichlet-client-a0.5-n10", 0).as_posix()
    'hetbench_splits/digits-dirichlet-client-a0.5-n10-s0'
    """
    return SPLITS_ROOT / f"{dataset_stem(dataset)}-{tag}-s{seed}"
