"""White-balance stage (HeteroSwitch Table 3, row "Color transformation").

Input: float32 (H, W, 3) linear camera RGB, not white balanced. Output: the same, multiplied by
per-channel gains so that a neutral surface has R = G = B. Gains are normalised so that the green
gain is 1 (the DNG convention). Nothing is clipped, so highlights may exceed 1.0 after WB; the
tone stage clips. As a result, a sensor-saturated pixel (1, 1, 1) becomes (g_R, 1, g_B) and, after
the colour matrix and the clip, renders tinted (usually magenta) instead of white. dcraw avoids
this by normalising the *smallest* gain to 1 and clipping at the white level (highlight mode 0).

Variants:

* ``gray-world`` (baseline): the gray-world assumption (Buchsbaum 1980; Ebner 2007, *Color
  Constancy*, section 6.2). The scene averages to gray, so the gains equalise the three channel
  means.
* ``none`` (option 1, '-' in Table 3): gains (1, 1, 1). Camera RGB keeps the sensor's cast
  (usually green).
* ``white-patch`` (option 2): the white-patch / max-RGB assumption (Land & McCann 1971; Ebner
  2007, section 6.1). The brightest surface is white. For robustness to noise and specular
  outliers, "brightest" is the per-channel 99th percentile rather than the maximum.
* ``camera`` (extra): the camera's own estimate, gains = 1 / AsShotNeutral (DNG spec).

Statistics are computed over *non-clipped* pixels only: a pixel with any channel >= 0.98 (of the
white level) is excluded, because a saturated channel no longer measures the light. If every
pixel is clipped, all pixels are used. To stay cheap on 12 MP frames the statistics are taken on
a strided subsample (every ``step``-th pixel in each direction, chosen so that about 0.75 MP
remain: step 4 at 12 MP, step 1 below 3 MP). Gains are clamped to [1/64, 64], which is far
beyond any real camera, so that a dead channel cannot give infinite gains. The gains are applied
as a diagonal 3x3 matrix with :func:`cv2.transform` in float32.

Each registered variant records its gains in ``ctx.info["wb_gains"]`` as (R, G, B).
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import StageContext, register

#: a pixel with any channel at or above this fraction of the white level counts as clipped.
CLIP_THRESHOLD = 0.98
#: the statistics subsample keeps about this many pixels.
SAMPLE_PIXELS = 750_000
#: white-patch percentile.
WHITE_PATCH_PERCENTILE = 99.0
#: gains are clamped to [1 / GAIN_LIMIT, GAIN_LIMIT].
GAIN_LIMIT = 64.0


def _as_rgb_float32(image: np.ndarray, stage: str) -> np.ndarray:
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"{stage}: expected an (H, W, 3) image, got shape {img.shape}")
    return img.astype(np.float32, copy=False)


def sample_step(shape: tuple[int, ...], target: int = SAMPLE_PIXELS) -> int:
    """Stride of the statistics subsample: the largest step that keeps >= ``target`` pixels."""
    n = int(shape[0]) * int(shape[1])
    return max(1, int(np.sqrt(n / target)))


def _valid_planes(image: np.ndarray, clip: float, step: int | None) -> tuple[list[np.ndarray], np.ndarray]:
    """The three channel planes of the strided subsample, and the mask of its non-clipped pixels."""
    img = _as_rgb_float32(image, "wb")
    if img.size == 0:
        raise ValueError("wb: cannot estimate gains on an empty image")
    if step is None:
        step = sample_step(img.shape)
    sub = np.ascontiguousarray(img[:: max(1, int(step)), :: max(1, int(step))])
    planes = list(cv2.split(sub))
    brightest = cv2.max(cv2.max(planes[0], planes[1]), planes[2])
    valid = brightest < clip
    if not valid.any():
        valid = np.ones_like(valid)
    return planes, valid


def _gains_from_reference(ref: np.ndarray) -> np.ndarray:
    """Gains that map per-channel reference values ``ref`` to gray: ref_G / ref_c, clamped.

    A non-positive or non-finite reference gives gain 1 for that channel, or for all three if it
    is the green one.
    """
    ref = np.asarray(ref, dtype=np.float64).reshape(3)
    ok = np.isfinite(ref) & (ref > 0)
    if not ok[1]:
        return np.ones(3)
    gains = np.where(ok, ref[1] / np.where(ok, ref, 1.0), 1.0)
    return np.clip(gains, 1.0 / GAIN_LIMIT, GAIN_LIMIT)


def gray_world_gains(image: np.ndarray, *, clip: float = CLIP_THRESHOLD, step: int | None = None) -> np.ndarray:
    """Gray-world gains (R, G, B), G = 1: they make the channel means of non-clipped pixels equal.

    Ebner 2007, *Color Constancy*, section 6.2 (Buchsbaum 1980). ``step`` is the subsample
    stride (``None``: :func:`sample_step`; 1 gives exact statistics over the whole image).
    """
    planes, valid = _valid_planes(image, clip, step)
    mask = valid.view(np.uint8)
    means = np.array([cv2.mean(p, mask=mask)[0] for p in planes])
    return _gains_from_reference(means)


def white_patch_gains(
    image: np.ndarray,
    *,
    percentile: float = WHITE_PATCH_PERCENTILE,
    clip: float = CLIP_THRESHOLD,
    step: int | None = None,
) -> np.ndarray:
    """White-patch gains (R, G, B), G = 1: the per-channel ``percentile`` of non-clipped pixels
    maps to neutral, gains = p_G / p_c.

    Ebner 2007, section 6.1 (white patch retinex, Land & McCann 1971), with a high percentile
    instead of the maximum for robustness.
    """
    planes, valid = _valid_planes(image, clip, step)
    ref = np.array([np.percentile(p[valid], percentile) for p in planes])
    return _gains_from_reference(ref)


def camera_gains(as_shot_neutral) -> np.ndarray:
    """Camera gains (R, G, B) = 1 / AsShotNeutral, normalised to G = 1 (DNG spec, AsShotNeutral).

    A patch whose camera RGB is proportional to ``as_shot_neutral`` becomes neutral.
    """
    n = np.asarray(as_shot_neutral, dtype=np.float64).reshape(-1)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or np.any(n <= 0):
        raise ValueError(f"as_shot_neutral must be 3 positive finite values, got {as_shot_neutral!r}")
    return n[1] / n


def apply_gains(image: np.ndarray, gains) -> np.ndarray:
    """Multiply each channel by its gain (float32 out), as a diagonal matrix via cv2.transform."""
    img = np.ascontiguousarray(_as_rgb_float32(image, "wb"))
    g = np.asarray(gains, dtype=np.float64).reshape(3)
    if img.size == 0:
        return img.copy()
    return cv2.transform(img, np.diag(g).astype(np.float32))


def clip_highlights(balanced: np.ndarray, gains) -> np.ndarray:
    """Clip every channel at the level where the weakest channel saturates (dcraw / LibRaw
    ``highlight_mode=clip``): a pixel clipped on the sensor (1, 1, 1) becomes (g_R, 1, g_B) after
    the gains and would render magenta; clipped at min(gains) it stays neutral."""
    level = float(np.min(np.asarray(gains, dtype=np.float64)))
    return np.minimum(balanced, np.float32(level), out=balanced)


def _finish(image: np.ndarray, gains: np.ndarray, ctx: StageContext) -> np.ndarray:
    ctx.info["wb_gains"] = tuple(float(g) for g in gains)
    return clip_highlights(apply_gains(image, gains), gains)


@register("wb", "gray-world", "gray world (Ebner 2007): equal channel means over non-clipped pixels", "baseline")
def _apply_gray_world(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    return _finish(image, gray_world_gains(image), ctx)


@register("wb", "none", "no white balance (gains 1, 1, 1)", "option1")
def _apply_none(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    ctx.info["wb_gains"] = (1.0, 1.0, 1.0)
    return _as_rgb_float32(image, "wb")


@register("wb", "white-patch", "white patch (Ebner 2007): per-channel 99th percentile maps to neutral", "option2")
def _apply_white_patch(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    return _finish(image, white_patch_gains(image), ctx)


@register("wb", "camera", "camera white balance: gains 1 / AsShotNeutral, G = 1", "extra")
def _apply_camera(image: np.ndarray, ctx: StageContext) -> np.ndarray:
    return _finish(image, camera_gains(ctx.as_shot_neutral), ctx)
