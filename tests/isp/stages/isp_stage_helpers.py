"""Shared inputs of the ISP stage tests (tests/isp/stages/test_stage_*.py)."""

from __future__ import annotations

import colour
import cv2
import numpy as np
from skimage import data as skdata

from hetbench.isp.stages import white_balance
from hetbench.isp.stages import REGISTRY, StageContext

EXPECTED = {
    "denoise": {"fbdd": "baseline", "none": "option1", "bayes-shrink": "option2"},
    "wb": {"grey-edge": "baseline", "gray-world": "extra", "none": "option1", "white-patch": "option2", "camera": "extra"},
    "gamut": {"srgb": "baseline", "none": "option1", "prophoto": "option2"},
    "tone": {"srgb-gamma": "baseline", "none": "option1", "srgb-gamma+equalize": "option2"},
    "compress": {"jpeg85": "baseline", "none": "option1", "jpeg50": "option2"},
}
FLOAT_STAGES = ("denoise", "wb", "gamut")
#: a plausible camera -> sRGB matrix (rows sum to 1, so neutral stays neutral)
CAMERA_TO_SRGB = np.array([[1.7, -0.6, -0.1], [-0.25, 1.45, -0.2], [0.05, -0.55, 1.5]])


def _apply(stage: str, name: str, image: np.ndarray, ctx: StageContext | None = None) -> np.ndarray:
    return REGISTRY[stage][name].apply(image, ctx if ctx is not None else StageContext())


def _camera_scene(h: int = 60, w: int = 80, seed: int = 0) -> np.ndarray:
    """Linear camera RGB with a colour cast, a few clipped pixels and no neutral average."""
    rng = np.random.default_rng(seed)
    img = rng.uniform(0.02, 0.9, size=(h, w, 3)).astype(np.float32)
    img *= np.array([0.45, 0.9, 0.6], dtype=np.float32)  # a greenish, unbalanced sensor
    img[:6, :10] = 1.0  # saturated highlight
    img[6:9, :10, 1] = 0.99  # green alone clipped
    return img


def _astronaut_linear(size: int = 128) -> np.ndarray:
    rgb = cv2.resize(skdata.astronaut(), (size, size), interpolation=cv2.INTER_AREA)
    return colour.cctf_decoding(rgb / 255.0, "sRGB").astype(np.float32)


def _nonclipped(img: np.ndarray) -> np.ndarray:
    return (img < white_balance.CLIP_THRESHOLD).all(axis=-1)
