"""Auto exposure: a dim capture is brought to mid-grey, highlights are protected, white balance never
changes the exposure, and a lens-capped frame is not amplified into noise."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.isp.exposure import MAX_GAIN, TOP_UPPER, Y_TARGET, exposure_gain, metering_weights


def _scene(seed: int = 0, lo: float = 0.02, hi: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(lo, hi, (96, 128, 1)) * np.ones(3)).astype(np.float32)


def test_a_dim_scene_is_brought_to_the_target_by_its_centre_weighted_mean():
    scene = _scene()
    scene[:12, :12] = 0.55  # highlights that neither constraint moves the gain for
    gain = exposure_gain(scene)
    top = np.sort(scene[..., 1].ravel())[-int(0.02 * scene[..., 1].size):].mean() * gain
    assert 0.5 < top < 0.8
    w = metering_weights(*scene.shape[:2])
    assert np.isclose((scene[..., 1] * gain * w).sum() / w.sum(), Y_TARGET, rtol=1e-6)


@settings(max_examples=20, deadline=None)
@given(st.integers(-2, 2), st.integers(0, 1000))
def test_the_gain_follows_the_capture_exposure(ev, seed):
    """Exposing a capture k times longer (a power of two: exact in float) divides the gain by k."""
    scene = _scene(seed)
    k = np.float32(2.0 ** ev)
    assert np.isclose(exposure_gain(scene * k), exposure_gain(scene) / float(k), rtol=1e-9)


def test_the_brightest_two_percent_do_not_clip():
    scene = _scene(lo=0.01, hi=0.05)
    scene[:20, :20] = 0.3  # a window: 3% of the frame
    gain = exposure_gain(scene)
    top = np.sort(scene[..., 1].ravel())[-int(0.02 * scene[..., 1].size):]
    assert top.mean() * gain <= TOP_UPPER + 1e-6
    assert gain < Y_TARGET / scene[..., 1].mean()  # the centre target alone would have clipped them


def test_white_balance_never_changes_the_exposure():
    """Metered on green, which every WB keeps (green gain 1): each WB variant gets the same gain."""
    scene = _scene(3) * np.float32([0.5, 1.0, 0.7])
    assert exposure_gain(scene) == exposure_gain(scene * np.float32([2.5, 1.0, 0.3]))


def test_a_lens_capped_frame_is_not_amplified_into_noise():
    dark = np.random.default_rng(0).uniform(0, 0.002, (64, 64, 3)).astype(np.float32)
    assert exposure_gain(dark) == MAX_GAIN
    assert exposure_gain(np.zeros((8, 8, 3), np.float32)) == 1.0
