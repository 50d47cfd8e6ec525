"""An ISP pipeline: one variant per stage, rendering a RawCapture to an 8-bit sRGB image.

Written as a string in stage order, e.g.
``demosaic=ppg,denoise=fbdd,wb=grey-edge,gamut=srgb,tone=srgb-gamma,compress=jpeg85`` (the
HeteroSwitch Table 3 baseline, except its white balance: the paper's gray world is ``wb=gray-world``,
and hetbench's baseline estimates the light by grey edges constrained to real illuminants, see
:mod:`hetbench.isp.stages.white_balance`); stages left out take the baseline.

Every pipeline also exposes its image (:mod:`hetbench.isp.exposure`): one gain per capture, metered
on the demosaiced green channel, which no WB, gamut or tone variant changes, and applied by the
white-balance stage in the same multiply as its own gains. :func:`table3_variants` gives
the baseline plus, for each listed stage, every other Table 3 option with all other stages at
baseline: one "device" per variant.

:class:`Renderer` renders many pipelines of one capture and shares the work of common prefixes:
pipelines are visited in sorted order (a depth-first walk of the prefix tree), so each distinct
prefix is computed once and at most one image state per stage is alive at a time. LibRaw runs FBDD
inside its demosaic call, so the first cached level is (demosaic, FBDD on/off); ``denoise=none``
and ``denoise=bayes-shrink`` share the same LibRaw output.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.isp.capture import RawCapture
from hetbench.isp.exposure import exposure_gain
from hetbench.isp.stages import REGISTRY, STAGES, TABLE3_STAGES, StageContext
from hetbench.isp.stages.demosaic import libraw_linear

BASELINE: dict[str, str] = {
    "demosaic": "ppg",
    "denoise": "fbdd",
    "wb": "grey-edge",
    "gamut": "srgb",
    "tone": "srgb-gamma",
    "chroma": "blur-mild",
    "sharpen": "usm-mild",
    "compress": "jpeg85",
}
#: the reference pipelines a Table 3 device set can be built around (``build iso-isp --reference``): ``phone``
#: is :data:`BASELINE`, hetbench's phone-like rendering; ``paper`` is HeteroSwitch Table 3's Baseline column
#: as printed: gray-world white balance and no chroma noise reduction or sharpening stage (Table 3 has
#: neither). Both meter the exposure the same way (:mod:`hetbench.isp.exposure`).
REFERENCES: dict[str, dict[str, str]] = {
    "phone": {},
    "paper": {"wb": "gray-world", "chroma": "none", "sharpen": "none"},
}
STAGE_ALIASES = {"white_balance": "wb", "white-balance": "wb", "color": "wb", "compression": "compress"}


def _stage_name(text: str) -> str:
    """The stage ``text`` names (case-insensitive, aliases allowed); the registry rejects others."""
    name = STAGE_ALIASES.get(text.strip().lower(), text.strip().lower())
    REGISTRY[name]  # raises UnknownNameError (a HetbenchError) listing the stages
    return name


def _variant_name(stage: str, text: str) -> str:
    """The variant ``text`` names in ``stage``; the stage's registry rejects others."""
    return REGISTRY[stage][text.strip().lower()].name


