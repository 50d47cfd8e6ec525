"""ISP stages after demosaic (denoise, wb, gamut, tone, compress): one test per defining property."""

from __future__ import annotations

import colour
import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from skimage import data as skdata

from hetbench.isp.stages import compress, denoise, gamut, tone, white_balance
from hetbench.isp.stages.base import REGISTRY, StageContext

EXPECTED = {
    "denoise": {"fbdd": "baseline", "none": "option1", "bayes-shrink": "option2"},
    "wb": {"gray-world": "baseline", "none": "option1", "white-patch": "option2", "camera": "extra"},
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


# ---------------------------------------------------------------- registry and contract


def test_registry_names_and_table3_tags():
    for stage, names in EXPECTED.items():
        got = {name: v.table3 for name, v in REGISTRY[stage].items()}
        assert got == names, stage
        for name, v in REGISTRY[stage].items():
            assert v.stage == stage and v.name == name and v.description


@pytest.mark.parametrize("stage,name", [(s, n) for s in EXPECTED for n in EXPECTED[s]])
def test_every_variant_keeps_shape_and_contract_dtype(stage, name):
    h, w = 40, 56
    ctx = StageContext(as_shot_neutral=(0.5, 1.0, 0.7), camera_to_srgb=CAMERA_TO_SRGB)
    if stage == "compress":
        image = (np.random.default_rng(1).random((h, w, 3)) * 255).astype(np.uint8)
        want = np.uint8
    else:
        image = _camera_scene(h, w)
        want = np.float32 if stage in FLOAT_STAGES else np.uint8
    out = _apply(stage, name, image, ctx)
    assert isinstance(out, np.ndarray)
    assert out.shape == (h, w, 3)
    assert out.dtype == want


@pytest.mark.parametrize("stage", ["wb", "gamut", "tone"])
def test_float_stages_reject_non_rgb(stage):
    name = next(iter(EXPECTED[stage]))
    with pytest.raises(ValueError):
        _apply(stage, name, np.zeros((4, 4), np.float32))


def test_compress_rejects_float_input():
    with pytest.raises(ValueError):
        _apply("compress", "jpeg85", np.zeros((8, 8, 3), np.float32))


# ---------------------------------------------------------------- denoise


def test_fbdd_and_none_are_identity():
    img = _camera_scene()
    for name in ("fbdd", "none"):
        np.testing.assert_array_equal(_apply("denoise", name, img), img)


def test_bayes_shrink_reduces_error_of_noisy_image():
    clean = _astronaut_linear(192)
    noisy = (clean + np.random.default_rng(2).normal(0, 0.05, clean.shape)).astype(np.float32)
    out = _apply("denoise", "bayes-shrink", noisy)
    assert out.dtype == np.float32
    assert out.min() >= noisy.min() and out.max() <= noisy.max()  # value range preserved
    mse_noisy = float(np.mean((noisy - clean) ** 2))
    mse_out = float(np.mean((out - clean) ** 2))
    assert mse_out < 0.6 * mse_noisy


def test_bayes_shrink_handles_tiny_images():
    img = np.full((1, 1, 3), 0.5, np.float32)
    np.testing.assert_array_equal(denoise.bayes_shrink(img), img)
    assert denoise.bayes_shrink(np.random.default_rng(0).random((3, 5, 3), dtype=np.float32)).shape == (3, 5, 3)


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


# ---------------------------------------------------------------- gamut


def test_srgb_gamut_applies_capture_matrix():
    img = _camera_scene()
    m = CAMERA_TO_SRGB
    out = _apply("gamut", "srgb", img, StageContext(camera_to_srgb=m))
    np.testing.assert_allclose(out, np.einsum("ij,hwj->hwi", m, img), atol=1e-5)


def test_gamut_none_is_identity():
    img = _camera_scene()
    np.testing.assert_array_equal(_apply("gamut", "none", img), img)


def test_prophoto_matches_colour_science_and_is_less_saturated():
    primaries = np.eye(3, dtype=np.float32).reshape(1, 3, 3)  # pure linear-sRGB red, green, blue
    ctx = StageContext(camera_to_srgb=np.eye(3))
    srgb = _apply("gamut", "srgb", primaries, ctx)[0]
    pro = _apply("gamut", "prophoto", primaries, ctx)[0]
    spaces = colour.RGB_COLOURSPACES
    want = colour.RGB_to_RGB(
        np.eye(3), spaces["sRGB"], spaces["ProPhoto RGB"], chromatic_adaptation_transform="Bradford"
    )
    np.testing.assert_allclose(pro, want, atol=1e-6)

    def saturation(rgb):  # HSV saturation, 1 - min / max
        return (rgb.max(axis=-1) - rgb.min(axis=-1)) / rgb.max(axis=-1)

    # sRGB's primaries are on the sRGB gamut boundary (saturation 1) but strictly inside
    # ProPhoto's: every ProPhoto component is positive
    np.testing.assert_allclose(saturation(srgb), 1.0)
    assert np.all(pro > 0.01)
    assert np.all(saturation(pro) < 0.98)
    # the D65 white of sRGB becomes the D50 white of ProPhoto
    white = _apply("gamut", "prophoto", np.ones((1, 1, 3), np.float32), ctx)
    np.testing.assert_allclose(white[0, 0], 1.0, atol=1e-3)


def test_prophoto_composes_with_camera_matrix():
    m = CAMERA_TO_SRGB
    img = _camera_scene(10, 12)
    ctx = StageContext(camera_to_srgb=m)
    via_srgb = gamut.apply_matrix(_apply("gamut", "srgb", img, ctx), gamut.srgb_to_prophoto_matrix())
    np.testing.assert_allclose(_apply("gamut", "prophoto", img, ctx), via_srgb, atol=1e-5)


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


# ---------------------------------------------------------------- compress


def test_jpeg_quality_orders_size_and_error():
    img = skdata.astronaut()
    out85, n85 = compress.jpeg_roundtrip(img, 85)
    out50, n50 = compress.jpeg_roundtrip(img, 50)
    mse = [float(np.mean((o.astype(np.float64) - img) ** 2)) for o in (out85, out50)]
    assert n50 < n85 < img.nbytes
    assert 0 < mse[0] < mse[1]
    assert mse[1] < 100  # still the same picture


def test_jpeg_keeps_channel_order_and_records_size():
    red = np.zeros((32, 48, 3), np.uint8)
    red[..., 0] = 200
    ctx = StageContext()
    out = _apply("compress", "jpeg85", red, ctx)
    assert out[..., 0].mean() > 180 and out[..., 2].mean() < 20
    assert isinstance(ctx.info["jpeg_bytes"], int) and ctx.info["jpeg_bytes"] > 0
    _apply("compress", "jpeg50", red, ctx)
    assert ctx.info["jpeg_bytes"] > 0
    none = _apply("compress", "none", red, ctx)
    np.testing.assert_array_equal(none, red)
    assert ctx.info["jpeg_bytes"] is None


def test_jpeg_rejects_bad_quality():
    with pytest.raises(ValueError):
        compress.jpeg_roundtrip(np.zeros((8, 8, 3), np.uint8), 0)


def test_reduced_jpeg_decode_matches_full_decode_then_downsizing():
    """With an output size far below the image, the JPEG stage decodes at a DCT scale-down; the
    result agrees with decoding fully and averaging 8x8 blocks."""
    import cv2
    from skimage import data

    from hetbench.isp.stages.compress import decode_scale, jpeg_roundtrip

    img = cv2.resize(data.astronaut(), (1024, 1024), interpolation=cv2.INTER_CUBIC)
    assert decode_scale(img.shape, None) == 1 and decode_scale(img.shape, 64) == 8 and decode_scale(img.shape, 200) == 2
    full, n_full = jpeg_roundtrip(img, 85)
    small, n_small = jpeg_roundtrip(img, 85, scale=8)
    assert n_full == n_small and small.shape == (128, 128, 3)
    ref = cv2.resize(full, (128, 128), interpolation=cv2.INTER_AREA)
    assert np.abs(small.astype(int) - ref).mean() < 2.0
