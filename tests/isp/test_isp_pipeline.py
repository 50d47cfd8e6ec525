"""The ISP pipeline: variant strings, Table 3 variants, prefix-shared rendering."""

from __future__ import annotations

import numpy as np
import pytest

from hetbench.errors import HetbenchError


def _capture(seed: int = 0, side: int = 96):
    from hetbench.isp.profiles import load_profiles
    from hetbench.isp.unprocess import unprocess
    from hetbench.sources.photographs import embedded_photographs, scene_crops

    rng = np.random.default_rng(seed)
    _, photo = embedded_photographs()[0]
    crop = scene_crops(photo, 1, side, rng)[0]
    return unprocess(crop, load_profiles()[0], rng, "test-capture")


def test_parse_round_trip_and_baseline():
    from hetbench.isp.pipeline import Pipeline

    full = "demosaic=ppg,denoise=fbdd,wb=grey-edge,gamut=srgb,tone=srgb-gamma,chroma=blur-mild,sharpen=usm-mild,compress=jpeg85"
    assert str(Pipeline.parse(full)) == full
    assert Pipeline.parse("") == Pipeline.baseline() == Pipeline.parse(full)
    p = Pipeline.parse("wb=white-patch,compress=none")
    assert p["wb"] == "white-patch" and p["tone"] == "srgb-gamma"
    assert p.short_name == "wb=white-patch+compress=none"


@pytest.mark.parametrize(
    "text, needle",
    [("colour=none", "unknown ISP stage 'colour'; choose one of: demosaic, denoise, wb, gamut, tone, chroma, sharpen, compress"),
     ("wb=purple", "unknown wb option 'purple'; choose one of: grey-edge, gray-world, none, white-patch, camera"),
     ("tone", "needs an option")],
)
def test_parse_errors_list_the_valid_names(text, needle):
    from hetbench.isp.pipeline import Pipeline

    with pytest.raises(HetbenchError, match=needle):
        Pipeline.parse(text)


def test_table3_variants():
    from hetbench.isp.pipeline import parse_stage_list, table3_variants

    names = [p.short_name for p in table3_variants(parse_stage_list("wb,tone"))]
    assert names == ["baseline", "wb=none", "wb=white-patch", "tone=none", "tone=srgb-gamma+equalize"]
    every = table3_variants(parse_stage_list("all"))
    assert len(every) == 1 + 2 * 6
    assert len({str(p) for p in every}) == len(every)
    assert [p.short_name for p in table3_variants(parse_stage_list("sharpen"))] == [
        "baseline", "sharpen=none", "sharpen=usm-strong"]  # a phone stage: each of its other options
    with pytest.raises(HetbenchError, match="unknown ISP stage"):
        parse_stage_list("wb,vignette")


def test_shared_prefix_rendering_equals_separate_renders():
    from hetbench.isp.pipeline import Renderer, parse_stage_list, table3_variants

    cap = _capture()
    variants = table3_variants(parse_stage_list("wb,tone,compress"))
    together = Renderer(size=64)
    shared = together.render_all(cap, variants)
    for p, r in zip(variants, shared):
        alone = Renderer(size=64).render(cap, p)
        assert r.pipeline == p
        assert np.array_equal(alone.image, r.image), p.short_name
    # 7 pipelines x 6 levels naive; the prefix walk computes LibRaw and denoise once
    assert together.stats["stage_runs"] < 7 * 6
    assert together.stats["stage_hits"] > 0


def test_output_size_and_binning_halves_resolution():
    from hetbench.isp.pipeline import Pipeline, Renderer

    cap = _capture(side=128)
    full = Renderer(size=None).render(cap, Pipeline.parse("compress=none")).image
    binned = Renderer(size=None).render(cap, Pipeline.parse("demosaic=bin,compress=none")).image
    assert full.shape[:2] == (128, 128)
    assert binned.shape[:2] == (64, 64)
    out = Renderer(size=48).render(cap, Pipeline.parse("demosaic=bin")).image
    assert out.shape == (48, 48, 3) and out.dtype == np.uint8


def test_white_balance_variants_change_the_colour_cast():
    from hetbench.isp.image_stats import image_stats
    from hetbench.isp.pipeline import Pipeline, Renderer

    cap = _capture(side=128)
    r = Renderer(size=None)
    grey = image_stats(r.render(cap, Pipeline.parse("compress=none")).image)
    raw = image_stats(r.render(cap, Pipeline.parse("wb=none,compress=none")).image)
    # without white balance the camera's green-heavy response shows as a green cast (a* < 0)
    assert raw["cast_a"] < grey["cast_a"] - 2
