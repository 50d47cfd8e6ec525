"""RAW reading, DNG writing and the LibRaw front end (hetbench.isp.raw, hetbench.isp.dng, hetbench.isp.stages.demosaic).

Real captures come from ``../shared/data/raw`` (relative to the repository) (see its SOURCES.md); the tests that need them are
skipped when that folder is absent. Everything else runs on small synthetic captures.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

rawpy = pytest.importorskip("rawpy")
tifffile = pytest.importorskip("tifffile")

from hetbench.isp.capture import CFA_CODES, CFA_PATTERNS, SRGB_TO_XYZ, RawCapture  # noqa: E402
from hetbench.isp.dng import dng_bytes, write_dng  # noqa: E402
from hetbench.isp.raw import UnsupportedRaw, read_raw  # noqa: E402
from hetbench.isp.raw_metadata import color_matrix_from_rgb_cam  # noqa: E402
from hetbench.isp.stages import REGISTRY, StageContext  # noqa: E402
from hetbench.isp.stages import demosaic as dm  # noqa: E402

RAW_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "raw"

#: Bayer files and their top-left 2x2 CFA (SOURCES.md; cross-checked against rawpy below).
BAYER = {
    "canon_eos550d_magiclantern_colorchecker.dng": "RGGB",
    "kodak_dc50.kdc": "GRBG",
    "rpi_picamera2_1920x1200_desk.dng": "GRBG",
    "rpi_picamera2_1920x1200_rover.dng": "GRBG",
    "rpi_gs_1456x1088_darkframe.dng": "BGGR",
}
#: black, white levels (SOURCES.md)
LEVELS = {
    "canon_eos550d_magiclantern_colorchecker.dng": (2056, 15000),
    "kodak_dc50.kdc": (0, 16383),
    "rpi_picamera2_1920x1200_desk.dng": (32, 1023),
    "rpi_picamera2_1920x1200_rover.dng": (32, 1023),
    "rpi_gs_1456x1088_darkframe.dng": (60, 1023),
}
LINEAR_RAW = "canon_eos6d_linearraw_lossy.dng"

#: an XYZ -> camera matrix (the 550D's ColorMatrix1)
CM = np.array([[0.6461, -0.1164, -0.0857], [-0.3825, 1.1597, 0.2534], [-0.0416, 0.1540, 0.6039]])
LIBRAW_RAW = dict(
    user_wb=[1, 1, 1, 1],
    output_color=None,  # filled in below (rawpy.ColorSpace.raw)
    gamma=(1, 1),
    no_auto_bright=True,
    output_bps=16,
    user_flip=0,
    adjust_maximum_thr=0.0,
)
LIBRAW_RAW["output_color"] = rawpy.ColorSpace.raw


@pytest.fixture(scope="module")
def raw_dir() -> Path:
    if not RAW_DIR.is_dir():
        pytest.skip(f"real RAW samples not present ({RAW_DIR})")
    return RAW_DIR


@pytest.fixture(scope="module")
def real(raw_dir) -> dict[str, RawCapture]:
    return {name: read_raw(raw_dir / name) for name in BAYER}


def _rawpy_cfa(path) -> str:
    """The CFA string straight from rawpy, computed independently of read_raw."""
    with rawpy.imread(str(path)) as r:
        desc = r.color_desc.decode()
        return "".join(desc[i] for i in r.raw_colors_visible[:2, :2].ravel())


def _flat_mosaic(cfa: str, black, white, levels: dict[str, float], shape=(64, 96)) -> np.ndarray:
    """Mosaic where each CFA colour sits at black + level * (white - black); levels keys R/G/B (or
    G1/G2 for the first/second green in row-major order)."""
    m = np.zeros(shape, np.uint16)
    black = np.broadcast_to(np.asarray(black, float), 4)
    greens = 0
    for k, (i, j) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        c = cfa[k]
        if c == "G":
            greens += 1
            lv = levels.get(f"G{greens}", levels.get("G"))
        else:
            lv = levels[c]
        m[i::2, j::2] = round(black[k] + lv * (white - black[k]))
    return m


def _capture(mosaic, cfa="RGGB", black=(250, 256, 262, 270), white=4095, neutral=(0.45, 1.0, 0.7), **kw):
    return RawCapture(mosaic, cfa, black, white, CM, neutral, **kw)


# --------------------------------------------------------------------------------------------------
# read_raw on real files
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BAYER))
def test_real_bayer_files_read_with_right_cfa_and_levels(raw_dir, real, name):
    cap = real[name]
    assert cap.cfa == BAYER[name] == _rawpy_cfa(raw_dir / name)
    with rawpy.imread(str(raw_dir / name)) as r:
        visible = r.raw_image_visible
        assert cap.mosaic.shape == (visible.shape[0] // 2 * 2, visible.shape[1] // 2 * 2)
        assert np.array_equal(cap.mosaic, visible[: cap.height, : cap.width])
    black, white = LEVELS[name]
    assert cap.black_level == (black,) * 4
    assert cap.white_level == white
    assert cap.capture_id == Path(name).stem
    assert cap.as_shot_neutral[1] == 1.0 and all(v > 0 for v in cap.as_shot_neutral)
    assert cap.color_matrix.shape == (3, 3) and np.all(np.isfinite(cap.color_matrix))
    assert cap.make not in ("", "unknown") and cap.model not in ("", "unknown")


def test_real_metadata_matches_the_files(raw_dir, real):
    # AsShotNeutral of the RPi desk DNG is (1/1.2219, 1, 1/1.3650)
    desk = real["rpi_picamera2_1920x1200_desk.dng"]
    assert desk.as_shot_neutral == pytest.approx((1 / 1.2219, 1.0, 1 / 1.3650), rel=1e-4)
    assert (desk.make, desk.model) == ("RaspberryPi", "PiDNG / PiCamera2")
    # the 550D's AsShotNeutral (1, 2.477, 1.462), normalised to green
    c550 = real["canon_eos550d_magiclantern_colorchecker.dng"]
    assert c550.as_shot_neutral == pytest.approx((1 / 2.477, 1.0, 1.462 / 2.477), rel=1e-3)
    assert c550.make == "Canon"
    # Kodak DC50 has no as-shot WB: (1, 1, 1)
    assert real["kodak_dc50.kdc"].as_shot_neutral == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("name", [n for n in sorted(BAYER) if n.endswith(".dng")])
def test_dng_color_matrix_recovered_from_rgb_cam(raw_dir, real, name):
    """rawpy shows rgb_xyz_matrix = 0 for these DNGs; read_raw derives ColorMatrix1 from rgb_cam."""
    cap = real[name]
    with tifffile.TiffFile(raw_dir / name) as tf:
        v = np.array(tf.pages[0].tags[50721].value, float).reshape(-1, 2)
    file_cm = (v[:, 0] / v[:, 1]).reshape(3, 3)
    np.testing.assert_allclose(cap.color_matrix, file_cm, rtol=2e-4, atol=2e-4)
    with rawpy.imread(str(raw_dir / name)) as r:
        rgb_cam = np.asarray(r.color_matrix)[:3, :3]
    np.testing.assert_allclose(cap.camera_to_srgb(), rgb_cam, atol=1e-4)


def test_kodak_matrix_is_the_one_libraw_applies(raw_dir, real, tmp_path):
    """DC50: rawpy shows no matrix at all, LibRaw still applies one; read_raw measures it, and a DNG
    rewrite carrying it renders to the same sRGB as the original file."""
    cap = real["kodak_dc50.kdc"]
    assert not np.allclose(cap.camera_to_srgb(), np.eye(3), atol=0.05)
    np.testing.assert_allclose(cap.camera_to_srgb().sum(axis=1), 1.0, atol=1e-6)
    write_dng(cap, tmp_path / "dc50.dng")
    params = dict(LIBRAW_RAW, output_color=rawpy.ColorSpace.sRGB, half_size=True)
    with rawpy.imread(str(raw_dir / "kodak_dc50.kdc")) as r:
        orig = r.postprocess(**params).astype(float)
    with rawpy.imread(str(tmp_path / "dc50.dng")) as r:
        again = r.postprocess(**params).astype(float)
    assert orig.shape == again.shape
    assert np.abs(orig - again).max() <= 0.002 * 65535


def test_linear_raw_dng_is_unsupported(raw_dir):
    with pytest.raises(UnsupportedRaw) as err:
        read_raw(raw_dir / LINEAR_RAW)
    assert "not a CFA mosaic" in err.value.reason and "LinearRaw" in err.value.reason
    assert "\n" not in err.value.reason
    assert err.value.path == str(raw_dir / LINEAR_RAW)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("name", ["canon_eos550d_magiclantern_colorchecker.dng", "kodak_dc50.kdc", LINEAR_RAW])
def test_truncated_file_is_unsupported(raw_dir, tmp_path, name):
    cut = tmp_path / name
    cut.write_bytes((raw_dir / name).read_bytes()[:10 * 1024])
    with pytest.raises(UnsupportedRaw) as err:
        read_raw(cut)
    assert err.value.reason.startswith("cannot decode: ")
    assert "\n" not in err.value.reason and "b'" not in err.value.reason


def test_not_a_raw_and_missing_file(tmp_path):
    junk = tmp_path / "junk.dng"
    junk.write_bytes(np.random.default_rng(0).integers(0, 256, 20000, dtype=np.uint8).tobytes())
    with pytest.raises(UnsupportedRaw, match="cannot decode"):
        read_raw(junk)
    empty = tmp_path / "empty.nef"
    empty.write_bytes(b"")
    with pytest.raises(UnsupportedRaw, match="cannot decode"):
        read_raw(empty)
    with pytest.raises(UnsupportedRaw, match="cannot decode: no such file"):
        read_raw(tmp_path / "nope.dng")


# --------------------------------------------------------------------------------------------------
# DNG writing
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfa", CFA_PATTERNS)
def test_dng_round_trip_synthetic(tmp_path, cfa):
    rng = np.random.default_rng(CFA_PATTERNS.index(cfa))
    mosaic = rng.integers(0, 4096, (48, 80)).astype(np.uint16)
    cap = _capture(mosaic, cfa, neutral=(0.4537, 1.0, 0.7123), make="Acme", model="Phone 9",
                   calibration_illuminant=17, capture_id="syn")
    path = tmp_path / f"syn_{cfa}.dng"
    write_dng(cap, path)
    back = read_raw(path)
    assert np.array_equal(back.mosaic, cap.mosaic)
    assert back.cfa == cfa
    assert back.black_level == cap.black_level
    assert back.white_level == cap.white_level
    np.testing.assert_allclose(back.color_matrix, CM, atol=1e-6)
    np.testing.assert_allclose(back.as_shot_neutral, cap.as_shot_neutral, rtol=2e-7)
    assert (back.make, back.model, back.calibration_illuminant) == ("Acme", "Phone 9", 17)
    assert back.capture_id == f"syn_{cfa}"
    np.testing.assert_allclose(back.camera_to_srgb(), cap.camera_to_srgb(), atol=1e-6)


@pytest.mark.parametrize("cfa", CFA_PATTERNS)
def test_dng_bytes_read_by_libraw_in_memory(cfa):
    """What LibRaw sees in the in-memory DNG: pattern, per-colour black, white, camera WB."""
    cap = _capture(np.full((32, 48), 1000, np.uint16), cfa)  # LibRaw rejects sides < 22
    data = dng_bytes(cap)
    assert data[:4] in (b"II*\x00", b"MM\x00*")
    with rawpy.imread(io.BytesIO(data)) as r:
        desc = r.color_desc.decode()
        assert "".join(desc[i] for i in r.raw_pattern.ravel()) == cfa
        per_colour = r.black_level_per_channel
        assert tuple(per_colour[i] for i in r.raw_pattern.ravel()) == cap.black_level
        assert r.white_level == 4095
        wb = np.asarray(r.camera_whitebalance[:3])
        np.testing.assert_allclose(wb / wb[1], 1 / np.asarray(cap.as_shot_neutral), rtol=1e-6)
    with tifffile.TiffFile(io.BytesIO(data)) as tf:
        page = tf.pages[0]
        tags = page.tags
        assert page.compression == 1 and int(tags["PhotometricInterpretation"].value) == 32803
        assert tags[50706].value == (1, 4, 0, 0) or bytes(tags[50706].value) == bytes((1, 4, 0, 0))
        assert tuple(tags[50713].value) == (2, 2)
        assert tags[50721].dtype == 10 and tags[50728].dtype == 5  # SRATIONAL, RATIONAL
        assert list(tags[33422].value) == [CFA_CODES[c] for c in cfa]


def test_odd_visible_area_is_cropped_to_even(tmp_path):
    cap = _capture(np.zeros((40, 54), np.uint16), "GBRG")
    odd = np.arange(41 * 55, dtype=np.uint16).reshape(41, 55)
    object.__setattr__(cap, "mosaic", odd)  # write_dng itself does not need even sides
    write_dng(cap, tmp_path / "odd.dng")
    back = read_raw(tmp_path / "odd.dng")
    assert back.mosaic.shape == (40, 54) and back.cfa == "GBRG"
    assert np.array_equal(back.mosaic, odd[:40, :54])


@pytest.mark.parametrize("name", sorted(BAYER))
def test_dng_round_trip_real(real, tmp_path, name):
    cap = real[name]
    path = tmp_path / "again.dng"
    write_dng(cap, path)
    back = read_raw(path)
    assert np.array_equal(back.mosaic, cap.mosaic)
    assert (back.cfa, back.black_level, back.white_level) == (cap.cfa, cap.black_level, cap.white_level)
    scale = np.abs(cap.color_matrix).max()
    np.testing.assert_allclose(back.color_matrix, cap.color_matrix, atol=2e-6 * scale + 1e-6)
    np.testing.assert_allclose(back.as_shot_neutral, cap.as_shot_neutral, rtol=2e-7)
    assert (back.make, back.model) == (cap.make, cap.model)


def test_color_matrix_from_rgb_cam_inverts_libraw():
    # LibRaw: rgb_cam = inv(rownorm(cm @ SRGB_TO_XYZ)), pre_mul = 1 / rowsum
    cam_rgb = CM @ SRGB_TO_XYZ
    rowsum = cam_rgb.sum(axis=1)
    rgb_cam = np.linalg.inv(cam_rgb / rowsum[:, None])
    np.testing.assert_allclose(color_matrix_from_rgb_cam(rgb_cam, 1 / rowsum), CM, atol=1e-12)
    no_daylight = color_matrix_from_rgb_cam(rgb_cam)
    cap = _capture(np.zeros((2, 2), np.uint16))
    np.testing.assert_allclose(RawCapture(cap.mosaic, "RGGB", 0, 1, no_daylight, (1, 1, 1)).camera_to_srgb(), rgb_cam,
                               atol=1e-12)


# --------------------------------------------------------------------------------------------------
# LibRaw front end (libraw_linear) and the demosaic variants
# --------------------------------------------------------------------------------------------------


def test_demosaic_variants_registered():
    variants = REGISTRY["demosaic"]
    assert {n: v.table3 for n, v in variants.items()} == {"ppg": "baseline", "bin": "option1", "ahd": "option2"}
    assert "binning" in variants["bin"].description
    for name, v in variants.items():
        assert v.apply.algorithm == name
        with pytest.raises(TypeError, match="libraw_linear"):
            v.apply(np.zeros((4, 4, 3), np.float32), StageContext())
    with pytest.raises(ValueError, match="ppg"):
        dm.libraw_linear(_capture(np.zeros((8, 8), np.uint16)), "amaze", False)


@pytest.mark.parametrize("cfa", CFA_PATTERNS)
@pytest.mark.parametrize("algorithm", ["ppg", "ahd", "bin"])
@pytest.mark.parametrize("fbdd", [False, True])
def test_flat_field_is_linear_and_unit_scaled(cfa, algorithm, fbdd):
    """Every channel at black + 0.5 (white - black), with 4 different per-position blacks -> 0.5.
    (The blacks are odd so that the flat level is an exact DN in every position.)"""
    black = (251, 255, 263, 271)
    cap = _capture(_flat_mosaic(cfa, black, 4095, {"R": 0.5, "G": 0.5, "B": 0.5}), cfa, black)
    out = dm.libraw_linear(cap, algorithm, fbdd)
    expected_shape = (32, 48, 3) if algorithm == "bin" else (64, 96, 3)
    assert out.shape == expected_shape and out.dtype == np.float32
    np.testing.assert_allclose(out, 0.5, atol=2e-5)


def test_tiny_capture_goes_through_libraw():
    cap = _capture(_flat_mosaic("GBRG", 256, 4095, {"R": 0.2, "G": 0.2, "B": 0.2}, shape=(4, 6)), "GBRG", 256)
    for algorithm, shape in (("ppg", (4, 6, 3)), ("ahd", (4, 6, 3)), ("bin", (2, 3, 3))):
        out = dm.libraw_linear(cap, algorithm, True)
        assert out.shape == shape
        np.testing.assert_allclose(out, 0.2, atol=2e-4)


def test_fractional_black_level_is_honoured():
    """LibRaw keeps black levels as integers; libraw_linear normalises such captures itself."""
    black, white = 255.5, 4095.0
    m = np.full((48, 64), 2175, np.uint16)  # 255.5 + 0.5 * (4095 - 255.5) = 2175.25
    out = dm.libraw_linear(RawCapture(m, "RGGB", black, white, CM, (1, 1, 1)), "ppg", False)
    np.testing.assert_allclose(out, (2175 - black) / (white - black), atol=2e-5)


@pytest.mark.parametrize("level", [0.0, 0.2, 1.0])
def test_black_is_zero_and_white_is_one(level):
    cap = _capture(_flat_mosaic("GRBG", 256, 4095, {"R": level, "G": level, "B": level}), "GRBG", 256)
    for algorithm in ("ppg", "bin"):
        np.testing.assert_allclose(dm.libraw_linear(cap, algorithm, False), level, atol=2e-4)


def test_no_auto_rescaling_by_image_maximum():
    """LibRaw's adjust_maximum_thr would rescale an image whose max is above 75 % of white."""
    m = _flat_mosaic("RGGB", 256, 4095, {"R": 0.3, "G": 0.3, "B": 0.3})
    m[:8, :8] = _flat_mosaic("RGGB", 256, 4095, {"R": 0.8, "G": 0.8, "B": 0.8}, shape=(8, 8))
    out = dm.libraw_linear(_capture(m, "RGGB", 256), "ppg", False)
    assert out[40:, 40:].mean() == pytest.approx(0.3, abs=1e-3)
    assert out[2:6, 2:6].mean() == pytest.approx(0.8, abs=1e-3)


