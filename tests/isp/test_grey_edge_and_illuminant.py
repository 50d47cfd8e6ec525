"""The grey-edge estimate recovers the light of an achromatic scene, ignores clipped pixels, and the
illuminant constraint agrees with colour-science's CCT and keeps estimates on real lights."""

from __future__ import annotations

import colour
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.isp.capture import SRGB_TO_XYZ
from hetbench.isp.grey_edge import grey_edge_estimate
from hetbench.isp.illuminant import CCT_RANGE, MAX_DUV, cct_duv, cct_to_xy, constrain_neutral, neutral_to_xy, \
    xy_to_neutral

CANON = np.array([[0.6461, -0.1164, -0.0857], [-0.3825, 1.1597, 0.2534], [-0.0416, 0.1540, 0.6039]])


def _texture(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.02, 0.45, (80, 80, 1)).astype(np.float32)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.2, 2.0), st.floats(0.2, 2.0), st.integers(0, 100))
def test_grey_edge_recovers_the_light_of_an_achromatic_scene(r, b, seed):
    light = np.float32([r, 1.0, b]) / np.float32(max(r, 1.0, b) * 1.1)
    estimate = grey_edge_estimate(_texture(seed) * light)
    assert np.allclose(estimate, [r, 1.0, b], rtol=1e-4)


def test_clipped_pixels_do_not_vote():
    scene = _texture(1) * np.float32([0.6, 1.0, 0.5])
    clean = grey_edge_estimate(scene)
    scene[10:30, 10:30] = (1.0, 0.2, 1.0)  # a saturated magenta blob: clipped channels measure no light
    assert np.allclose(grey_edge_estimate(scene), clean, rtol=0.05)


def test_grey_edge_needs_a_positive_integer_norm():
    with pytest.raises(ValueError, match="positive integer"):
        grey_edge_estimate(_texture(0), p=1.5)


@pytest.mark.parametrize("cct", [2000, 2856, 4000, 5003, 6504, 9000, 12000])
@pytest.mark.parametrize("duv", [-0.01, 0.0, 0.005])
def test_cct_and_duv_agree_with_colour_science(cct, duv):
    xy = colour.UCS_uv_to_xy(colour.temperature.CCT_to_uv_Ohno2013(np.array([cct, duv])))
    t, d = cct_duv(xy)
    assert abs(1e6 / t - 1e6 / cct) <= 0.5 and abs(d - duv) <= 2e-4  # half a mired: invisible
    assert np.allclose(cct_to_xy(t, d), xy, atol=1e-6)  # our own inverse returns the chromaticity


@settings(max_examples=30, deadline=None)
@given(st.floats(0.3, 1.2), st.floats(0.3, 1.2))
def test_a_neutral_survives_the_round_trip_through_xy(r, b):
    n = xy_to_neutral(neutral_to_xy((r, 1.0, b), CANON), CANON)
    assert np.allclose(n, [r, 1.0, b], rtol=1e-9)


def test_lights_a_camera_meets_are_kept_and_others_moved_onto_them():
    tungsten = xy_to_neutral(cct_to_xy(2900, -0.002), CANON)
    n, t, d = constrain_neutral(tungsten, CANON)
    assert np.allclose(n, tungsten) and abs(t - 2900) < 1 and abs(d + 0.002) < 1e-6
    for xy in [cct_to_xy(1500, 0.0), cct_to_xy(20000, 0.0), cct_to_xy(4000, 0.03), cct_to_xy(4000, -0.03)]:
        n, t, d = constrain_neutral(xy_to_neutral(xy, CANON), CANON)
        t2, d2 = cct_duv(neutral_to_xy(n, CANON))
        assert CCT_RANGE[0] - 1 <= t2 <= CCT_RANGE[1] + 1 and abs(d2) <= MAX_DUV + 1e-6


def test_the_grey_edge_white_balance_corrects_a_tungsten_scene():
    """A grey scene under a 3000 K light, seen by a camera whose RGB is linear sRGB: grey-edge's light,
    constrained, is 3000 K and the balanced scene is neutral."""
    from hetbench.isp.stages.base import StageContext
    from hetbench.isp.stages.white_balance import wb_grey_edge

    cm = np.linalg.inv(SRGB_TO_XYZ)
    light = xy_to_neutral(cct_to_xy(3000, 0.0), cm).astype(np.float32)
    ctx = StageContext(color_matrix=cm)
    out = wb_grey_edge(_texture(2) * (light / light.max() * np.float32(0.9)), ctx)
    assert abs(ctx.info["wb_cct"] - 3000) < 15
    ratios = out.reshape(-1, 3).mean(0)
    assert np.allclose(ratios / ratios[1], 1.0, atol=2e-3)
