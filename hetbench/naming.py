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
    >>> default_out_dir("builtin:digits-domains", "domains-f0.05-n8", 0).as_posix()  # the word once
    'hetbench_splits/digits-domains-f0.05-n8-s0'
    """
    stem, word = dataset_stem(dataset), tag.split("-", 1)[0]
    if (stem == word or stem.endswith("-" + word)) and tag != word:  # digits-domains + domains-f0.05: said once
        tag = tag[len(word) + 1:]
    return SPLITS_ROOT / f"{stem}-{tag}-s{seed}"


def input_slug(dataset: str | None, default: str) -> str:
    """A short name of a builder's input for its default folder: ``default`` when there is none, else
    a slug of the reference and 6 hex digits of its sha256, so builds of different inputs that share
    a file name (``a/obs.csv``, ``b/obs.csv``) do not collide.

    Examples
    --------
    >>> from hetbench.naming import input_slug
    >>> input_slug(None, "observations")
    'observations'
    >>> input_slug("data/obs.csv", "observations"), input_slug("other/obs.csv", "observations")
    ('obs-f15205', 'obs-165374')
    """
    import hashlib

    if dataset is None:
        return default
    stem = dataset_stem(dataset.split("+", 1)[0].split(",", 1)[0].split("=", 1)[-1])[:32].strip("-.") or "data"
    return f"{stem}-{hashlib.sha256(dataset.encode()).hexdigest()[:6]}"
