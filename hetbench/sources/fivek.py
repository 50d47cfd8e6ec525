"""MIT-Adobe FiveK (Bychkovsky, Paris, Chan and Durand, CVPR 2011): 5,000 RAW photographs (DNG)
from 35 camera models, each with its location, time of day, light and subject.

The layout read is the one of the released ``fivek_dataset.tar``, as the maintained loader
``yuukicammy/mit-adobe-fivek-dataset`` reads it (``dataset/fivek_builder.py``)::

    <raw-dir>/[fivek_dataset/]categories.txt
    <raw-dir>/[fivek_dataset/]raw_photos/HQa<first>to<last>/photos/a<NNNN>-<camera file stem>.dng

``categories.txt`` holds one line per photograph: ``basename,location,time,light,subject`` (five
comma-separated fields, ``None`` where a value is missing). Its exact text was reconstructed from that
loader's parser, not read from the file itself; the vocabularies are the loader's: location
outdoor/indoor, time day/dusk/night, light sun_sky/artificial/mixed, subject
man_made/people/nature/animals/abstract. A photograph whose chosen field is ``None`` has no label and
is left out (listed in the report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hetbench.errors import HetbenchError

FIELDS = ("location", "time", "light", "subject")
VOCABULARY = {
    "location": ("outdoor", "indoor"),
    "time": ("day", "dusk", "night"),
    "light": ("sun_sky", "artificial", "mixed"),
    "subject": ("man_made", "people", "nature", "animals", "abstract"),
}
MISSING = "None"
LAYOUT = "<raw-dir>/[fivek_dataset/]{categories.txt, raw_photos/HQa<first>to<last>/photos/a<NNNN>-<stem>.dng}"
_FOLDER = re.compile(r"HQa\d+to\d+")
_BASENAME = re.compile(r"a\d{4}-.+")


def dataset_root(raw_dir: str | Path) -> Path:
    """The folder holding ``categories.txt``: ``raw_dir`` itself or its ``fivek_dataset``."""
    root = Path(raw_dir)
    for cand in (root, root / "fivek_dataset"):
        if (cand / "categories.txt").is_file():
            return cand
    raise HetbenchError(f"{root / 'fivek_dataset' / 'categories.txt'} is missing (expected {LAYOUT})")


def read_categories(path: Path) -> dict[str, dict[str, str | None]]:
    """Basename -> {field: value or None} from ``categories.txt``; a malformed line is a
    :class:`HetbenchError` naming it.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("categories.txt").write_text("a0001-jmac_DSC1459,outdoor,day,sun_sky,nature\\na0002-x,None,None,mixed,people\\n")
    >>> read_categories(Path("categories.txt"))["a0002-x"]
    {'location': None, 'time': None, 'light': 'mixed', 'subject': 'people'}
    """
    out: dict[str, dict[str, str | None]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        items = [x.strip() for x in line.split(",")]
        if len(items) != 5 or not _BASENAME.fullmatch(items[0]):
            raise HetbenchError(f"{path} line {n}: expected 'basename,location,time,light,subject', got {line[:80]!r}")
        values: dict[str, str | None] = {}
        for field, value in zip(FIELDS, items[1:]):
            if value != MISSING and value not in VOCABULARY[field]:
                raise HetbenchError(f"{path} line {n}: {field} '{value}' is not one of {', '.join(VOCABULARY[field])} or None")
            values[field] = None if value == MISSING else value
        out[items[0]] = values
    return out


@dataclass
class FiveKCaptures:
    """The photographs of a FiveK copy labelled by one field: file -> label, and those left out."""

    label_of: dict[str, str]
    unlabelled: list[dict[str, str]]
    listed: int


def fivek_captures(raw_dir: str | Path, field: str) -> FiveKCaptures:
    """Every DNG of a FiveK copy with its ``field`` (``subject``, ``light``, ...) as label.

    A folder under ``raw_photos`` that is not ``HQa<first>to<last>``, one without ``photos``, or a DNG
    that ``categories.txt`` does not list is a :class:`HetbenchError` naming it; so is a
    ``categories.txt`` that is a link leading out of ``raw_dir`` (never read). A DNG that leads out of
    ``raw_dir`` is listed with its label like any other: the builders skip it unread
    (:func:`hetbench.builders.captures.refused_file`).
    """
    from hetbench.roots import inside_root

    if field not in FIELDS:
        raise HetbenchError(f"unknown FiveK field '{field}'; fields: {', '.join(FIELDS)}")
    root = dataset_root(raw_dir)
    if not inside_root(root / "categories.txt", raw_dir):
        raise HetbenchError(f"{root / 'categories.txt'} is a link leading outside the corpus folder '{raw_dir}'; "
                            "refusing to read it")
    categories = read_categories(root / "categories.txt")
    photos = root / "raw_photos"
    if not photos.is_dir():
        raise HetbenchError(f"{photos} is missing (expected {LAYOUT})")
    folders = sorted(p for p in photos.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not folders:
        raise HetbenchError(f"{photos} holds no HQa<first>to<last> folders (expected {LAYOUT})")
    label_of: dict[str, str] = {}
    unlabelled: list[dict[str, str]] = []
    for folder in folders:
        if not _FOLDER.fullmatch(folder.name):
            raise HetbenchError(f"{folder}: not an HQa<first>to<last> folder (expected {LAYOUT})")
        inner = folder / "photos"
        if not inner.is_dir():
            raise HetbenchError(f"{inner} is missing (expected {LAYOUT})")
        for f in sorted(inner.glob("*")):
            if f.suffix.lower() != ".dng":
                continue
            if f.stem not in categories:
                raise HetbenchError(f"{f}: not listed in {root / 'categories.txt'}")
            label = categories[f.stem][field]
            if label is None:
                unlabelled.append({"file": f.relative_to(root).as_posix(), "reason": f"no {field} in categories.txt"})
            else:
                label_of[str(f)] = label
    if not label_of:
        raise HetbenchError(f"no DNG under {photos} has a {field} in categories.txt")
    return FiveKCaptures(label_of, unlabelled, len(categories))
