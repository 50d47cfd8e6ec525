"""Device profiles (HeteroSwitch Table 1): hetbench.isp.device and hetbench.isp.profiles."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

from hetbench.isp import unprocess as synth
from hetbench.isp.capture import CFA_PATTERNS, RawCapture
from hetbench.isp.profiles import REQUIRED_SOURCES, load_profiles, parse_profiles, valid_variants
from hetbench.isp.stages import REGISTRY, STAGES

from isp_test_helpers import TABLE1, manifest_data  # noqa: E402  (shared with the other ISP tests)



# ------------------------------------------------------------------------------------ profiles


def test_nine_devices_match_table1(profiles):
    assert len(profiles) == 9 and {p.name for p in profiles} == set(TABLE1)
    for p in profiles:
        vendor, tier, pct = TABLE1[p.name]
        assert (p.vendor, p.tier, p.market_share_pct) == (vendor, tier, pct)
        assert p.market_share == pytest.approx(pct / 100)


def test_participation_weights_sum_to_one_and_keep_order(profiles):
    w = {p.name: p.participation for p in profiles}
    assert sum(w.values()) == pytest.approx(1.0)
    assert all(v > 0 for v in w.values())
    assert max(w, key=w.get) == "GalaxyS6" and min(w, key=w.get) == "Pixel5"
    assert w["GalaxyS6"] > w["GalaxyS9"] > w["GalaxyS22"] > w["G4"]  # Table 1's order of magnitude


def test_participation_is_normalised_when_shares_do_not_sum_to_100():
    data = manifest_data()
    data["devices"] = data["devices"][:3]  # 12 + 27 + 38 = 77 %
    ps = parse_profiles(data)
    assert sum(p.participation for p in ps) == pytest.approx(1.0)
    assert ps[0].participation == pytest.approx(12 / 77)
    assert ps[0].market_share_pct == 12 and ps[0].market_share == pytest.approx(0.12)


def test_isp_variants_valid_and_pipelines_differ(profiles):
    for p in profiles:
        assert tuple(p.isp) == STAGES
        for stage, variant in p.isp.items():
            assert variant in REGISTRY[stage], (p.name, stage, variant)
    pipelines = [p.isp_pipeline for p in profiles]
    assert len(set(pipelines)) == len(pipelines), "every device should have its own pipeline"
    wb_by_vendor = {v: {p.isp["wb"] for p in profiles if p.vendor == v} for v in ("Samsung", "LG", "Google")}
    assert all(len(s) == 1 for s in wb_by_vendor.values()) and len(set.union(*wb_by_vendor.values())) == 3


def test_valid_variants_are_the_stage_registry():
    """Profiles validate against the one stage registry (no mirrored list of names)."""
    for stage in STAGES:
        assert valid_variants(stage) == REGISTRY[stage].names()
    assert "camera" in valid_variants("wb")  # the extra variant is a valid profile choice too


def test_sensor_metadata_is_consistent(profiles):
    assert {p.cfa for p in profiles} == set(CFA_PATTERNS)  # all four Bayer phases exercised
    for p in profiles:
        assert 0 <= p.black_level < p.white_level <= 2**p.bit_depth - 1
        w, h = p.resolution
        assert w > h > 0 and w % 2 == 0 and h % 2 == 0
        assert 1e-4 <= p.noise.shot <= 1.2e-2  # Brooks et al.'s range
        assert 0 < p.noise.read < p.noise.shot
        for key in REQUIRED_SOURCES:
            assert p.sources[key].strip(), (p.name, key)
        assert "StatCounter" in p.sources["market_share"]
        assert "no public figure" in p.sources["isp"] or "modelling assumption" in p.sources["isp"]


def test_low_tier_has_more_read_noise_than_high_tier_at_equal_pitch(profiles):
    by = {p.name: p for p in profiles}
    assert by["Pixel2"].noise.shot == by["GalaxyS9"].noise.shot
    assert by["Pixel5"].noise.read < by["Pixel2"].noise.read  # same pitch, H vs M


def test_colour_matrices_invertible_and_distinct_across_sensor_families(profiles):
    for p in profiles:
        m = p.xyz_to_camera()
        assert abs(np.linalg.det(m)) > 1e-3 and np.linalg.cond(m) < 100
        c2s = p.camera_to_srgb()
        np.testing.assert_allclose(c2s @ np.ones(3), np.ones(3), atol=1e-9)  # neutral stays neutral
        np.testing.assert_allclose(c2s @ synth.srgb_to_camera_matrix(p), np.eye(3), atol=1e-9)
        ref = RawCapture(np.zeros((2, 2), np.uint16), p.cfa, 0, p.white_level, m, (1, 1, 1))
        np.testing.assert_allclose(c2s, ref.camera_to_srgb())
    for a, b in itertools.combinations(profiles, 2):
        d = np.linalg.norm(a.xyz_to_camera() - b.xyz_to_camera())
        if a.sensor_family != b.sensor_family:
            assert d > 0.1, (a.name, b.name, d)
    assert len({p.sensor_family for p in profiles}) >= 8


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["isp"].update(wb="grey-world"), "valid wb variants: ['grey-edge', 'gray-world'"),
        (lambda d: d["isp"].update(vignette="cos4"), "unknown ISP stage(s) ['vignette']"),
        (lambda d: d["isp"].update(sharpen="usm"), "valid sharpen variants: ['usm-mild', 'none', 'usm-strong']"),
        (lambda d: d["isp"].pop("tone"), "ISP lacks stage(s) ['tone']"),
        (lambda d: d.update(cfa="RGBG"), "cfa 'RGBG' is not one of"),
        (lambda d: d.update(tier="X"), "tier 'X' is not one of"),
        (lambda d: d.update(white_level=5000), "'white_level' = 5000 is outside"),
        (lambda d: d.update(color_matrix=[[1, 0, 0], [1, 0, 0], [0, 0, 1]]), "singular"),
        (lambda d: d.update(color_matrix={"mix": {"nope": 1.0}}), "unknown reference 'nope'"),
        (lambda d: d["sources"].pop("noise"), "sources lack a citation or justification for ['noise']"),
        (lambda d: d.update(noise={"shot": 0.5, "read": 1e-6}), "noise.shot = 0.5 is outside"),
        (lambda d: d.update(resolution=[4031, 3024]), "resolution must be"),
        (lambda d: d.update(lens="f/1.8"), "unknown field(s) ['lens']"),
    ],
)
def test_validation_errors_are_clear(mutate, message):
    data = copy.deepcopy(manifest_data())
    mutate(data["devices"][0])
    with pytest.raises(ValueError) as exc:
        parse_profiles(data, origin="test.yaml")
    assert message in str(exc.value) and "GalaxyS22" in str(exc.value)


def test_profiles_are_immutable_hashable_and_picklable(profiles):
    import pickle

    p = profiles[0]
    assert pickle.loads(pickle.dumps(p)) == p and len(set(profiles)) == 9
    with pytest.raises(TypeError):
        p.isp["wb"] = "none"  # type: ignore[index]
    assert load_profiles() == profiles  # cached, equal on every call


def test_unknown_manifest_lists_available():
    with pytest.raises(ValueError, match="heteroswitch9"):
        load_profiles("no-such-manifest")
    with pytest.raises(ValueError, match="invalid"):
        load_profiles("../devices/heteroswitch9")
