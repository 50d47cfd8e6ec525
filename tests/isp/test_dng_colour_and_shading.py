"""A DNG's own colour and lens shading: two calibrations interpolated in inverse temperature, the light's
temperature found by the DNG specification's iteration, read from and written to DNG, GainMap lens
shading applied before demosaicing, and a malformed matrix or GainMap refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.isp.calibration import ILLUMINANT_CCT, check_calibrations, matrix_at, neutral_to_xy_interpolated
from hetbench.isp.illuminant import cct_to_xy, xy_to_neutral
from raw_fixtures import CAL, CM_A, CM_D65, malformed_dng_bytes, two_matrix_capture



@settings(max_examples=30, deadline=None)
@given(st.floats(1500, 15000), st.floats(1500, 15000))
def test_the_matrix_moves_monotonically_from_one_calibration_to_the_other(t1, t2):
    lo, hi = sorted((t1, t2))
    w = [(matrix_at(t, CAL)[0, 0] - CM_D65[0, 0]) / (CM_A[0, 0] - CM_D65[0, 0]) for t in (lo, hi)]
    assert 0 <= w[1] <= w[0] <= 1  # the weight of A falls as the light gets bluer, clamped outside 2850-6500 K


@settings(max_examples=30, deadline=None)
@given(st.floats(2000, 12000), st.floats(-0.004, 0.004))
def test_the_iteration_finds_the_light_the_neutral_was_made_under(cct, duv):
    xy = cct_to_xy(cct, duv)
    neutral = xy_to_neutral(xy, matrix_at(cct, CAL))  # what this camera records of a grey under that light
    found, t = neutral_to_xy_interpolated(neutral, CAL)
    assert np.allclose(found, xy, atol=1e-6) and abs(1e6 / t - 1e6 / cct) < 1.0


@pytest.mark.parametrize("pairs, message", [
    (((17, CM_A), (99, CM_D65)), "not an EXIF light source"),
    (((17, CM_A), (21, np.zeros((3, 3)))), "singular or not finite"),
    (((17, CM_A), (21, np.full((3, 3), np.nan))), "singular or not finite"),
    (((17, CM_A), (3, CM_D65)), "same temperature"),
])
def test_malformed_calibrations_are_named(pairs, message):
    with pytest.raises(ValueError, match=message):
        check_calibrations(pairs)


def test_every_known_light_source_has_a_plausible_temperature():
    assert all(2000 <= t <= 8000 for t in ILLUMINANT_CCT.values())


def test_two_calibrations_go_through_a_dng_and_back(tmp_path):
    from hetbench.isp.dng import write_dng
    from hetbench.isp.raw import read_raw

    write_dng(two_matrix_capture(), tmp_path / "dual.dng")
    back = read_raw(tmp_path / "dual.dng")
    assert [c for c, _ in back.calibrations] == [17, 21]
    assert np.allclose(back.calibrations[0][1], CM_A, atol=1e-4) and np.allclose(back.calibrations[1][1], CM_D65, atol=1e-4)


def test_a_malformed_colour_matrix_is_refused_in_one_line(tmp_path):
    from hetbench.isp.raw import UnsupportedRaw, read_raw

    (tmp_path / "bad.dng").write_bytes(malformed_dng_bytes())
    with pytest.raises(UnsupportedRaw, match="malformed colour matrices: a ColorMatrix is singular") as exc:
        read_raw(tmp_path / "bad.dng")
    assert "\n" not in str(exc.value)


def test_the_render_uses_the_matrix_of_the_light():
    """Under tungsten the camera WB's light is about 2850 K: the colour stage takes the A matrix, so the
    render differs from one with the D65 matrix alone, and its recorded CCT is the light's."""
    import dataclasses

    from hetbench.isp.calibration import light_colour
    from hetbench.isp.capture import camera_to_srgb_from
    from hetbench.isp.pipeline import Renderer

    cap = two_matrix_capture()
    tungsten = xy_to_neutral(cct_to_xy(2850), CM_A)
    cap = dataclasses.replace(cap, as_shot_neutral=tuple(tungsten), _fingerprint=[])
    info = light_colour(tungsten, cap.calibrations)
    assert abs(info["wb_cct"] - 2850) < 10 and np.allclose(info["camera_to_srgb"], camera_to_srgb_from(CM_A))
    dual = Renderer(size=None).render(cap, "wb=camera,compress=none").image
    single = Renderer(size=None).render(dataclasses.replace(cap, calibrations=(), _fingerprint=[]),
                                        "wb=camera,compress=none").image
    assert np.abs(dual.astype(int) - single.astype(int)).mean() > 1.0