def test_camera_rgb_channels_are_not_white_balanced_and_in_rgb_order():
    levels = {"R": 0.1, "G": 0.4, "B": 0.7}
    for cfa in CFA_PATTERNS:
        cap = _capture(_flat_mosaic(cfa, 64, 4095, levels), cfa, 64, neutral=(0.5, 1, 0.6))
        for algorithm in ("ppg", "ahd", "bin"):
            out = dm.libraw_linear(cap, algorithm, False)
            np.testing.assert_allclose(out.reshape(-1, 3).mean(axis=0), [0.1, 0.4, 0.7], atol=5e-4)


@pytest.mark.parametrize("cfa", CFA_PATTERNS)
def test_output_is_in_sensor_orientation(cfa):
    """Only the red sites of one small block are lit: red appears there, nowhere else."""
    codes = np.array([CFA_CODES[c] for c in cfa]).reshape(2, 2)
    m = np.full((60, 80), 100, np.uint16)
    for i in range(20, 24):
        for j in range(50, 54):
            if codes[i % 2, j % 2] == 0:
                m[i, j] = 3000
    out = dm.libraw_linear(_capture(m, cfa, 100), "ppg", False)
    ys, xs = np.nonzero(out[..., 0] > 0.3)
    assert 19 <= ys.min() and ys.max() <= 24 and 49 <= xs.min() and xs.max() <= 54
    assert out[..., 1].max() < 1e-3 and out[..., 2].max() < 1e-3
    half = dm.libraw_linear(_capture(m, cfa, 100), "bin", False)
    ys, xs = np.nonzero(half[..., 0] > 0.3)
    assert set(ys) <= {10, 11} and set(xs) <= {25, 26}


