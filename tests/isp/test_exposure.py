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


@settings(max_examples=25, deadline=None)
@given(st.floats(1 / 16, 16), st.sampled_from(["grey-edge", "gray-world", "white-patch", "none"]), st.integers(0, 99))
def test_white_balance_applies_the_metered_exposure_in_its_own_multiply(exposure, variant, seed):
    """The wb stage applies the exposure gain with its own gains: every variant of it is the unexposed
    variant times the exposure (within float32 rounding), and the recorded WB gains do not include it."""
    from hetbench.isp.stages.base import StageContext
    from hetbench.isp.stages.white_balance import VARIANTS

    scene = np.random.default_rng(seed).uniform(0.0, 1.0, (40, 56, 3)).astype(np.float32)
    plain, exposed = StageContext(), StageContext(info={"exposure_gain": exposure})
    without = VARIANTS[variant].apply(scene, plain)
    with_gain = VARIANTS[variant].apply(scene, exposed)
    assert plain.info["wb_gains"] == exposed.info["wb_gains"]
    np.testing.assert_allclose(with_gain, without * np.float32(exposure), rtol=2e-6, atol=0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(1 / 64, 64), min_size=3, max_size=3), st.integers(0, 99))
def test_the_white_balance_gains_are_the_bits_of_an_elementwise_float32_product(gains, seed):
    """apply_gains (OpenCV's per-channel multiply) gives numpy's float32 product bit for bit: a float32
    product is exact in double, so either rounding gives the same float on every CPU."""
    from hetbench.isp.stages.white_balance import apply_gains

    image = np.random.default_rng(seed).uniform(0.0, 1.5, (33, 47, 3)).astype(np.float32)
    expected = image * np.asarray(gains, np.float64).astype(np.float32)
    assert np.array_equal(apply_gains(image, gains), expected)
