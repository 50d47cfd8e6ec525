"""Denoise stage (hetbench.isp.stages.denoise)."""

from __future__ import annotations

import numpy as np
from isp_stage_helpers import _apply, _astronaut_linear, _camera_scene

from hetbench.isp.stages import denoise


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
