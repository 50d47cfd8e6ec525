"""Noise-based skews (``partition feature-noise`` / ``label-noise``): NIID-Bench's per-client Gaussian
pixel noise and uniform / pair label flipping, published as the noised rows and verified by
re-running the build (issue 14)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.partitioners import FeatureNoisePartitioner, LabelNoisePartitioner, get_partitioner
from hetbench.partitioners.noise import add_gaussian_noise, check_rate, check_sigma, flip_labels, flip_rates, noise_levels
from partition_checks import PROPS
from tables import make_table


# ---- feature noise -------------------------------------------------------------------------------
@PROPS
@given(sigma=st.floats(0, 10, allow_nan=False), n=st.integers(1, 200))
def test_noise_level_is_monotone_in_k_and_the_last_client_gets_sigma(sigma, n):
    levels = noise_levels(sigma, n)
    assert levels.shape == (n,) and np.all(np.diff(levels) >= 0) and np.all(levels >= 0)
    assert levels[-1] == pytest.approx(sigma) and levels[0] == pytest.approx(sigma / n)
    if sigma > 1e-300 and n > 1:  # strictly increasing (a subnormal sigma rounds to equal levels)
        assert np.all(np.diff(levels) > 0)


@PROPS
@given(std=st.floats(0, 2, allow_nan=False), seed=st.integers(0, 2**32), shape=st.sampled_from([(8, 8), (5, 7, 3)]),
       value=st.integers(0, 255))
def test_gaussian_noise_is_deterministic_uint8_and_zero_std_is_the_identity(std, seed, shape, value):
    img = np.full(shape, value, np.uint8)
    a = add_gaussian_noise(img, std, np.random.default_rng(seed))
    b = add_gaussian_noise(img, std, np.random.default_rng(seed))
    assert a.dtype == np.uint8 and a.shape == img.shape and np.array_equal(a, b)
    if std == 0:
        assert np.array_equal(a, img)


def test_gaussian_noise_has_the_asked_standard_deviation():
    """On mid-grey (no clipping within 3 sigma) the noise's std is sigma on the [0, 1] scale, up to the
    8-bit rounding (variance + 1/12 LSB^2) and the sampling error of 10^5 pixels (< 1%)."""
    img = np.full((100, 1000), 128, np.uint8)
    for sigma in (0.02, 0.05, 0.1):
        diff = (add_gaussian_noise(img, sigma, np.random.default_rng(1)).astype(float) - 128) / 255
        expected = math.sqrt(sigma**2 + 1 / (12 * 255**2))
        assert diff.std() == pytest.approx(expected, rel=0.02) and abs(diff.mean()) < 0.01 * sigma + 1e-3


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, "x"])
def test_bad_sigma(bad):
    with pytest.raises(HetbenchError, match="sigma"):
        check_sigma(bad)


# ---- label noise ---------------------------------------------------------------------------------
@st.composite
def labels_and_rates(draw):
    C = draw(st.integers(2, 12))
    labels = np.asarray(draw(st.lists(st.integers(0, C - 1), min_size=1, max_size=300)), np.int64)
    rate = draw(st.floats(0, 1, allow_nan=False))
    return labels, C, rate


@PROPS
@given(data=labels_and_rates(), kind=st.sampled_from(["uniform", "pair"]), seed=st.integers(0, 2**32))
def test_flips_change_exactly_the_flipped_rows_and_pair_goes_to_the_next_class(data, kind, seed):
    labels, C, rate = data
    noisy, flipped = flip_labels(labels, np.full(labels.size, rate), C, kind, np.random.default_rng(seed))
    assert noisy.dtype == np.int64 and np.all((noisy >= 0) & (noisy < C))
    assert np.array_equal(noisy != labels, flipped)  # a flipped label is always another class
    if kind == "pair":
        assert np.array_equal(noisy[flipped], (labels[flipped] + 1) % C)
    again = flip_labels(labels, np.full(labels.size, rate), C, kind, np.random.default_rng(seed))
    assert np.array_equal(again[0], noisy) and np.array_equal(again[1], flipped)
    if rate == 0:
        assert not flipped.any()
    if rate == 1:
        assert flipped.all()


@PROPS
@given(rate=st.floats(0, 1, allow_nan=False), n=st.integers(200, 3000), kind=st.sampled_from(["uniform", "pair"]),
       seed=st.integers(0, 2**32))
def test_flip_fraction_within_binomial_bounds(rate, n, kind, seed):
    """The flipped count is Binomial(n, rate): within 6 standard deviations (p < 1e-8 per example)."""
    labels = np.random.default_rng(seed).integers(0, 10, n)
    _, flipped = flip_labels(labels, np.full(n, rate), 10, kind, np.random.default_rng(seed + 1))
    assert abs(int(flipped.sum()) - n * rate) <= 6 * math.sqrt(n * rate * (1 - rate)) + 1


def test_uniform_flips_reach_every_other_class_evenly():
    labels = np.zeros(90_000, np.int64)
    noisy, flipped = flip_labels(labels, np.ones(labels.size), 4, "uniform", np.random.default_rng(0))
    counts = np.bincount(noisy, minlength=4)
    assert counts[0] == 0 and np.all(np.abs(counts[1:] - 30_000) < 600)  # 6 sd of Binomial(90000, 1/3) is ~850


def test_per_client_rates_and_bad_rates():
    assert flip_rates(0.5, 2, per_client=True).tolist() == [0.25, 0.5]
    for bad in (-0.1, 1.5, math.nan, "x"):
        with pytest.raises(HetbenchError, match="rate"):
            check_rate(bad)
    with pytest.raises(HetbenchError, match="at least 2 classes"):
        flip_labels(np.zeros(3, np.int64), np.ones(3), 1, "uniform", np.random.default_rng(0))
    with pytest.raises(HetbenchError, match="kind"):
        LabelNoisePartitioner(3, 0.1, "diagonal")


def test_partitioners_rebuild_from_their_recipe_and_refuse_a_clean_table():
    for p in (FeatureNoisePartitioner(4, 0.3), LabelNoisePartitioner(4, 0.2, "pair", True)):
        assert get_partitioner(p.name, p.params()).params() == p.params()
        with pytest.raises(HetbenchError, match="partitions the table its builder noised"):
            p.partition(make_table(np.arange(20) % 3), seed=0)


# ---- the noised tables ---------------------------------------------------------------------------
def test_feature_noise_table_noises_each_client_with_its_level(digits_table):
    from hetbench.builders.noise_tables import feature_noise_table

    a = FeatureNoisePartitioner(4, 0.4).iid(digits_table.num_rows("train"), np.random.default_rng(0))
    levels = noise_levels(0.4, 4)
    noisy = feature_noise_table(digits_table, a, levels, seed=5)
    assert np.allclose(noisy.column("train", "noise_std"), levels[a].astype(np.float32))
    assert noisy.fingerprint == digits_table.fingerprint  # labels and ids untouched
    again = feature_noise_table(digits_table, a, levels, seed=5)
    other = feature_noise_table(digits_table, a, levels, seed=6)
    img = lambda t: [r["bytes"] for r in t.splits["train"].with_format("arrow")["image"].to_pylist()]  # noqa: E731
    assert img(noisy) == img(again) and img(noisy) != img(other)
    # the mean absolute pixel change grows with the client's noise level
    src = np.stack([np.asarray(x) for x in digits_table.splits["train"]["image"]]).astype(float)
    out = np.stack([np.asarray(x) for x in noisy.splits["train"]["image"]]).astype(float)
    change = [np.abs(out[a == k] - src[a == k]).mean() for k in range(4)]
    assert all(x < y for x, y in zip(change, change[1:])), change


def test_label_noise_table_keeps_the_clean_labels(digits_table):
    from hetbench.builders.noise_tables import label_noise_table

    n = digits_table.num_rows("train")
    a = np.arange(n) % 3
    noisy = label_noise_table(digits_table, a, np.array([0.0, 0.5, 1.0]), "pair", seed=0)
    clean = noisy.column("train", "clean_label")
    assert np.array_equal(clean, digits_table.labels["train"])
    flipped = noisy.labels["train"] != clean
    assert not flipped[a == 0].any() and flipped[a == 2].all()
    assert np.array_equal(noisy.labels["train"][flipped], (clean[flipped] + 1) % 10)
    assert np.array_equal(noisy.column("train", "label"), noisy.labels["train"])


# ---- end to end ----------------------------------------------------------------------------------
def _client_rows(ds):
    return np.array(ds["client_id"]), np.array(ds["label"])


@pytest.mark.slow
def test_feature_noise_cli_builds_loads_and_verifies(tmp_path, run_cli, digits_table):
    import datasets

    out = tmp_path / "fn"
    code, stdout, err = run_cli("partition", "feature-noise", "--sigma", "0.3", "--clients", "3", "--seed", "1", "--out", out)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["feature_noise"]["sigma_k"] == [0.1, 0.2, 0.3]
    assert (out / "plots" / "feature_noise.png").stat().st_size > 0
    ds = datasets.load_dataset(str(out))
    src = {sid: i for i, sid in enumerate(digits_table.ids("train"))}
    for split in ("train", "test"):  # digits has no test split: the client test rows carry the noise too
        d = ds[split]
        cid = np.array(d["client_id"])
        assert np.allclose(d["noise_std"], np.array([0.1, 0.2, 0.3], np.float32)[cid])
        for r in (0, len(d) - 1):
            row = d[r]
            clean = np.asarray(digits_table.splits["train"][int(src[row["sample_id"]])]["image"])
            assert not np.array_equal(np.asarray(row["image"]), clean)
    code, stdout, err = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), (stdout, err)
    # deterministic: the same command gives the same shards
    out2 = tmp_path / "fn2"
    assert run_cli("partition", "feature-noise", "--sigma", "0.3", "--clients", "3", "--seed", "1", "--out", out2, "-q")[0] == 0
    m1, m2 = (json.loads((o / "hetbench.json").read_text()) for o in (out, out2))
    assert m1["splits"]["train"]["column_sha256"] == m2["splits"]["train"]["column_sha256"]


@pytest.mark.slow
def test_feature_noise_shared_test_rows_stay_clean(tmp_path, run_cli):
    """A source test split kept whole (global policy) is not noised."""
    import datasets

    from hetbench.sources import load_table

    src = load_table("builtin:digits").splits["train"]
    parts = tmp_path / "src"
    parts.mkdir()
    src.select(range(1500)).to_parquet(str(parts / "train.parquet"))
    src.select(range(1500, 1797)).to_parquet(str(parts / "test.parquet"))
    out = tmp_path / "fn"
    code, _, err = run_cli("partition", "feature-noise", "--dataset", parts, "--sigma", "0.5", "--clients", "2", "-q", "--out", out)
    assert code == 0, err
    test = datasets.load_dataset(str(out))["test"]
    assert set(test["client_id"]) == {-1} and set(test["noise_std"]) == {0.0}
    assert [np.asarray(x).tolist() for x in test["image"][:5]] == [np.asarray(x).tolist() for x in src.select(range(1500, 1505))["image"]]
    assert "shared test rows are clean" in json.loads((out / "report.json").read_text())["feature_noise"]["noised_rows"]
    code, stdout, err = run_cli("verify", out)
    assert code == 0, (stdout, err)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["uniform", "pair"])
def test_label_noise_cli_builds_loads_and_verifies(tmp_path, run_cli, kind):
    import datasets

    out = tmp_path / "ln"
    code, stdout, err = run_cli("partition", "label-noise", "--rate", "0.4", "--kind", kind, "--clients", "4",
                                "--per-client", "--out", out)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())["label_noise"]
    assert report["rates"] == [0.1, 0.2, 0.3, 0.4] and report["kind"] == kind
    ds = datasets.load_dataset(str(out))
    for split in ("train", "test"):
        d = ds[split]
        cid, label, clean = np.array(d["client_id"]), np.array(d["label"]), np.array(d["clean_label"])
        frac = [float((label[cid == k] != clean[cid == k]).mean()) for k in range(4)]
        assert frac == pytest.approx(report["flip_fraction"][split], abs=1e-6)
        if kind == "pair":
            f = label != clean
            assert np.array_equal(label[f], (clean[f] + 1) % 10)
    n = np.bincount(np.array(ds["train"]["client_id"]), minlength=4)
    for k, (f, r) in enumerate(zip(report["flip_fraction"]["train"], report["rates"])):
        assert abs(f - r) <= 6 * math.sqrt(r * (1 - r) / n[k]) + 1 / n[k]
    code, stdout, err = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), (stdout, err)


def test_label_noise_single_class_is_refused(tmp_path, run_cli):
    one = tmp_path / "one.csv"
    one.write_text("x,label\n" + "".join(f"{i},7\n" for i in range(30)))
    out = tmp_path / "out"
    code, _, err = run_cli("partition", "label-noise", "--dataset", one, "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "at least 2 classes" in err, err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_verify_notices_a_noised_label_changed_by_hand(tmp_path, run_cli):
    import pyarrow.parquet as pq

    out = tmp_path / "ln"
    assert run_cli("partition", "label-noise", "--rate", "0.2", "--clients", "3", "-q", "--out", out)[0] == 0
    shard = next((out / "data").glob("train-*.parquet"))
    t = pq.read_table(shard)
    labels = t.column("label").to_pylist()
    labels[0] = (labels[0] + 1) % 10
    pq.write_table(t.set_column(t.column_names.index("label"), "label", __import__("pyarrow").array(labels, t.schema.field("label").type)), shard)
    code, stdout, err = run_cli("verify", out)
    assert code == 1, (stdout, err)