def test_bin_is_half_resolution_block_average():
    levels = {"R": 0.1, "G1": 0.2, "G2": 0.6, "B": 0.9}
    for cfa in CFA_PATTERNS:
        cap = _capture(_flat_mosaic(cfa, 100, 4095, levels, shape=(40, 60)), cfa, 100)
        out = dm.libraw_linear(cap, "bin", False)
        assert out.shape == (20, 30, 3)
        np.testing.assert_allclose(out, np.broadcast_to([0.1, 0.4, 0.9], out.shape), atol=3e-4)


def test_ppg_and_ahd_agree_on_flat_regions():
    """Piecewise-flat coloured patches: both demosaics reproduce each patch away from its edges."""
    rng = np.random.default_rng(3)
    h, w, block = 96, 128, 32
    truth = np.zeros((h, w, 3))
    for by in range(0, h, block):
        for bx in range(0, w, block):
            truth[by:by + block, bx:bx + block] = rng.uniform(0.05, 0.9, 3)
    codes = _capture(np.zeros((2, 2), np.uint16), "BGGR").cfa_codes
    idx = codes[np.arange(h)[:, None] % 2, np.arange(w)[None, :] % 2]
    plane = np.take_along_axis(truth, idx[..., None], axis=2)[..., 0]
    mosaic = np.rint(256 + plane * (4095 - 256)).astype(np.uint16)
    cap = _capture(mosaic, "BGGR", 256)
    ppg, ahd = dm.libraw_linear(cap, "ppg", False), dm.libraw_linear(cap, "ahd", False)
    inner = np.zeros((h, w), bool)
    for by in range(0, h, block):
        for bx in range(0, w, block):
            inner[by + 6:by + block - 6, bx + 6:bx + block - 6] = True
    np.testing.assert_allclose(ppg[inner], truth[inner], atol=5e-4)
    np.testing.assert_allclose(ahd[inner], truth[inner], atol=5e-4)
    assert np.abs(ppg - ahd)[inner].max() < 5e-4


