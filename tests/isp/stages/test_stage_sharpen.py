"""The phone-look stages after tone: sharpening by table lookup is exactly the integer unsharp-mask rule."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([(0.5, 1.0), (1.25, 1.5), (2.0, 0.8)]), st.integers(0, 999))
def test_unsharp_masking_by_table_is_the_integer_rule(params, seed):
    """The table lookup gives exactly the integer unsharp mask Y + ((Y - blur) a16 + 8) >> 4, clipped."""
    import cv2

    from hetbench.isp.stages.sharpen import unsharp_luma

    amount, sigma = params
    image = np.random.default_rng(seed).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    ycrcb = cv2.cvtColor(image, cv2.COLOR_RGB2YCrCb)
    y = ycrcb[..., 0].astype(np.int32)
    blur = cv2.GaussianBlur(np.ascontiguousarray(ycrcb[..., 0]), (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    a16 = int(round(amount * 16))
    ycrcb[..., 0] = np.clip(y + (((y - blur.astype(np.int32)) * a16 + 8) >> 4), 0, 255).astype(np.uint8)
    assert np.array_equal(unsharp_luma(image, amount, sigma), cv2.cvtColor(ycrcb, cv2.COLOR_YCrCb2RGB))
