"""The feature-shift entry of every image split's report (issue 30, item 1): the linear-cost measure equals the
pairwise one, it orders the splits the way they were built (feature noise grows with sigma; an ISP without
white balance or tone mapping is farther than one with another demosaic or denoiser; a label-only split
stays at its IID value), the card leads with it where the split varies images, and bad input gets one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from hetbench.report.feature_shift import conditional_shift, median_bandwidth
from hetbench.report.unit_shift import iid_units, many_unit_shifts, unit_shifts

SMALL_ISP = ("--crops-per-photo", "5", "--crop-size", "96", "--size", "48", "-q")


def _entry(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())["feature_shift"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_linear_measure_equals_the_pairwise_one(seed):
    """Fréchet distances from sums equal the pairwise computation; with many random features the MMD^2
    equals the Gaussian kernel's within 3% of the shifted unit's value."""
    rng = np.random.default_rng(seed)
    labels, units = rng.integers(0, 3, 900), rng.integers(0, 5, 900)
    x = rng.normal(size=(900, 4)) + (units == 2)[:, None] * 1.0
    h = median_bandwidth(x)
    fast = unit_shifts(x, labels, units, 5, bandwidth=h, fourier=20000)
    for u in range(5):
        slow = conditional_shift(x, labels, units == u, max_reference=10**6, bandwidth=h)
        assert fast.frechet[u] == pytest.approx(slow.frechet, rel=1e-9)
        assert fast.mmd2[u] == pytest.approx(slow.mmd2, abs=0.03 * fast.mmd2[2])
        assert fast.classes_compared[u] == slow.classes_compared == 3


def test_one_pass_over_several_assignments_gives_each_ones_numbers():
    rng = np.random.default_rng(3)
    x, labels = rng.normal(size=(2000, 5)), rng.integers(0, 4, 2000)
    a, b = rng.integers(0, 7, 2000), iid_units(labels, rng.integers(0, 3, 2000))
    together = many_unit_shifts(x, labels, [(a, 7), (b, 3)], seed=5)
    for got, (units, k) in zip(together, [(a, 7), (b, 3)]):
        alone = unit_shifts(x, labels, units, k, seed=5)
        assert np.array_equal(got.mmd2, alone.mmd2) and np.array_equal(got.frechet, alone.frechet)


def test_iid_units_keep_every_units_class_counts():
    rng = np.random.default_rng(4)
    labels, units = rng.integers(0, 5, 1000), rng.integers(0, 9, 1000)
    shuffled = iid_units(labels, units, seed=2)
    assert np.array_equal(np.bincount(labels * 9 + units, minlength=45), np.bincount(labels * 9 + shuffled, minlength=45))
    assert not np.array_equal(shuffled, units)


def test_feature_noise_moves_the_split_away_as_sigma_grows_and_a_label_split_stays_at_its_iid_value(tmp_path, run_cli):
    values = []
    for sigma in ("0.05", "0.2", "0.5"):
        out = tmp_path / f"noise-{sigma}"
        code, _, err = run_cli("partition", "feature-noise", "--sigma", sigma, "--clients", "10", "--out", out, "-q")
        assert code == 0, err
        values.append(_entry(out)["clients"])
    mmd = [v["mmd2"] for v in values]
    assert mmd[0] < mmd[1] < mmd[2], mmd
    assert all(v["mmd2"] > 5 * abs(v["iid_mmd2"]) for v in values), values
    # the IID reference is the mean of 5 random deals, given with their range; every noise level lies above it
    assert all(v["iid_draws"] == 5 and v["iid_mmd2_range"][0] <= v["iid_mmd2"] <= v["iid_mmd2_range"][1] < v["mmd2"]
               for v in values), values
    assert not any("frechet" in v for v in values)  # the Fréchet distance is given per group only
    for alpha in ("0.1", "100"):
        out = tmp_path / f"dirichlet-{alpha}"
        code, _, err = run_cli("partition", "dirichlet", "--alpha", alpha, "--clients", "10", "--out", out, "-q")
        assert code == 0, err
        label_only = _entry(out)["clients"]
        # within noise of the IID value, and far below the mildest feature noise
        assert abs(label_only["mmd2"] - label_only["iid_mmd2"]) < mmd[0] / 5, (label_only, mmd)
    card = (out / "README.md").read_text()
    assert "near its IID value by construction" in card
    if label_only["iid_mmd2"] < 0 or label_only["mmd2"] < 0 or label_only["iid_mmd2_range"][0] < 0:
        assert "A negative MMD² is not an error" in card  # printed negative values are explained where printed


@pytest.mark.slow
def test_an_isp_without_white_balance_or_tone_mapping_is_farther_than_another_demosaic_or_denoiser(tmp_path, run_cli):
    out = tmp_path / "iso"
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb,tone,demosaic,denoise", *SMALL_ISP, "--out", out)
    assert code == 0, err
    groups = _entry(out)["groups"]
    assert groups["kind"] == "device"
    by_name = dict(zip(groups["names"], groups["mmd2"]))
    far = [by_name["wb=none"], by_name["tone=none"]]
    near = [v for n, v in by_name.items() if n.startswith(("demosaic=", "denoise="))]
    assert len(near) == 4 and min(far) > 5 * max(near), by_name
    frechet = dict(zip(groups["names"], groups["frechet"]))
    assert min(frechet["wb=none"], frechet["tone=none"]) > max(v for n, v in frechet.items() if n.startswith(("demosaic=", "denoise=")))
    # each group's IID band (5 random deals): wb=none and tone=none lie above theirs
    band = dict(zip(groups["names"], groups["iid_mmd2_band"]))
    assert all(lo <= hi for lo, hi in band.values())
    assert by_name["wb=none"] > band["wb=none"][1] and by_name["tone=none"] > band["tone=none"][1], (by_name, band)
    card = (out / "README.md").read_text()
    table = card[card.index("| metric | value |"):]
    assert table.splitlines()[2].startswith("| feature shift per client")  # the card leads with what the split varies
    assert table.index("feature shift per device") < table.index("| EMD to population")
    assert "(`plots/feature_shift.png`)" in card and (out / "plots" / "feature_shift.png").is_file()
    assert (out / "report" / "feature_shift.parquet").is_file()
    code, _, err = run_cli("verify", out)  # the new files are listed and digested in the manifest
    assert code == 0, err


def test_the_per_client_table_and_the_plot_are_published_and_digested(tmp_path, run_cli):
    import pyarrow.parquet as pq

    out = tmp_path / "d"
    code, _, err = run_cli("partition", "dirichlet", "--alpha", "0.5", "--clients", "6", "--out", out, "-q")
    assert code == 0, err
    table = pq.read_table(out / "report" / "feature_shift.parquet").to_pydict()
    assert table["client_id"] == list(range(6)) and sum(table["rows"]) == _entry(out)["rows"]
    assert {"mmd2", "classes_compared", "mean_r", "mean_g", "mean_b", "luma"} <= set(table) and "frechet" not in table
    manifest = json.loads((out / "hetbench.json").read_text())
    assert {"report/feature_shift.parquet", "plots/feature_shift.png"} <= set(manifest["files"])
    code, _, err = run_cli("verify", out)
    assert code == 0, err


def test_the_same_command_writes_the_same_report_bytes(tmp_path, run_cli):
    reports = []
    for k in range(2):
        out = tmp_path / f"r{k}"
        code, _, err = run_cli("partition", "feature-noise", "--clients", "5", "--out", out, "-q")
        assert code == 0, err
        reports.append(((out / "report.json").read_bytes(), (out / "report" / "feature_shift.parquet").read_bytes()))
    assert reports[0] == reports[1]


def test_thumbnails_do_not_depend_on_the_number_of_threads():
    from hetbench.report.thumbnails import pixel_thumbnails
    from hetbench.sources import load_table

    ds = load_table("builtin:digits").splits["train"]
    one, bad_one = pixel_thumbnails(ds, 8, threads=1)
    two, bad_two = pixel_thumbnails(ds, 8, threads=2)
    assert np.array_equal(one, two) and bad_one == bad_two == []


CORRUPT = range(7, 17)


def _corrupt_parquet(path: Path) -> None:
    import datasets
    from PIL import Image

    rng = np.random.default_rng(0)
    images, labels = [], []
    for i in range(120):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)).save(buf, "PNG")
        data = buf.getvalue()
        images.append({"bytes": data[:30] if i in CORRUPT else data, "path": None})  # truncated PNGs
        labels.append(i % 3)
    feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b", "c"])})
    datasets.Dataset.from_dict({"image": images, "label": labels}, features=feats).to_parquet(str(path))


def test_an_unreadable_image_is_left_out_and_listed_or_refused_by_a_strict_embedder(tmp_path, run_cli):
    src = tmp_path / "src.parquet"
    _corrupt_parquet(src)
    out = tmp_path / "ok"
    code, _, err = run_cli("partition", "iid", "--dataset", src, "--clients", "3", "--test-split", "client", "--out", out, "-q")
    assert code == 0, err
    import pyarrow.parquet as pq

    entry = _entry(out)
    train = pq.read_table(sorted((out / "data").glob("train-*.parquet"))[0]).column("image").to_pylist()
    truncated = sum(len(item["bytes"]) == 30 for item in train)  # the corrupt rows the training split holds
    assert truncated >= 1  # the fixture's seed leaves corrupt rows in the training split
    assert entry["unreadable_rows"] == truncated  # every one of them counted, none more
    assert len(entry["unreadable_examples"]) == truncated  # and each listed (fewer than 20 here)
    assert set(entry["unreadable_examples"]) <= {f"train[{i}]" for i in CORRUPT}
    assert entry["rows"] == len(train) - truncated
    strict = tmp_path / "strict"
    code, stdout, err = run_cli("partition", "iid", "--dataset", src, "--clients", "3", "--test-split", "client",
                                "--test-fraction", "0.01", "--feature-embedder", "hog", "--out", strict, "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--feature-embedder hog" in err and "row" in err
    assert not strict.exists() and "Traceback" not in err


@pytest.mark.parametrize("spec, message", [("sift", "unknown embedder 'sift'"), ("pixels:1", "whole number S from 2 to 256")])
def test_a_bad_feature_embedder_is_one_line_and_exit_2(tmp_path, run_cli, spec, message):
    out = tmp_path / "o"
    code, _, err = run_cli("partition", "dirichlet", "--feature-embedder", spec, "--out", out, "-q")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_none_measures_nothing_and_data_without_images_has_no_entry(tmp_path, run_cli):
    out = tmp_path / "none"
    code, _, err = run_cli("partition", "dirichlet", "--feature-embedder", "none", "--out", out, "-q")
    assert code == 0, err
    assert "feature_shift" not in json.loads((out / "report.json").read_text())
    card = (out / "README.md").read_text()
    assert "| feature shift" not in card and "Feature shift: not measured" in card
    csv = tmp_path / "t.csv"
    csv.write_text("x,label\n" + "\n".join(f"{i * 0.5},{i % 2}" for i in range(40)) + "\n")
    out = tmp_path / "tab"
    code, _, err = run_cli("partition", "iid", "--dataset", csv, "--clients", "2", "--out", out, "-q")
    assert code == 0, err
    assert "feature_shift" not in json.loads((out / "report.json").read_text())


@pytest.mark.slow
def test_the_default_embedder_sees_a_binned_demosaic_above_its_paired_iid_band(tmp_path, run_cli):
    """HeteroSwitch's stage drop loses 10-11 points on ``demosaic=bin`` (half-resolution binning), and the default
    ``pixels:8`` embedder read it as no shift (issue 48, item 4). Every scene of an iso-isp build is rendered by
    every device, so the IID deals shuffle within each capture (the paired design's null: within a class they
    gave each device other scenes and put even the baseline below its band). ``demosaic=bin`` lies above its
    band on both measures; ``ahd`` (another interpolation at full resolution) stays inside its Fréchet band."""
    out = tmp_path / "demosaic"
    code, _, err = run_cli("build", "iso-isp", "--stages", "demosaic", "--crops-per-photo", "15", "--out", out, "-q")
    assert code == 0, err
    entry = _entry(out)
    assert entry["embedder"] == "pixels:8" and entry["iid_deal"] == "within each capture"
    g = entry["groups"]
    mmd = {n: (v, band) for n, v, band in zip(g["names"], g["mmd2"], g["iid_mmd2_band"])}
    fid = {n: (v, band) for n, v, band in zip(g["names"], g["frechet"], g["iid_frechet_band"])}
    above = {n: v - band[1] for n, (v, band) in mmd.items()}
    assert above["demosaic=bin"] > 0 and above["demosaic=bin"] > 3 * max(above["demosaic=ahd"], above["baseline"]), mmd
    assert fid["demosaic=bin"][0] > fid["demosaic=bin"][1][1], fid
    assert fid["demosaic=ahd"][0] <= fid["demosaic=ahd"][1][1] and fid["baseline"][0] <= fid["baseline"][1][1], fid
