"""Tone stage (hetbench.isp.stages.tone)."""

from __future__ import annotations

import colour
import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from isp_stage_helpers import _apply

from hetbench.isp.stages import tone


# ---------------------------------------------------------------- tone


def _ramp(n: int = 4097, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    x = np.linspace(lo, hi, n, dtype=np.float32)
    return np.repeat(x[None, :, None], 3, axis=2)


def test_srgb_gamma_matches_iec_61966_2_1():
    ramp = _ramp()
    out = _apply("tone", "srgb-gamma", ramp).astype(np.int32)
    want = np.rint(255 * colour.cctf_encoding(ramp.astype(np.float64), "sRGB")).astype(np.int32)
    assert np.abs(out - want).max() <= 1
    assert np.mean(out == want) > 0.99  # only rounding ties may differ


def test_tone_none_is_linear():
    ramp = _ramp()
    out = _apply("tone", "none", ramp).astype(np.float64)
    assert np.abs(out - 255.0 * ramp).max() <= 0.5 + 1e-3
    assert out[0, 0, 0] == 0 and out[0, -1, 0] == 255


@pytest.mark.parametrize("name", ["srgb-gamma", "none"])
def test_tone_clips_out_of_range_values(name):
    moderate = np.array([[[-1.0, 2.0, 30000.0], [-1e9, 1.5, 0.0]]], np.float32)  # saturating path
    huge = np.array([[[-1.0, 2.0, 1e9], [-1e9, np.inf, 0.0]]], np.float32)  # truncated first
    for img in (moderate, huge):
        np.testing.assert_array_equal(_apply("tone", name, img), [[[0, 255, 255], [0, 255, 0]]])


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(-0.5, 1.5, width=32), min_size=2, max_size=64))
def test_srgb_gamma_is_monotone(values):
    x = np.sort(np.array(values, np.float32))
    img = np.repeat(x[None, :, None], 3, axis=2)
    out = tone.srgb_gamma(img)[0, :, 0].astype(int)
    assert np.all(np.diff(out) >= 0)


def test_equalize_increases_lightness_contrast():
    yy, xx = np.mgrid[0:240, 0:320].astype(np.float32)
    texture = 0.5 + 0.25 * np.sin(xx / 9.0) * np.cos(yy / 13.0) + 0.1 * (xx / 320.0)
    lin = np.stack([texture * 0.20, texture * 0.18, texture * 0.15], axis=-1).astype(np.float32) + 0.05  # dull, hazy
    base = _apply("tone", "srgb-gamma", lin)
    eq = _apply("tone", "srgb-gamma+equalize", lin)
    l_base = cv2.cvtColor(base, cv2.COLOR_RGB2Lab)[..., 0].astype(np.float64)
    l_eq = cv2.cvtColor(eq, cv2.COLOR_RGB2Lab)[..., 0].astype(np.float64)
    assert l_eq.std() > 1.3 * l_base.std()
