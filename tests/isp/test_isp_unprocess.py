"""Brooks et al. unprocessing into device profiles (hetbench.isp.unprocess), checked with the exact
forward pipeline of hetbench.isp.reference, and the embedded photographs it starts from."""

from __future__ import annotations


import numpy as np
import pytest

from hetbench.isp import unprocess as synth
from hetbench.sources import photographs
from hetbench.isp import reference
from hetbench.isp.capture import cfa_channel_map
from hetbench.isp.transfer import inverse_smoothstep, smoothstep, srgb_decode, srgb_encode

from isp_test_helpers import half_and_blocks  # noqa: E402  (shared with the other ISP tests)



# ------------------------------------------------------------------------------ unprocessing


def test_tone_and_gamma_inverses():
    y = np.linspace(0, 1, 1001)
    np.testing.assert_allclose(smoothstep(inverse_smoothstep(y)), y, atol=1e-12)
    np.testing.assert_allclose(srgb_encode(srgb_decode(y)), y, atol=1e-12)
    assert srgb_decode(np.array(0.5)) == pytest.approx(0.214041, abs=1e-6)  # exact sRGB, not 2.2


def test_unprocess_is_deterministic(profiles, astronaut_crops):
    p, img = profiles[0], astronaut_crops[0]
    a = synth.unprocess(img, p, np.random.default_rng(7), "a")
    b = synth.unprocess(img, p, np.random.default_rng(7), "a")
    c = synth.unprocess(img, p, np.random.default_rng(8), "a")
    assert np.array_equal(a.mosaic, b.mosaic) and a.fingerprint == b.fingerprint
    assert a.as_shot_neutral == b.as_shot_neutral
    assert not np.array_equal(a.mosaic, c.mosaic)
    assert a.capture_id == "a" and (a.make, a.model) == (p.vendor, p.model)


def test_as_shot_neutral_is_inverse_gains(profiles, astronaut_crops):
    p = profiles[3]  # any profile
    cap, params = synth.unprocess_with_params(astronaut_crops[0], p, np.random.default_rng(1), "x")
    r, g, b = params.wb_gains
    assert g == 1.0 and synth.RED_GAIN_RANGE[0] <= r <= synth.RED_GAIN_RANGE[1]
    assert synth.BLUE_GAIN_RANGE[0] <= b <= synth.BLUE_GAIN_RANGE[1]
    np.testing.assert_allclose(cap.as_shot_neutral, (1 / r, 1.0, 1 / b))
    assert synth.EXPOSURE_RANGE[0] <= params.exposure <= synth.EXPOSURE_RANGE[1]
    given = synth.unprocess(astronaut_crops[0], p, np.random.default_rng(1), "x", wb_gains=(4.0, 2.0, 3.0))
    np.testing.assert_allclose(given.as_shot_neutral, (0.5, 1.0, 2 / 3))
    # giving the gains does not shift the noise stream: same noise, different signal scaling only
    same = synth.unprocess(astronaut_crops[0], p, np.random.default_rng(1), "x", wb_gains=params.wb_gains)
    assert np.array_equal(same.mosaic, cap.mosaic)


@pytest.fixture(scope="module")
def profiles(profiles):
    """The nine profiles with ideal lenses: this module checks the unprocessing maths (levels, CFA
    sites, saturation, the round trip, noise), which a darkened corner would move; the lenses are
    tests/isp/test_lens_shading.py's."""
    import dataclasses

    from hetbench.isp.lens_shading import LensShading

    return [dataclasses.replace(p, lens_shading=LensShading()) for p in profiles]


def test_mosaic_respects_cfa_and_levels(profiles):
    """A flat mid-gray scene: each CFA site must hold exposure / gain of its own channel."""
    gray = np.full((8, 10, 3), 128, np.uint8)
    v = float(srgb_decode(inverse_smoothstep(np.array(128 / 255))))
    gains = (2.0, 1.0, 1.6)
    for p in profiles:
        cap = synth.unprocess(gray, p, np.random.default_rng(0), "g", wb_gains=gains, exposure=0.8, noise=False)
        assert cap.cfa == p.cfa and cap.mosaic.shape == (8, 10) and cap.mosaic.dtype == np.uint16
        codes = cfa_channel_map(p.cfa, 8, 10)
        expected = np.rint(v * 0.8 / np.array(gains)[codes] * (p.white_level - p.black_level) + p.black_level)
        assert np.abs(cap.mosaic.astype(float) - expected).max() <= 1, p.name
        assert cap.black_level == (p.black_level,) * 4 and cap.white_level == p.white_level
        np.testing.assert_array_equal(cap.color_matrix, p.xyz_to_camera())


def test_mosaic_respects_bit_depth(profiles, astronaut_crops):
    img = astronaut_crops[0].copy()
    img[:16, :16] = 255  # a saturated patch
    img[16:32, :16] = 0  # and a black one
    for p in profiles:
        cap = synth.unprocess(img, p, np.random.default_rng(3), "b", exposure=1.0)
        assert cap.mosaic.min() >= p.black_level >= 0
        assert cap.mosaic.max() == p.white_level <= 2**p.bit_depth - 1
        clean = synth.unprocess(img, p, np.random.default_rng(3), "b", exposure=1.0, noise=False)
        assert (clean.mosaic[:16, :16] == p.white_level).all()  # highlight mask keeps white saturated
        assert (clean.mosaic[16:32, :16] == p.black_level).all()


