"""White-balance stage (hetbench.isp.stages.white_balance)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from isp_stage_helpers import _apply, _camera_scene, _nonclipped

from hetbench.isp.stages import StageContext, white_balance


# ---------------------------------------------------------------- white balance


def test_gray_world_equalises_channel_means_of_nonclipped_pixels():
    img = _camera_scene()
    mask = _nonclipped(img)
    ctx = StageContext()
    out = _apply("wb", "gray-world", img, ctx)  # small image: statistics are exact (step 1)
    means = out[mask].astype(np.float64).mean(axis=0)
    np.testing.assert_allclose(means, means[1], rtol=1e-5)
    gains = np.array(ctx.info["wb_gains"])
    assert gains[1] == 1.0
    # the clipped pixels were left out: with them the means would not be equal
    assert np.ptp(out.reshape(-1, 3).mean(axis=0)) > 1e-3


def test_gray_world_subsampled_estimate_is_close():
    img = _camera_scene(512, 512, seed=3)
    exact = white_balance.gray_world_gains(img, step=1)
    sub = white_balance.gray_world_gains(img, step=4)
    np.testing.assert_allclose(sub, exact, rtol=0.02)
    assert white_balance.sample_step((3000, 4000)) == 4
    assert white_balance.sample_step((600, 800)) == 1


def test_white_patch_maps_brightest_percentile_to_neutral():
    img = _camera_scene()
    mask = _nonclipped(img)
    ctx = StageContext()
    out = _apply("wb", "white-patch", img, ctx)
    p = np.percentile(out[mask].astype(np.float64), 99, axis=0)
    np.testing.assert_allclose(p, p[1], rtol=1e-5)
    assert ctx.info["wb_gains"][1] == 1.0


def test_camera_wb_makes_as_shot_neutral_patch_neutral():
    neutral = (0.42, 1.0, 0.63)
    patch = np.broadcast_to(np.array(neutral, np.float32) * np.float32(0.7), (8, 8, 3)).copy()
    ctx = StageContext(as_shot_neutral=neutral)
    out = _apply("wb", "camera", patch, ctx)
    np.testing.assert_allclose(out, 0.7, rtol=1e-6)
    np.testing.assert_allclose(ctx.info["wb_gains"], (1 / 0.42, 1.0, 1 / 0.63), rtol=1e-12)


def test_camera_wb_rejects_bad_metadata():
    with pytest.raises(ValueError):
        white_balance.camera_gains((0.0, 1.0, 0.5))


def test_wb_none_is_identity():
    img = _camera_scene()
    np.testing.assert_array_equal(_apply("wb", "none", img), img)


_positive_images = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=3, max_dims=3, min_side=1, max_side=12).map(lambda s: (s[0], s[1], 3)),
    elements=st.floats(float(np.float32(1e-6)), 1.0, width=32),
)


@settings(max_examples=60, deadline=None)
@given(img=_positive_images)
def test_wb_gains_positive_and_finite(img):
    for fn in (white_balance.gray_world_gains, white_balance.white_patch_gains):
        gains = fn(img)
        assert gains.shape == (3,)
        assert np.all(np.isfinite(gains)) and np.all(gains > 0)
        assert gains[1] == 1.0


@settings(max_examples=40, deadline=None)
@given(img=_positive_images, scale=st.floats(0.1, 1.9))
def test_wb_gains_ignore_exposure(img, scale):
    img = img * np.float32(0.5)  # stay below the clip threshold after scaling
    for fn in (white_balance.gray_world_gains, white_balance.white_patch_gains):
        np.testing.assert_allclose(fn(img * np.float32(scale)), fn(img), rtol=1e-4)
