"""The HeteroSwitch dataset (Kim et al., MLSys 2024, sec. 3.1): 12 ImageNet classes shown on a
monitor in a dark room and photographed by 9 phones on a tripod.

The project (``CASL-KU/HeteroSwitch``) publishes no loader and no description of the files inside
its Kaggle downloads (``kimgyudong/heteroswitch-<phone>``; GalaxyS6 and Nexus5X share one), so the
layout read here is an assumption, documented in the recipe: one folder per phone (named as in the
paper, any case), in it one folder per class (the class name with spaces, underscores or hyphens,
or its ImageNet wnid), in it the photographs::

    <data-dir>/<phone>/<class>/<image>

Folders between ``<data-dir>`` and the phone folders (one per Kaggle download) are allowed; RAW or
other non-image files are ignored. A photograph's capture is ``<class>/<file stem>``: when the
phones' files of one displayed image share a name they are one capture (and never split between
train and test); otherwise every photograph is its own capture.
"""

from __future__ import annotations

import re
from pathlib import Path

from hetbench.errors import HetbenchError
from hetbench.sources.device_corpora import Corpus, CorpusImage, first_unexpected, image_files, visible_dirs

#: HeteroSwitch Table 1: phone -> market share (%), the paper's client allocation weights
PHONES = {"GalaxyS22": 12.0, "GalaxyS9": 27.0, "GalaxyS6": 38.0, "VELVET": 2.0, "G7": 5.0, "G4": 8.0,
          "Pixel5": 1.0, "Pixel2": 3.0, "Nexus5X": 4.0}
#: the 12 classes (sec. 3.1) and their ImageNet wnids (matched by name: the paper gives none)
CLASSES = {"Chihuahua": "n02085620", "Altar": "n02699494", "Cock": "n01514668", "Abaya": "n02667093",
           "Ambulance": "n02701002", "Loggerhead": "n01664065", "Timber Wolf": "n02114367",
           "Tiger Beetle": "n02165105", "Accordion": "n02672831", "French Loaf": "n07684084",
           "Barber Chair": "n02791124", "Orangutan": "n02480495"}
LAYOUT = "<data-dir>/[<download>/]<phone>/<class>/<image>, phones " + ", ".join(PHONES)


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).lower()


_PHONE_OF = {_key(p): p for p in PHONES}
_CLASS_OF = {**{_key(c): c for c in CLASSES}, **{w: c for c, w in CLASSES.items()}}


def _phone_folders(root: Path) -> list[tuple[str, Path]]:
    """(phone, folder) of every phone folder: directly under ``root``, or one level down."""
    top = visible_dirs(root)
    if top and all(_key(p.name) in _PHONE_OF for p in top):
        return [(_PHONE_OF[_key(p.name)], p) for p in top]
    found = []
    for download in top:
        inner = visible_dirs(download)
        bad = first_unexpected([p.name for p in inner], lambda n: _key(n) in _PHONE_OF)
        if bad or not inner:
            where = download / (bad or "")
            raise HetbenchError(f"{where}: not a phone folder (expected {LAYOUT})")
        found += [(_PHONE_OF[_key(p.name)], p) for p in inner]
    return found


def scan(root: Path) -> list[CorpusImage]:
    """Every photograph under ``root`` (sorted by file); the first folder that breaks the layout is a
    :class:`HetbenchError` naming it."""
    phones = _phone_folders(root)
    if not phones:
        raise HetbenchError(f"'{root}' holds no phone folders (expected {LAYOUT})")
    seen: dict[str, Path] = {}
    out: list[CorpusImage] = []
    for phone, folder in phones:
        if phone in seen:
            raise HetbenchError(f"{folder}: a second folder of phone {phone} (the first is {seen[phone]})")
        seen[phone] = folder
        classes = visible_dirs(folder)
        bad = first_unexpected([p.name for p in classes], lambda n: _key(n) in _CLASS_OF)
        if bad or not classes:
            raise HetbenchError(f"{folder / (bad or '')}: not one of the 12 class folders ({', '.join(CLASSES)})")
        for cls in classes:
            label = _CLASS_OF[_key(cls.name)]
            for f in image_files(cls):
                out.append(CorpusImage(f.relative_to(root).as_posix(), label, phone, f"{label}/{f.stem}"))
    if not out:
        raise HetbenchError(f"'{root}' holds no images (expected {LAYOUT})")
    return sorted(out, key=lambda im: im.file)


CORPUS = Corpus(
    name="heteroswitch-phones",
    description="the HeteroSwitch dataset (Kim et al., MLSys 2024): 12 ImageNet classes displayed on a monitor "
                "and photographed by 9 phones; device = phone, label = class",
    devices=tuple(PHONES),
    scan=scan,
    layout=LAYOUT,
    weights=dict(PHONES),
)