def test_odd_sized_input_is_trimmed_to_even(profiles):
    cap = synth.unprocess(np.zeros((7, 9, 3), np.uint8), profiles[0], np.random.default_rng(0), "o")
    assert cap.mosaic.shape == (6, 8)
    with pytest.raises(ValueError):
        synth.unprocess(np.zeros((7, 9), np.uint8), profiles[0], np.random.default_rng(0), "o")


# Measured (this implementation, these crops): superpixel round trip 52-66 dB (quantisation
# limited); bilinear round trip 23.9-25.3 dB on astronaut (demosaicing is the only lossy step and
# the colour matrix amplifies its error by about 2 dB to 6 dB); noisy superpixel round trip 24-31 dB.
EXACT_PSNR_DB = 45.0
BILINEAR_PSNR_DB = 21.0


def test_round_trip_is_exact_up_to_quantisation(profiles, astronaut_crops):
    """Scenes constant on 2x2 blocks survive unprocess -> process_reference(superpixel) exactly
    but for 10/12-bit quantisation: this checks tone, gamma, matrix, WB, exposure and CFA."""
    for p in profiles:
        for i, crop in enumerate(astronaut_crops):
            small, blocks = half_and_blocks(crop)
            cap, params = synth.unprocess_with_params(blocks, p, np.random.default_rng(i), "r", noise=False)
            out = reference.process_reference(cap, brightness=1 / params.exposure, demosaic="superpixel")
            assert out.dtype == np.float32 and out.shape == small.shape
            assert reference.psnr(out, small / 255.0) > EXACT_PSNR_DB, (p.name, i)


def test_round_trip_bilinear_psnr(profiles, astronaut_crops):
    for p in profiles:
        for i, crop in enumerate(astronaut_crops):
            cap, params = synth.unprocess_with_params(crop, p, np.random.default_rng(i), "r", noise=False)
            out = reference.process_reference(cap, brightness=1 / params.exposure)
            assert out.shape == crop.shape
            assert reference.psnr(out, crop / 255.0) > BILINEAR_PSNR_DB, (p.name, i)


def test_noise_lowers_psnr_but_stays_finite(profiles, astronaut_crops):
    small, blocks = half_and_blocks(astronaut_crops[0])
    for p in profiles:
        clean, params = synth.unprocess_with_params(blocks, p, np.random.default_rng(5), "n", noise=False)
        noisy, _ = synth.unprocess_with_params(blocks, p, np.random.default_rng(5), "n", noise=True)
        kw = dict(brightness=1 / params.exposure, demosaic="superpixel")
        p_clean = reference.psnr(reference.process_reference(clean, **kw), small / 255.0)
        p_noisy = reference.psnr(reference.process_reference(noisy, **kw), small / 255.0)
        assert 18.0 < p_noisy < p_clean - 10, (p.name, p_noisy, p_clean)


def test_noise_variance_follows_profile(profiles):
    """Flat patch: the measured variance of the normalised mosaic matches shot * x + read."""
    p = next(q for q in profiles if q.name == "G7")  # the noisiest shot term
    flat = np.full((256, 256, 3), 128, np.uint8)
    cap = synth.unprocess(flat, p, np.random.default_rng(0), "f", wb_gains=(1, 1, 1), exposure=1.0)
    x = (cap.mosaic.astype(float) - p.black_level) / (p.white_level - p.black_level)
    v = float(srgb_decode(inverse_smoothstep(np.array(128 / 255))))
    assert x.mean() == pytest.approx(v, abs=2e-3)
    quantisation = (1 / (p.white_level - p.black_level)) ** 2 / 12
    assert x.var() == pytest.approx(float(p.noise.variance(v)) + quantisation, rel=0.05)


# ------------------------------------------------------------------------------ scenes


def test_embedded_photographs_offline():
    photos = photographs.embedded_photographs()
    names = [n for n, _ in photos]
    assert len(photos) >= 6 and len(set(names)) == len(names)
    assert {"astronaut", "coffee", "chelsea", "china", "flower"} <= set(names)
    for _, img in photos:
        assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3 and min(img.shape[:2]) >= 256
        assert img.std(axis=2).mean() > 5  # colour, not gray replicated into 3 channels
    img = photos[0][1]
    img[0, 0] = 0  # callers get copies
    assert photographs.embedded_photographs()[0][1].flags.writeable


def test_scene_crops_deterministic():
    img = np.arange(300 * 200 * 3, dtype=np.uint32).reshape(300, 200, 3)
    a = photographs.scene_crops(img, 5, 64, np.random.default_rng(11))
    b = photographs.scene_crops(img, 5, 64, np.random.default_rng(11))
    c = photographs.scene_crops(img, 5, 64, np.random.default_rng(12))
    assert len(a) == 5 and all(x.shape == (64, 64, 3) for x in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))
    big = photographs.scene_crops(img, 2, 1000, np.random.default_rng(0))
    assert all(x.shape == (200, 200, 3) for x in big)  # largest possible square
