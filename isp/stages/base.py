"""The stage contract of the software ISP (HeteroSwitch Table 3).

Stages run in this order: ``demosaic`` (with ``denoise=fbdd``, inside LibRaw), ``denoise``,
``wb``, ``gamut``, ``tone``, ``chroma``, ``sharpen``, ``compress``: Table 3's six, and the two a
phone adds to them (:data:`TABLE3_STAGES` lists the paper's). Every variant is a :class:`StageVariant`; each stage
module lists its variants in ``VARIANTS`` (built with :func:`stage_variants`), and
:mod:`hetbench.isp.stages` gathers them in one explicit :class:`~hetbench.registry.Registry`.

Image states between stages:

* after ``demosaic`` and ``denoise``: float32 (H, W, 3) *linear camera RGB*, black level removed,
  scaled so that the white level is 1.0, not white balanced;
* after ``wb``: the same, white balanced (a neutral surface has R = G = B);
* after ``gamut``: float32 linear RGB in the output colour space (sRGB, ProPhoto, or camera RGB);
* after ``tone``, ``chroma`` (chroma noise reduction) and ``sharpen``: uint8 (H, W, 3)
  display-referred RGB;
* after ``compress``: uint8 (H, W, 3), what a viewer decodes from the stored file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hetbench.registry import Registry

STAGES = ("demosaic", "denoise", "wb", "gamut", "tone", "chroma", "sharpen", "compress")
#: the stages of HeteroSwitch Table 3 (``--stages all``); chroma and sharpen are a phone's additions.
TABLE3_STAGES = ("demosaic", "denoise", "wb", "gamut", "tone", "compress")
#: the HeteroSwitch Table 3 column of a variant; ``extra`` is an option the paper does not list.
TABLE3_COLUMNS = ("baseline", "option1", "option2", "extra")


@dataclass
class StageContext:
    """What stages may read besides the image: the capture's colour metadata, and a place to
    record side results (e.g. ``jpeg_bytes``) for the report."""

    as_shot_neutral: tuple[float, float, float] = (1.0, 1.0, 1.0)
    camera_to_srgb: np.ndarray = field(default_factory=lambda: np.eye(3))
    #: the capture's XYZ -> camera matrix (DNG ColorMatrix): a WB estimate's colour temperature; None: unknown
    color_matrix: np.ndarray | None = None
    #: the capture's two DNG calibrations (:mod:`hetbench.isp.calibration`); empty: ``color_matrix`` alone
    calibrations: tuple = ()
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


def stage_variants(stage: str, *variants: StageVariant) -> Registry[StageVariant]:
    """The variants of one stage as a :class:`~hetbench.registry.Registry` (name -> variant).

    Parameters
    ----------
    stage : str
        One of :data:`STAGES`; every variant must belong to it.
    *variants : StageVariant
        The variants, in the order the registry lists them (baseline first).

    Returns
    -------
    Registry
        Kind ``"<stage> option"``, so an unknown name reads "unknown wb option 'x'; choose one of: ...".

    Examples
    --------
    >>> from hetbench.isp.stages.base import StageVariant, stage_variants
    >>> noop = StageVariant("tone", "none", lambda image, ctx: image, "identity", "option1")
    >>> stage_variants("tone", noop)
    Registry('tone option', [none])
    """
    if stage not in STAGES:
        raise ValueError(f"unknown ISP stage {stage!r}; stages are: {', '.join(STAGES)}")
    for v in variants:
        if v.stage != stage or v.table3 not in TABLE3_COLUMNS:
            raise ValueError(f"variant {v.stage}={v.name} ({v.table3}) does not fit stage {stage!r}")
    return Registry(f"{stage} option", {v.name: v for v in variants})


def as_rgb_float32(image: np.ndarray, stage: str) -> np.ndarray:
    """``image`` as float32 (no copy when it already is), checked to be (H, W, 3).

    Parameters
    ----------
    image : array_like
        The image between two stages.
    stage : str
        Named in the error message.

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.stages.base import as_rgb_float32
    >>> as_rgb_float32(np.zeros((4, 4, 3)), "wb").dtype
    dtype('float32')
    """
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"{stage}: expected an (H, W, 3) image, got shape {img.shape}")
    return img.astype(np.float32, copy=False)
