"""Lens shading: a DNG's FixVignetteRadial (OpcodeList2 or 3) flattens its own vignetting, the cos^4 model
corrects RAWs that carry none when asked, a malformed opcode or an unknown profile option is refused in
one line, and the nine emulated phones darken their corners as their lens and ISP choice say."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.isp.capture import RawCapture
from hetbench.isp.dng import write_dng
from hetbench.isp.lens_shading import (
    LensShading,
    RadialVignette,
    cos4_vignette,
    fix_vignette_radial_opcode,
)
from hetbench.isp.raw import UnsupportedRaw, read_raw
from raw_fixtures import CM_D65

SIGNAL, BLACK = 2000.0, 64


def _vignetted(corner: float, size: int = 64) -> RawCapture:
    """A flat grey through a cos^4 lens whose corners get ``corner`` of the centre's light."""
    falloff = 1.0 / cos4_vignette(corner).gain(size, size).astype(np.float64)
    mosaic = np.rint(BLACK + SIGNAL * falloff).astype(np.uint16)
    return RawCapture(mosaic, "RGGB", BLACK, 4095, CM_D65, (0.6, 1.0, 0.45))


def _signal(capture: RawCapture) -> np.ndarray:
    return capture.mosaic.astype(float) - BLACK


@pytest.mark.parametrize("listing", [2, 3])
def test_a_dngs_fix_vignette_radial_flattens_its_vignetting(tmp_path, listing):
    vignette = cos4_vignette(0.4)
    blob = fix_vignette_radial_opcode(vignette.coefficients)
    path = tmp_path / f"list{listing}.dng"
    write_dng(_vignetted(0.4), path, **{f"opcode_list{listing}": blob})
    corrected = _signal(read_raw(path))
    assert abs(corrected.mean() - SIGNAL) < 3 and corrected.std() < 2  # flat again
    assert _signal(read_raw(path, lens_shading="none"))[0, 0] < 0.45 * SIGNAL  # "none" leaves the lens's falloff


def test_opcode_list3_passes_over_what_it_does_not_apply(tmp_path):
    """OpcodeList3 applies after demosaicing (warps, colour-plane maps): hetbench takes its radial
    vignetting only and reads the file, even past a required opcode it does not apply."""
    import struct

    warp = struct.pack(">IIII", 1, 0x01030000, 0, 8) + bytes(8)  # WarpRectilinear, flagged required
    radial = fix_vignette_radial_opcode(cos4_vignette(0.5).coefficients)
    blob = struct.pack(">I", 2) + warp + radial[4:]
    write_dng(_vignetted(0.5), tmp_path / "warp.dng", opcode_list3=blob)
    assert _signal(read_raw(tmp_path / "warp.dng")).std() < 2
    write_dng(_vignetted(0.5), tmp_path / "warp2.dng", opcode_list2=blob)  # in OpcodeList2 it is refused
    with pytest.raises(UnsupportedRaw, match=r"OpcodeList2\): required DNG opcode 1 is not supported"):
        read_raw(tmp_path / "warp2.dng")


def test_the_cos4_model_corrects_only_files_without_their_own(tmp_path):
    write_dng(_vignetted(0.5), tmp_path / "bare.dng")
    write_dng(_vignetted(0.5), tmp_path / "own.dng",
              opcode_list2=fix_vignette_radial_opcode(cos4_vignette(0.5).coefficients))
    bare = _signal(read_raw(tmp_path / "bare.dng"))
    assert bare[0, 0] / bare[32, 32] < 0.55  # read as stored
    modelled = _signal(read_raw(tmp_path / "bare.dng", lens_shading="cos4:0.5"))
    assert modelled.std() < 2  # the model of the right lens flattens it
    own = _signal(read_raw(tmp_path / "own.dng", lens_shading="cos4:0.9"))
    assert own.std() < 2  # the file's own correction wins over the model
    with pytest.raises(ValueError, match="choose dng, none or cos4:C"):
        read_raw(tmp_path / "bare.dng", lens_shading="radial")


@pytest.mark.parametrize("body, why", [
    (b"\x00" * 40, "FixVignetteRadial has 40 parameter bytes, not 56"),
    (fix_vignette_radial_opcode((0.1, 0, 0, 0, 0), (1.5, 0.5))[20:], "optical centre must lie in"),
    (fix_vignette_radial_opcode((-2.0, 0, 0, 0, 0))[20:], "gives a gain that is not positive"),
])
def test_a_malformed_fix_vignette_radial_is_refused_in_one_line(tmp_path, body, why):
    import struct

    blob = struct.pack(">I", 1) + struct.pack(">IIII", 3, 0x01030000, 1, len(body)) + body
    write_dng(_vignetted(0.5, 32), tmp_path / "bad.dng", opcode_list2=blob)
    with pytest.raises(UnsupportedRaw, match="unusable lens-shading opcodes") as err:
        read_raw(tmp_path / "bad.dng")
    assert why in str(err.value) and "\n" not in str(err.value)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 3), min_size=5, max_size=5), st.integers(3, 40), st.integers(3, 40))
def test_a_centred_radial_gain_is_one_at_the_centre_symmetric_and_largest_in_the_corners(k, h, w):
    g = RadialVignette(tuple(k)).gain(h, w)
    assert np.allclose(g, g[::-1, ::-1]) and np.all(g >= 1.0)
    assert np.isclose(g.max(), 1 + sum(k), rtol=1e-5) and np.isclose(g[0, 0], g.max())


@pytest.mark.parametrize("correction, corner_to_centre", [("none", 0.35), ("partial", 0.35 ** 0.5), ("full", 1.0)])
def test_an_emulated_phone_darkens_its_corners_as_its_lens_and_isp_say(correction, corner_to_centre):
    import dataclasses

    from hetbench.isp.profiles import load_profiles
    from hetbench.isp.unprocess import unprocess

    phone = dataclasses.replace(load_profiles()[0], lens_shading=LensShading(0.35, correction))
    grey = np.full((96, 128, 3), 128, np.uint8)
    cap = unprocess(grey, phone, np.random.default_rng(0), "grey", wb_gains=(1.0, 1.0, 1.0), exposure=1.0,
                    noise=False)
    signal = cap.mosaic.astype(float) - phone.black_level
    green = signal[0::2, 0::2] if phone.cfa[0] == "G" else signal[0::2, 1::2]
    assert green[0, 0] / green[24, 32] == pytest.approx(corner_to_centre, rel=0.02)


def test_a_profile_naming_an_unknown_shading_option_is_refused_in_one_line():
    import yaml

    from hetbench.isp.profiles import parse_profiles

    from importlib import resources

    data = yaml.safe_load(resources.files("hetbench.manifests").joinpath("devices/heteroswitch9.yaml").read_text())
    data["devices"][0]["lens_shading"] = {"corner": 0.35, "correction": "radial"}
    with pytest.raises(HetbenchError, match=r"unknown lens_shading correction 'radial'; valid: \['none', 'partial', 'full'\]"):
        parse_profiles(data, "custom.yaml")
    data["devices"][0]["lens_shading"] = {"corner": 1.4, "correction": "full"}
    with pytest.raises(HetbenchError, match=r"lens_shading.corner = 1.4 must be in \(0, 1\]"):
        parse_profiles(data, "custom.yaml")
    del data["devices"][0]["sources"]["lens_shading"]
    data["devices"][0]["lens_shading"] = {"corner": 0.5, "correction": "full"}
    with pytest.raises(HetbenchError, match=r"sources lack a citation or justification for \['lens_shading'\]"):
        parse_profiles(data, "custom.yaml")
