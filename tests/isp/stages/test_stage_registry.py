"""The stage registry and the image contract every variant keeps."""

from __future__ import annotations

import numpy as np
import pytest
from isp_stage_helpers import CAMERA_TO_SRGB, EXPECTED, FLOAT_STAGES, _apply, _camera_scene

from hetbench.isp.stages import REGISTRY, StageContext


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