def test_fbdd_reduces_noise_and_keeps_the_mean():
    rng = np.random.default_rng(1)
    m = np.clip(np.rint(256 + 0.5 * 3839 + rng.normal(0, 20, (128, 128))), 0, 4095).astype(np.uint16)
    cap = _capture(m, "RGGB", 256)
    off, on = dm.libraw_linear(cap, "ppg", False), dm.libraw_linear(cap, "ppg", True)
    assert on.std() < off.std()
    np.testing.assert_allclose(on.mean(axis=(0, 1)), off.mean(axis=(0, 1)), atol=1e-3)
    assert 0.45 < on.min() and on.max() < 0.55  # no corner artefacts (the reflect padding)


@pytest.mark.parametrize("name", sorted(BAYER))
def test_real_captures_demosaic_like_libraw_on_the_original_file(raw_dir, real, name):
    """libraw_linear(read_raw(file)) equals LibRaw's own linear render of the file (away from the
    border, where libraw_linear pads): CFA phase, levels and orientation all survive the rewrite."""
    cap = real[name]
    out = dm.libraw_linear(cap, "ppg", False)
    assert out.shape == (cap.height, cap.width, 3) and out.dtype == np.float32
    assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1
    with rawpy.imread(str(raw_dir / name)) as r:
        ref = r.postprocess(demosaic_algorithm=rawpy.DemosaicAlgorithm.PPG, **LIBRAW_RAW) / 65535.0
    b = dm.PAD
    assert np.abs(out - ref)[b:-b, b:-b].max() < 1e-6


@pytest.mark.parametrize("algorithm,fbdd", [("ppg", True), ("ahd", False), ("ahd", True), ("bin", True)])
def test_real_capture_variants_finite(real, algorithm, fbdd):
    cap = real["rpi_picamera2_1920x1200_rover.dng"]
    crop = RawCapture(cap.mosaic[200:712, 400:1040], cap.cfa, cap.black_level, cap.white_level,
                      cap.color_matrix, cap.as_shot_neutral)
    out = dm.libraw_linear(crop, algorithm, fbdd)
    assert out.shape == ((256, 320, 3) if algorithm == "bin" else (512, 640, 3))
    assert np.isfinite(out).all() and 0 <= out.min() and out.max() <= 1 and out.mean() > 0.01
