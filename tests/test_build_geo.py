"""End to end: hetbench build geo / users, on the generated default and on the real BirdCLEF table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

BIRDCLEF = Path(__file__).resolve().parents[2] / "shared" / "data" / "geo" / "birdclef2022_train_metadata.csv"


@pytest.mark.slow
def test_geo_embedded_default_loads_and_verifies(tmp_path, run_cli):
    import datasets
    import s2sphere

    out = tmp_path / "geo"
    code, stdout, err = run_cli("build", "geo", "--nmax", "1000", "--out", out)
    assert code == 0, err
    assert "S2-cell clients" in stdout
    ds = datasets.load_dataset(str(out))
    train = ds["train"]
    for col in ("s2_cell", "lat", "lon", "client_id", "label"):
        assert col in train.column_names
    report = json.loads((out / "report.json").read_text())
    assert max(report["client_sizes"]) <= 1000
    names = report["client_names"]
    for row in train.select(range(0, len(train), max(1, len(train) // 200))):
        cell = s2sphere.CellId.from_token(row["s2_cell"])
        assert names[row["client_id"]] == row["s2_cell"]
        assert cell.contains(s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(row["lat"], row["lon"])))
    assert (out / "plots" / "client_map.png").is_file()
    assert report["geo"]["cells"] == report["num_clients"]
    assert run_cli("verify", out)[0] == 0


@pytest.mark.slow
def test_users_embedded_default_is_user_disjoint(tmp_path, run_cli):
    import datasets

    out = tmp_path / "users"
    code, _, err = run_cli("build", "users", "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    train_users, test_users = set(ds["train"]["user_id"]), set(ds["test"]["user_id"])
    assert train_users and test_users and not train_users & test_users
    assert set(ds["test"]["client_id"]) == {-1}
    assert set(ds["test"]["label"]) <= set(ds["train"]["label"])
    report = json.loads((out / "report.json").read_text())
    assert report["users"]["users"] == report["num_clients"] == len(train_users)
    assert run_cli("verify", out)[0] == 0


@pytest.mark.slow
def test_geo_and_users_on_birdclef(tmp_path, run_cli):
    import datasets

    if not BIRDCLEF.is_file():
        pytest.skip("the shared BirdCLEF table (../shared/data/geo) is not present")
    out = tmp_path / "bird-geo"
    code, _, err = run_cli("build", "geo", "--metadata", BIRDCLEF, "--label-col", "primary_label", "--nmax", "500",
                           "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert max(report["client_sizes"]) <= 500 and report["num_samples"] > 10_000
    assert run_cli("verify", out)[0] == 0
    out = tmp_path / "bird-users"
    code, _, err = run_cli("build", "users", "--metadata", BIRDCLEF, "--label-col", "primary_label", "--user-col", "author",
                           "--filters", "landmarks", "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    users = set(ds["train"]["user_id"]) | set(ds["test"]["user_id"])
    assert len(users) == 82  # SOURCES.md: the Landmarks fixed point keeps 82 users, 66 species, 7,898 rows
    assert len(ds["train"]) + len(ds["test"]) <= 7898
    assert not set(ds["train"]["user_id"]) & set(ds["test"]["user_id"])


BAD = {
    "nmin above nmax": (["geo", "--nmax", "100", "--nmin", "200"], "nmin"),
    "missing column": (["geo", "--lat-col", "lat_deg"], "lat_deg"),
    "filters empty everything": (["users", "--min-samples", "100000"], ""),
    "missing user column": (["users", "--user-col", "nobody"], "nobody"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_geo_users_bad_input(case, tmp_path, run_cli):
    args, needle = BAD[case]
    code, _, err = run_cli("build", *args, "--out", tmp_path / "o", "-q")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert not (tmp_path / "o").exists()


def test_generated_observations_are_heavy_tailed_and_local():
    from hetbench.geo_synth import generate_observations

    cols = generate_observations(num_observations=5000, seed=1)
    _, per_observer = np.unique(cols["observer"], return_counts=True)
    assert per_observer.max() > 20 * np.median(per_observer)  # heavy-tailed activity
    assert np.all(np.abs(cols["latitude"]) <= 90) and np.all(np.abs(cols["longitude"]) <= 180)
    again = generate_observations(num_observations=5000, seed=1)
    assert all(np.array_equal(cols[k], again[k]) for k in cols)


LANDMARKS_TEST = BIRDCLEF.parent / "landmarks_user_160k_test.csv"


@pytest.mark.slow
def test_landmarks_recipe_imports_the_published_split_files(tmp_path, run_cli):
    """The import path on the real Landmarks-User-160k test manifest, with a train file in the
    published format (user_id,image_id,class) made here, since the real one is not shipped."""
    import datasets

    if not LANDMARKS_TEST.is_file():
        pytest.skip("the shared Landmarks-User-160k test manifest (../shared/data/geo) is not present")
    rng = np.random.default_rng(0)
    lines = ["user_id,image_id,class"] + [
        f"{u},{rng.integers(1 << 62):016x},{c}" for u, c in zip(rng.integers(0, 40, 3000), rng.integers(0, 2028, 3000))
    ]
    train = tmp_path / "federated_train.csv"
    train.write_text("\n".join(lines) + "\n")
    out = tmp_path / "lm"
    code, stdout, err = run_cli("build", "users", "--recipe", "landmarks-user-160k",
                                "--metadata", f"train={train},test={LANDMARKS_TEST}", "--out", out)
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    assert len(ds["test"]) == 19526 and set(ds["test"]["client_id"]) == {-1}
    report = json.loads((out / "report.json").read_text())
    assert report["users"]["users"] == 40 and report["users"]["test_images"] == 19526
    assert report["users"]["published"]["test_images"] == 19526 and report["users"]["filters"] == "none"
    assert run_cli("verify", out)[0] == 0
    code, _, err = run_cli("build", "users", "--recipe", "nope", "--metadata", train, "--out", tmp_path / "x")
    assert code == 2 and "landmarks-user-160k" in err
