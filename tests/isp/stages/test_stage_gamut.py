"""Gamut stage (hetbench.isp.stages.gamut)."""

from __future__ import annotations

import colour
import numpy as np
from isp_stage_helpers import CAMERA_TO_SRGB, _apply, _camera_scene

from hetbench.isp.stages import StageContext, gamut


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


def test_the_written_out_prophoto_matrix_is_colour_sciences():
    """SRGB_TO_PROPHOTO is colour-science's sRGB -> ProPhoto RGB (Bradford) matrix, written out so that
    its bits do not depend on the CPU that computes it."""
    import colour

    from hetbench.isp.stages.gamut import SRGB_TO_PROPHOTO

    spaces = colour.RGB_COLOURSPACES
    expected = colour.matrix_RGB_to_RGB(spaces["sRGB"], spaces["ProPhoto RGB"], chromatic_adaptation_transform="Bradford")
    np.testing.assert_allclose(np.array(SRGB_TO_PROPHOTO), expected, rtol=0, atol=1e-12)
