"""The stage contract of the software ISP (HeteroSwitch Table 3).

Stages run in this order: ``demosaic`` (with ``denoise=fbdd``, inside LibRaw), ``denoise``,
``wb``, ``gamut``, ``tone``, ``compress``. Every variant is a :class:`StageVariant` registered
under (stage, name); the pipeline looks variants up by name and lists the valid ones on a typo.

Image states between stages:

* after ``demosaic`` and ``denoise``: float32 (H, W, 3) *linear camera RGB*, black level removed,
  scaled so that the white level is 1.0, not white balanced;
* after ``wb``: the same, white balanced (a neutral surface has R = G = B);
* after ``gamut``: float32 linear RGB in the output colour space (sRGB, ProPhoto, or camera RGB);
* after ``tone``: uint8 (H, W, 3) display-referred RGB;
* after ``compress``: uint8 (H, W, 3), what a viewer decodes from the stored file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

STAGES = ("demosaic", "denoise", "wb", "gamut", "tone", "compress")


@dataclass
class StageContext:
    """What stages may read besides the image: the capture's colour metadata, and a place to
    record side results (e.g. ``jpeg_bytes``) for the report."""

    as_shot_neutral: tuple[float, float, float] = (1.0, 1.0, 1.0)
    camera_to_srgb: np.ndarray = field(default_factory=lambda: np.eye(3))
    info: dict = field(default_factory=dict)
    #: side of the square image the pipeline will downsize to afterwards (None: full size); the JPEG
    #: stage may then decode at a reduced DCT scale, which is what that downsizing would average away
    output_size: int | None = None


@dataclass(frozen=True)
class StageVariant:
    """One named option of one stage; ``table3`` tells which Table 3 column it is (or ``extra``)."""

    stage: str
    name: str
    apply: Callable[[np.ndarray, StageContext], np.ndarray]
    description: str
    table3: str  # "baseline" | "option1" | "option2" | "extra"


REGISTRY: dict[str, dict[str, StageVariant]] = {s: {} for s in STAGES}


def register(stage: str, name: str, description: str, table3: str):
    """Decorator: register ``fn(image, ctx) -> image`` as variant ``name`` of ``stage``."""
    if stage not in REGISTRY:
        raise ValueError(f"unknown stage {stage!r}")

    def deco(fn: Callable[[np.ndarray, StageContext], np.ndarray]):
        REGISTRY[stage][name] = StageVariant(stage, name, fn, description, table3)
        return fn

    return deco