@dataclass(frozen=True, order=True)
class Pipeline:
    """One variant name per stage, in :data:`STAGES` order."""

    choices: tuple[str, ...]

    @classmethod
    def parse(cls, text: str | dict | None = None) -> "Pipeline":
        """From ``"stage=variant,..."`` (or a dict); missing stages take the baseline.

        Parameters
        ----------
        text : str, dict or None
            ``"wb=white-patch,tone=none"`` or ``{"wb": "white-patch"}``; stage aliases
            (``white_balance``, ``compression``) and any case are accepted.

        Returns
        -------
        Pipeline

        References
        ----------
        HeteroSwitch (MLSys 2024) Table 3 (the baseline column).

        Examples
        --------
        >>> from hetbench.isp.pipeline import Pipeline
        >>> Pipeline.parse("wb=white-patch").short_name
        'wb=white-patch'
        >>> Pipeline.parse("wb=purple")
        Traceback (most recent call last):
        ...
        hetbench.registry.UnknownNameError: unknown wb option 'purple'; choose one of: grey-edge, gray-world, none, white-patch, camera
        """
        chosen = dict(BASELINE)
        items = text.items() if isinstance(text, dict) else (
            [part.split("=", 1) if "=" in part else (part, "") for part in (text or "").split(",") if part.strip()]
        )
        for stage, variant in items:
            stage = _stage_name(stage)
            if not str(variant).strip():
                raise HetbenchError(f"ISP stage '{stage}' needs an option, e.g. {stage}={BASELINE[stage]}")
            chosen[stage] = _variant_name(stage, str(variant))
        return cls(tuple(chosen[s] for s in STAGES))

    @classmethod
    def baseline(cls) -> "Pipeline":
        return cls(tuple(BASELINE[s] for s in STAGES))

    def __getitem__(self, stage: str) -> str:
        return self.choices[STAGES.index(stage)]

    def __str__(self) -> str:
        return ",".join(f"{s}={v}" for s, v in zip(STAGES, self.choices))

    def as_dict(self) -> dict[str, str]:
        return dict(zip(STAGES, self.choices))

    @classmethod
    def reference(cls, name: str = "phone") -> "Pipeline":
        """The reference pipeline ``name`` of :data:`REFERENCES` (``phone``: :data:`BASELINE`)."""
        if name not in REFERENCES:
            raise HetbenchError(f"unknown reference pipeline '{name}'; choose one of: {', '.join(REFERENCES)}")
        return cls.parse(REFERENCES[name])

    def differs_from_baseline(self, base: "Pipeline | None" = None) -> list[str]:
        """``stage=variant`` for each stage where this pipeline differs from ``base`` (default :data:`BASELINE`)."""
        ref = BASELINE if base is None else base.as_dict()
        return [f"{s}={v}" for s, v in zip(STAGES, self.choices) if ref[s] != v]

    @property
    def short_name(self) -> str:
        """``baseline`` or the changed stages, e.g. ``wb=white-patch``."""
        return self.name_against(None)

    def name_against(self, base: "Pipeline | None") -> str:
        """``baseline`` when this is ``base`` (default :data:`BASELINE`), else the stages changed from it.

        Examples
        --------
        >>> from hetbench.isp.pipeline import Pipeline
        >>> paper = Pipeline.reference("paper")
        >>> paper.short_name, paper.name_against(paper), Pipeline.parse({**paper.as_dict(), "wb": "none"}).name_against(paper)
        ('wb=gray-world+chroma=none+sharpen=none', 'baseline', 'wb=none')
        """
        return "+".join(self.differs_from_baseline(base)) or "baseline"

    def _walk_key(self) -> tuple:
        # LibRaw output depends on (demosaic, FBDD on/off): sort so shared work is adjacent
        return (self["demosaic"], self["denoise"] != "fbdd", self["denoise"]) + self.choices[2:]


def parse_stage_list(text: str) -> list[str]:
    """``"wb,tone"`` or ``"all"`` (Table 3's six stages) -> stage names (validated, in stage order).

    Parameters
    ----------
    text : str
        Comma-separated stage names, or ``all``.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from hetbench.isp.pipeline import parse_stage_list
    >>> parse_stage_list("tone,white_balance")
    ['wb', 'tone']
    """
    if text.strip().lower() == "all":
        return list(TABLE3_STAGES)
    names = [_stage_name(t) for t in text.split(",") if t.strip()]
    if not names:
        raise HetbenchError(f"`stages` is empty; choose from: all, {', '.join(STAGES)}")
    return [s for s in STAGES if s in names]


def table3_variants(stages: Sequence[str], base: Pipeline | None = None) -> list[Pipeline]:
    """The baseline, then each Table 3 option (option 1, option 2) of each listed stage with every
    other stage at baseline (HeteroSwitch sec. 3.4 protocol); for the phone stages outside Table 3
    (chroma, sharpen), each of their options other than the baseline's.

    Parameters
    ----------
    stages : sequence of str
        Stage names (see :func:`parse_stage_list`).
    base : Pipeline, optional
        The baseline every variant changes one stage of (default :data:`BASELINE`, the ``phone``
        reference; ``Pipeline.reference("paper")`` is Table 3's own). Name the variants with
        :meth:`Pipeline.name_against` this base.

    Returns
    -------
    list of Pipeline
        ``1 + 2 * len(stages)`` pipelines.

    References
    ----------
    HeteroSwitch (MLSys 2024) section 3.4 and Table 3.

    Examples
    --------
    >>> from hetbench.isp.pipeline import table3_variants
    >>> [p.short_name for p in table3_variants(["gamut"])]
    ['baseline', 'gamut=none', 'gamut=prophoto']
    """
    base = Pipeline.baseline() if base is None else base
    out = [base]
    for stage in stages:
        for variant in REGISTRY[stage].values():
            # a Table 3 stage's two options; a phone stage's (chroma, sharpen) every option but the base's
            table3 = variant.table3 in ("option1", "option2")
            phone = stage not in TABLE3_STAGES and variant.table3 in ("extra", "baseline")
            if (table3 or phone) and variant.name != base[stage]:
                out.append(Pipeline.parse({**base.as_dict(), stage: variant.name}))
    return out


