"""Compression stage (hetbench.isp.stages.compress)."""

from __future__ import annotations

import numpy as np
import pytest
from isp_stage_helpers import _apply
from skimage import data as skdata

from hetbench.isp.stages import StageContext, compress


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
