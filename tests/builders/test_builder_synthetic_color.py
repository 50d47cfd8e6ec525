"""End to end: hetbench build devices --synthetic-color (HeteroSwitch sec. 6.5), loaded back with datasets."""

from __future__ import annotations

import numpy as np
import pytest


def test_synthetic_color_jitter_properties():
    from hetbench.builders.synthetic_color import colourise, device_settings, jitter

    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, size=(4, 16, 16, 3), dtype=np.uint8)
    identity = {"brightness": 1.0, "contrast": 1.0, "saturation": 1.0, "hue": 0.0}
    assert np.abs(jitter(rgb, identity).astype(int) - rgb).max() <= 1
    darker = jitter(rgb, dict(identity, brightness=0.6))
    assert darker.mean() < rgb.mean() * 0.7
    grey = jitter(rgb, dict(identity, saturation=0.0))
    assert np.abs(grey[..., 0].astype(int) - grey[..., 2]).max() <= 1  # no colour left
    s = device_settings(10, np.random.default_rng(1))
    assert len({tuple(d.values()) for d in s}) == 10
    assert all(0.6 <= d["brightness"] <= 1.4 and -0.1 <= d["hue"] <= 0.1 for d in s)
    col = colourise(np.full((2, 4, 4), 255, np.uint8), np.random.default_rng(2))
    assert col.shape == (2, 4, 4, 3) and col.std(axis=-1).max() > 0  # colourised, not grey


@pytest.mark.slow
def test_synthetic_color_build(tmp_path, run_cli):
    import datasets

    out = tmp_path / "syn"
    code, _, err = run_cli("build", "devices", "--synthetic-color", "4", "--clients", "8", "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    train, test = ds["train"], ds["test"]
    assert set(train["device"]) == set(test["device"]) == {f"synthetic-0{i}" for i in range(4)}
    assert len(test) % 4 == 0 and len(set(test["capture_id"])) == len(test) // 4  # every test image x every device
    assert not set(train["capture_id"]) & set(test["capture_id"])
    assert sorted(set(train["client_id"])) == list(range(8))
    assert train[0]["image"].mode == "RGB"
    assert run_cli("verify", out)[0] == 0
    code, _, err = run_cli("build", "devices", "--synthetic-color", "4", "--raw-dir", tmp_path, "--out", tmp_path / "x")
    assert code == 2 and "--synthetic-color" in err