def test_a_dngs_gain_map_corrects_its_vignetting(tmp_path):
    """A flat grey seen through a lens that darkens the corners to half, with the DNG's GainMap of
    that lens: read_raw gives back the flat mosaic."""
    from hetbench.isp.capture import RawCapture
    from hetbench.isp.dng import write_dng
    from hetbench.isp.gain_map import gain_map_opcode
    from hetbench.isp.raw import read_raw

    h = w = 64
    yy, xx = np.mgrid[0:h, 0:w] / np.array([h, w])[:, None, None]
    r2 = ((yy - 0.5) ** 2 + (xx - 0.5) ** 2) / 0.5
    falloff = 1.0 - 0.5 * r2  # 1 at the centre, 0.5 in the corners
    mosaic = (64 + 2000 * falloff).round().astype(np.uint16)
    grid = np.linspace(0, 1, 9)
    gv, gh = np.meshgrid(grid, grid, indexing="ij")
    gains = (1.0 / (1.0 - 0.5 * ((gv - 0.5) ** 2 + (gh - 0.5) ** 2) / 0.5)).astype(np.float32)
    cap = RawCapture(mosaic, "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45))
    write_dng(cap, tmp_path / "vignetted.dng", opcode_list2=gain_map_opcode(gains, top=0, left=0, bottom=h, right=w))
    corrected = read_raw(tmp_path / "vignetted.dng").mosaic.astype(float) - 64
    assert abs(corrected.mean() - 2000) < 20 and corrected.std() < 15  # flat again (was 0.5x in the corners)
    assert (mosaic.astype(float) - 64).std() > 150  # the uncorrected mosaic is far from flat


def test_a_gain_map_that_does_not_fit_the_image_is_refused_in_one_line(tmp_path):
    from hetbench.isp.capture import RawCapture
    from hetbench.isp.dng import write_dng
    from hetbench.isp.gain_map import gain_map_opcode
    from hetbench.isp.raw import UnsupportedRaw, read_raw

    cap = RawCapture(np.full((32, 32), 500, np.uint16), "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45))
    write_dng(cap, tmp_path / "bad.dng", opcode_list2=gain_map_opcode(np.ones((2, 2)), top=0, left=0, bottom=64, right=64))
    with pytest.raises(UnsupportedRaw, match=r"unusable lens-shading opcodes \(OpcodeList2\): GainMap covers rows 0-64"):
        read_raw(tmp_path / "bad.dng")
    write_dng(cap, tmp_path / "short.dng", opcode_list2=gain_map_opcode(np.ones((2, 2)), top=0, left=0, bottom=32,
                                                                      right=32)[:-3])
    with pytest.raises(UnsupportedRaw, match="GainMap opcode is malformed|says .* bytes"):
        read_raw(tmp_path / "short.dng")


def _gain_map_with(field_offset: int, value: float) -> bytes:
    """A whole-image 2 x 2 GainMap whose double at ``field_offset`` (40 MapSpacingV, 48 MapSpacingH,
    56 MapOriginV, 64 MapOriginH, from the parameters' start) is ``value``."""
    import struct

    from hetbench.isp.gain_map import gain_map_opcode

    blob = bytearray(gain_map_opcode(np.ones((2, 2)), top=0, left=0, bottom=32, right=32))
    struct.pack_into(">d", blob, 20 + field_offset, value)
    return bytes(blob)


@pytest.mark.parametrize(("offset", "name", "value"), [(56, "MapOriginV", float("nan")), (40, "MapSpacingV", float("nan")),
                                                       (64, "MapOriginH", float("inf")), (48, "MapSpacingH", -1.0)])
def test_a_gain_map_with_a_nan_origin_or_spacing_is_refused_in_one_line(tmp_path, offset, name, value):
    from hetbench.isp.capture import RawCapture
    from hetbench.isp.dng import write_dng
    from hetbench.isp.raw import UnsupportedRaw, read_raw

    cap = RawCapture(np.full((32, 32), 500, np.uint16), "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45))
    write_dng(cap, tmp_path / "bad.dng", opcode_list2=_gain_map_with(offset, value))
    with pytest.raises(UnsupportedRaw, match=rf"unusable lens-shading opcodes \(OpcodeList2\): GainMap opcode is "
                                             rf"malformed \({name} is"):
        read_raw(tmp_path / "bad.dng")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_raw_build_skips_and_lists_a_dng_whose_gain_map_origin_is_nan(tmp_path, run_cli, workers):
    import json

    from hetbench.isp.capture import RawCapture
    from hetbench.isp.dng import write_dng

    raws = tmp_path / "raws"
    raws.mkdir()
    for i in range(4):
        write_dng(RawCapture(np.full((32, 32), 600 + 150 * i, np.uint16), "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45)),
                  raws / f"flat{i}.dng")
    write_dng(RawCapture(np.full((32, 32), 700, np.uint16), "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45)),
              raws / "nan-origin.dng", opcode_list2=_gain_map_with(56, float("nan")))
    labels = tmp_path / "labels.csv"
    labels.write_text("file,label\n" + "".join(f"flat{i}.dng,{'ab'[i % 2]}\n" for i in range(4)) + "nan-origin.dng,a\n")
    out = tmp_path / "out"
    code, _, err = run_cli("build", "iso-isp", "--stages", "tone", "--raw-dir", raws, "--labels", labels, "--size", "32",
                           "--test-fraction", "0.5", "--num-proc", workers, "--out", out, "-q")
    assert code == 0, err
    skipped = json.loads((out / "report.json").read_text())["skipped"]
    assert [s["file"].rsplit("/", 1)[-1] for s in skipped] == ["nan-origin.dng"]
    assert "MapOriginV is nan" in skipped[0]["reason"]
