"""--test-crops unseen-region: test crops cut from a part of each photograph that no training crop touches."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.sources.photographs import region_crops

SMALL = ("--stages", "wb", "--crops-per-photo", "5", "--crop-size", "96", "--size", "16", "--num-proc", "1", "-q")


@st.composite
def crop_problems(draw):
    h, w = draw(st.integers(20, 240)), draw(st.integers(20, 240))
    size = draw(st.integers(1, min(h, w)))
    share = draw(st.floats(0.01, 0.9))
    band = max(size, int(np.ceil(share * max(h, w))))
    if max(h, w) - band < size:  # cannot fit: refused, drawn from the fitting cases only
        share = 0.01
    return h, w, size, share, draw(st.integers(0, 6)), draw(st.integers(0, 6)), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=150, deadline=None)
@given(crop_problems())
def test_no_test_pixel_was_ever_a_training_pixel(problem):
    h, w, size, share, n_train, n_test, seed = problem
    image = np.arange(h * w).reshape(h, w)  # every pixel its own id
    try:
        train, test = region_crops(image, n_train, n_test, size, share, np.random.default_rng(seed))
    except ValueError:
        assert max(h, w) - max(min(size, h, w), int(np.ceil(share * max(h, w)))) < min(size, h, w)
        return
    side = min(size, h, w)
    assert len(train) == n_train and len(test) == n_test
    assert all(c.shape == (side, side) for c in train + test)
    seen = set(np.concatenate([c.ravel() for c in train]).tolist()) if train else set()
    assert not any(set(c.ravel().tolist()) & seen for c in test)
    again = region_crops(image, n_train, n_test, size, share, np.random.default_rng(seed))
    assert all(np.array_equal(a, b) for a, b in zip(train + test, again[0] + again[1]))


def test_test_crops_lie_in_a_band_at_one_end_of_the_longer_side():
    image = np.arange(100 * 400).reshape(100, 400)
    ends = set()
    for seed in range(8):
        train, test = region_crops(image, 10, 10, 50, 0.25, np.random.default_rng(seed))
        test_x = {int(c[0, 0] % 400) for c in test}
        train_x = {int(c[0, 0] % 400) for c in train}
        if max(test_x) <= 50:  # the band is x in [0, 100): crops start at x <= 50
            ends.add("start")
            assert min(train_x) >= 100
        else:
            ends.add("end")
            assert min(test_x) >= 300 and max(train_x) + 50 <= 300
    assert ends == {"start", "end"}  # the end is drawn, not fixed


def test_too_small_an_image_is_refused():
    with pytest.raises(ValueError, match="cannot hold a test band"):
        region_crops(np.zeros((64, 100)), 1, 1, 64, 0.2, np.random.default_rng(0))


def test_build_holds_out_each_photographs_unseen_band_and_verifies(tmp_path, run_cli):
    import datasets

    out = tmp_path / "iso"
    code, _, err = run_cli("build", "iso-isp", *SMALL, "--test-crops", "unseen-region", "--out", out)
    assert code == 0, err
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["recipe"]["build"]["params"]["test_crops"] == "unseen-region"
    report = json.loads((out / "report.json").read_text())
    assert report["captures"] == {"used": 35, "train": 28, "test": 7}  # one test crop of each of 7 photographs
    ds = datasets.load_dataset(str(out))
    test_ids = set(ds["test"]["capture_id"])
    assert test_ids == {f"{scene}-04" for scene in ("astronaut", "coffee", "chelsea", "rocket", "motorcycle",
                                                     "china", "flower")}  # after each photograph's 4 training crops
    assert not test_ids & set(ds["train"]["capture_id"])
    code, stdout, _ = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), stdout


def test_random_test_crops_keep_their_recipe(tmp_path, run_cli):
    out = tmp_path / "iso"
    assert run_cli("build", "iso-isp", *SMALL, "--out", out)[0] == 0
    assert "test_crops" not in json.loads((out / "hetbench.json").read_text())["recipe"]["build"]["params"]


@pytest.mark.parametrize("args, message", [
    (("--crops-per-photo", "1"), "--test-crops unseen-region needs at least 2 crops per photograph"),
    (("--crop-size", "512"), "photograph 'astronaut': a 512 x 512 image cannot hold a test band"),
    (("--raw-dir", "."), "--test-crops unseen-region applies to the embedded photographs"),
])
def test_bad_unseen_region_input_is_one_line_and_writes_nothing(tmp_path, run_cli, args, message):
    out = tmp_path / "iso"
    base = [a for a in SMALL if a not in ("--crops-per-photo", "5")] if "--crops-per-photo" in args else list(SMALL)
    code, _, err = run_cli("build", "iso-isp", *base, *args, "--test-crops", "unseen-region", "--out", out)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_synthetic_colour_devices_take_no_test_crops(tmp_path, run_cli):
    code, _, err = run_cli("build", "devices", "--synthetic-color", "3", "--test-crops", "unseen-region",
                           "--out", tmp_path / "d")
    assert code == 2 and "--test-crops" in err
    assert not (tmp_path / "d").exists()


def test_a_python_caller_gets_the_reason():
    from hetbench.builders.iso_isp import prepare_iso_isp

    with pytest.raises(HetbenchError, match="test_crops must be one of random, unseen-region"):
        prepare_iso_isp("wb", size=16, crops_per_photo=2, crop_size=64, quiet=True, test_crops="tiles")