# ---- rendering ------------------------------------------------------------------------------
def _level_keys(p: Pipeline) -> list[tuple]:
    """Cache keys of the six levels: LibRaw (demosaic, FBDD on/off), then one per later stage."""
    return [(p["demosaic"], p["denoise"] == "fbdd")] + [(s, p[s]) for s in STAGES[1:]]


def _common_prefix(a: list, b: list) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n

@dataclass
class Rendered:
    """A rendered image (uint8 RGB, ``size`` x ``size``) and what the report wants to know."""

    image: np.ndarray
    pipeline: Pipeline
    jpeg_bytes: int | None
    seconds: float


def resize_square(image: np.ndarray, size: int | None) -> np.ndarray:
    """Scale the shorter side to ``size`` (area interpolation) and centre-crop to a square.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) image.
    size : int or None
        Side of the output square; None returns ``image`` unchanged.

    Returns
    -------
    numpy.ndarray
        (size, size, 3), the ``image`` dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.pipeline import resize_square
    >>> resize_square(np.zeros((8, 12, 3), np.uint8), 4).shape
    (4, 4, 3)
    """
    if size is None:
        return image
    import cv2

    h, w = image.shape[:2]
    scale = size / min(h, w)
    nh, nw = max(size, round(h * scale)), max(size, round(w * scale))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC
    resized = cv2.resize(image, (nw, nh), interpolation=interp)
    top, left = (nh - size) // 2, (nw - size) // 2
    return np.ascontiguousarray(resized[top : top + size, left : left + size])


@dataclass
class Renderer:
    """Renders pipelines of a capture with shared-prefix caching (see module docstring).

    ``size``: side of the square output image, or None for the ISP's own resolution.
    """

    size: int | None = 224
    stats: dict = field(default_factory=lambda: {"stage_runs": 0, "stage_hits": 0})

    def render(self, capture: RawCapture, pipeline: Pipeline | str) -> Rendered:
        return self.render_all(capture, [pipeline])[0]

    def render_all(self, capture: RawCapture, pipelines: Iterable[Pipeline | str]) -> list[Rendered]:
        """Render every pipeline of one capture; results come back in the order given."""
        items = [p if isinstance(p, Pipeline) else Pipeline.parse(p) for p in pipelines]
        order = sorted(range(len(items)), key=lambda i: items[i]._walk_key())
        walk_keys = [_level_keys(items[i]) for i in order]
        # how many leading states the *next* pipeline of the walk reuses: deeper ones are freed as
        # soon as they have been used (12-MP float states are 144 MB each)
        reused_next = [_common_prefix(walk_keys[k], walk_keys[k + 1]) for k in range(len(order) - 1)] + [0]
        ctx_base = dict(
            as_shot_neutral=capture.as_shot_neutral, camera_to_srgb=capture.camera_to_srgb(), output_size=self.size,
            color_matrix=capture.color_matrix, calibrations=capture.calibrations,
        )
        path_keys: list[tuple] = []
        path_states: list[np.ndarray | None] = []
        path_info: list[dict] = []
        path_secs: list[float] = []
        results: list[Rendered | None] = [None] * len(items)
        for step, i in enumerate(order):
            p = items[i]
            keys = walk_keys[step]
            keep = _common_prefix(keys, path_keys)
            self.stats["stage_hits"] += keep
            del path_keys[keep:], path_states[keep:], path_info[keep:], path_secs[keep:]
            for level in range(keep, len(keys)):
                t0 = time.perf_counter()
                info = dict(path_info[-1]) if path_info else {}
                if level == 0:
                    state = libraw_linear(capture, p["demosaic"], fbdd=p["denoise"] == "fbdd")
                else:
                    stage = STAGES[level]
                    ctx = StageContext(info=info, **ctx_base)
                    state = REGISTRY[stage][p[stage]].apply(path_states[-1], ctx)  # wb applies the exposure gain
                    if stage == "denoise":  # metered once on the denoised camera RGB, shared by every later variant
                        info["exposure_gain"] = exposure_gain(state)
                self.stats["stage_runs"] += 1
                if level >= 1 and level - 1 >= reused_next[step]:
                    path_states[level - 1] = None  # not needed again
                path_keys.append(keys[level])
                path_states.append(state)
                path_info.append(info)
                path_secs.append((path_secs[-1] if path_secs else 0.0) + time.perf_counter() - t0)
            image = resize_square(path_states[-1], self.size)
            results[i] = Rendered(image, p, path_info[-1].get("jpeg_bytes"), path_secs[-1])
        return [r for r in results if r is not None]
