"""The papers' own data sets, where a user has them: ``hetbench reproduce --data cifar10=FOLDER_OR_HUB_ID``.

The claims run on data hetbench ships or generates (``builtin:mnist5k``, the embedded photographs), so that
every claim runs offline. A claim whose paper used a data set a user may hold declares it::

    paper_data: cifar10      # with --data cifar10=REF, every mode's `source` setting becomes REF

and ``--data`` names where that data set is: a folder (Hugging Face's parquet layout, ``save_to_disk`` output
or a hetbench build) or a hub id already in the local cache (nothing downloads at run time). The reference is
read and its layout checked before anything is written (:func:`check_data`): a missing folder, a folder of
another layout or an unknown data set key is one line and exit code 2. The claim's record then says which
data it ran on (``data`` in ``claims.json``).

Known data sets (:data:`PAPER_DATA`):

- ``cifar10``: CIFAR-10 (Krizhevsky 2009), Hsu et al.'s data (2019, Fig. 4; ECCV 2020, Fig. 4): a ``train``
  and a ``test`` split, 10 classes, RGB images of 32 x 32 pixels (Hugging Face's ``cifar10`` has the columns
  ``img`` and ``label``: the layout ``plain_text/train-*.parquet``, ``plain_text/test-*.parquet``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from hetbench.errors import HetbenchError, marked


@dataclass(frozen=True)
class PaperData:
    """What a data set must look like to stand in for a paper's: its splits, classes and image shape."""

    name: str
    splits: tuple[str, ...]
    classes: int
    image_size: int
    mode: str  # PIL's image mode: "RGB", "L"


PAPER_DATA: dict[str, PaperData] = {
    "cifar10": PaperData("CIFAR-10", ("train", "test"), 10, 32, "RGB"),
}
"""The data sets ``--data`` may name, by key."""


def parse_data(spec: str | Sequence[str] | None) -> dict[str, str]:
    """``--data`` as {key: reference}: ``KEY=REF`` items, comma-separated or given one per option.

    Examples
    --------
    >>> from hetbench.reproduce.paper_data import parse_data
    >>> parse_data("cifar10=~/data/cifar10"), parse_data(None)
    ({'cifar10': '~/data/cifar10'}, {})
    >>> parse_data("imagenet=/data/in")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: data: unknown data set 'imagenet'; the data sets a claim can take: cifar10
    """
    if spec is None:
        return {}
    items = [spec] if isinstance(spec, str) else list(spec)
    out: dict[str, str] = {}
    for item in (part.strip() for text in items for part in text.split(",")):
        key, eq, ref = item.partition("=")
        key, ref = key.strip(), ref.strip()
        if not eq or not key or not ref:
            raise HetbenchError(f"`data` '{item}' must be KEY=FOLDER_OR_HUB_ID (e.g. cifar10=~/data/cifar10)")
        if key not in PAPER_DATA:
            raise HetbenchError(f"`data`: unknown data set '{key}'; the data sets a claim can take: "
                                f"{', '.join(PAPER_DATA)}")
        if key in out:
            raise HetbenchError(f"`data` names '{key}' twice")
        out[key] = ref
    return out


def check_layout(key: str, ref: str) -> None:
    """Read ``ref`` and check that it has ``PAPER_DATA[key]``'s layout: its splits, its number of classes, an
    image column whose first image has the data set's size and mode. One line (HetbenchError) says what
    differs; nothing is written.

    Examples
    --------
    >>> from hetbench.reproduce.paper_data import check_layout
    >>> check_layout("cifar10", "builtin:digits")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: data cifar10='builtin:digits' is not CIFAR-10's layout: it has the splits train, not train, test
    """
    import io
    from pathlib import Path

    from hetbench.sources import load_table
    from hetbench.sources.hub import looks_like_hub_id

    spec = PAPER_DATA[key]
    where = f"`data` {key}='{ref}'"
    local = Path(ref).expanduser()
    if not ref.startswith("builtin:") and not local.exists() and not looks_like_hub_id(ref):
        raise HetbenchError(f"{where}: no such folder or file (and not a hub id)")
    try:
        table = load_table(str(local) if local.exists() else ref)
    except HetbenchError as exc:
        raise HetbenchError(f"{where}: {marked(exc)}") from None
    bad = f"{where} is not {spec.name}'s layout"
    if sorted(table.splits) != sorted(spec.splits):
        raise HetbenchError(f"{bad}: it has the splits {', '.join(sorted(table.splits))}, not {', '.join(spec.splits)}")
    if len(table.class_names) != spec.classes:
        raise HetbenchError(f"{bad}: {len(table.class_names)} classes in '{table.label_column}', not {spec.classes}")
    train = table.splits["train"]
    column = next((c for c, f in train.features.items() if type(f).__name__ == "Image"), None)
    if column is None:
        raise HetbenchError(f"{bad}: no image column (columns: {', '.join(train.features)})")
    from PIL import Image

    cell = train.with_format("arrow")[0:1].column(column).to_pylist()[0]
    try:
        image = Image.open(io.BytesIO(cell["bytes"])) if cell.get("bytes") else Image.open(cell["path"])
        size, mode = image.size, image.mode
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise HetbenchError(f"{bad}: its first image does not decode ({type(exc).__name__})") from None
    if size != (spec.image_size, spec.image_size) or mode != spec.mode:
        raise HetbenchError(f"{bad}: its images are {mode} {size[0]} x {size[1]}, not {spec.mode} "
                            f"{spec.image_size} x {spec.image_size}")


def check_data(data: Mapping[str, str], claims: Sequence[Any], every_claim: Sequence[Any] = ()) -> dict[str, str]:
    """Check ``--data`` (:func:`parse_data`'s mapping) against the claims to run, before anything is
    written: every key must be taken by at least one of them (the message names those of ``every_claim``
    that would), and every reference must have its data set's layout (:func:`check_layout`). Returns the
    mapping."""
    if not data:
        return {}
    taking = {c.paper_data for c in claims if c.paper_data}
    for key in data:
        if key not in taking:
            which = sorted(c.id for c in every_claim if c.paper_data == key)
            raise HetbenchError(f"`data` {key}: none of the claims to run takes it (the claims that do: "
                                f"{', '.join(which)})")
        check_layout(key, data[key])
    return dict(data)


def with_paper_data(claim: Any, data: Mapping[str, str]) -> tuple[Any, dict[str, str]]:
    """``claim`` with every mode's ``source`` set to the ``--data`` reference of its ``paper_data`` (when
    given), and what it runs on ({key: reference}, empty when unchanged).

    Examples
    --------
    >>> from hetbench.reproduce.claims import load_claim
    >>> from hetbench.reproduce.paper_data import with_paper_data
    >>> claim, used = with_paper_data(load_claim("hsu-label-skew"), {"cifar10": "/data/cifar10"})
    >>> claim.settings["quick"]["source"], used
    ('/data/cifar10', {'cifar10': '/data/cifar10'})
    """
    key = claim.paper_data
    if not key or key not in data:
        return claim, {}
    settings = {mode: {**s, "source": data[key]} for mode, s in claim.settings.items()}
    return dataclasses.replace(claim, settings=settings), {key: data[key]}
