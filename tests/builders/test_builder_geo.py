"""End to end: hetbench build geo / users, on the generated default and on the real BirdCLEF table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from hetbench.report import read_clients

BIRDCLEF = Path(__file__).resolve().parents[3] / "shared" / "data" / "geo" / "birdclef2022_train_metadata.csv"


@pytest.mark.slow
def test_geo_embedded_default_loads_and_verifies(tmp_path, run_cli):
    import datasets
    import s2sphere

    out = tmp_path / "geo"
    code, stdout, err = run_cli("build", "geo", "--nmax", "1000", "--out", out)
    assert code == 0, err
    assert "S2-cell clients" in stdout
    report = json.loads((out / "report.json").read_text())
    if any(v for d in report["dropped"].values() for k, v in d.items() if k != "held-out"):  # the reasons, in the line
        assert re.search(r"; [\d,]+ rows? dropped \(\S+ [\d,]+", stdout) and "report.json" not in stdout, stdout
    else:
        assert "dropped" not in stdout, stdout
    ds = datasets.load_dataset(str(out))
    train = ds["train"]
    for col in ("s2_cell", "lat", "lon", "client_id", "label"):
        assert col in train.column_names
    report = json.loads((out / "report.json").read_text())
    assert report["size_stats"]["max"] <= 1000
    names = read_clients(out)["client_name"].to_pylist()
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
    assert report["size_stats"]["max"] <= 500 and report["num_samples"] > 10_000
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
    "nmax zero": (["geo", "--nmax", "0"], "--nmax must be a positive integer"),
    "nmax negative": (["geo", "--nmax", "-5"], "--nmax must be a positive integer"),
    "nmin negative": (["geo", "--nmin", "-1"], "--nmin must be a non-negative integer"),
    "missing column": (["geo", "--lat-col", "lat_deg"], "lat_deg"),
    "filters empty everything": (["users", "--min-samples", "100000"], ""),
    "missing user column": (["users", "--user-col", "nobody"], "nobody"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_geo_users_bad_input(case, tmp_path, run_cli):
    args, needle = BAD[case]
    code, _, err = run_cli("build", *args, "--out", tmp_path / "o", "-q")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no output, no lock file, no temporary sibling


def test_nmax_zero_is_refused_by_the_library_too():
    from hetbench.builders.geo import prepare_geo
    from hetbench.errors import HetbenchError

    with pytest.raises(HetbenchError, match="positive"):
        prepare_geo(nmax=0)


def test_generated_observations_are_heavy_tailed_and_local():
    from hetbench.sources.observations import generate_observations

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


def _inat_files(tmp_path, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    images = [{"id": i, "file_name": f"train_val_images/x/{i}.jpg"} for i in range(n)]
    annotations = [{"id": i, "image_id": i, "category_id": int(c)} for i, c in enumerate(rng.integers(0, 8, n))]
    locations = [
        {"id": i, "lat": float(rng.normal(40, 10)), "lon": float(rng.normal(-100, 20)), "date": "2016-05-01",
         "user_id": int(rng.integers(0, 25))} if i % 50 else {"id": i, "lat": None, "lon": None, "date": None, "user_id": None}
        for i in range(n)
    ]
    (tmp_path / "train2017.json").write_text(json.dumps({"images": images, "annotations": annotations, "categories": []}))
    (tmp_path / "train2017_locations.json").write_text(json.dumps(locations))
    return f"inat2017:{tmp_path / 'train2017.json'}+{tmp_path / 'train2017_locations.json'}"


@pytest.mark.slow
def test_inaturalist_geo_recipe_from_the_competition_files(tmp_path, run_cli):
    """The files in the iNaturalist 2017 release format (small, made here): the recipe rebuilds
    the geo split; images without a location are dropped and counted."""
    spec = _inat_files(tmp_path)
    out = tmp_path / "geo"
    code, _, err = run_cli("build", "geo", "--recipe", "inaturalist-geo-100", "--metadata", spec, "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["size_stats"]["max"] <= 100
    assert report["dropped"]["train"]["missing-value"] == 60  # every 50th image has no location
    assert report["geo"]["published"]["clients"] == 3607
    assert run_cli("verify", out)[0] == 0
    out = tmp_path / "users"
    code, _, err = run_cli("build", "users", "--recipe", "inaturalist-user-120k", "--mode", "rebuild", "--metadata", spec,
                           "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    # class balancing: 8 classes (about 375 images each) subsampled to 100 each, then users held out
    assert report["users"]["filters"] == "inaturalist"
    assert report["num_samples"] + report["users"]["test_images"] <= 800
    assert max(report["class_counts"]) <= 100
    assert run_cli("verify", out)[0] == 0


def test_image_root_attaches_images_to_a_metadata_split(tmp_path, run_cli):
    import datasets
    from PIL import Image

    rng = np.random.default_rng(0)
    (tmp_path / "imgs").mkdir()
    lines = ["obs_id,species,observer,latitude,longitude,path"]
    for i in range(200):
        Image.fromarray(np.full((5, 5, 3), i % 255, np.uint8)).save(tmp_path / "imgs" / f"{i}.png")
        lines.append(f"o{i},s{i % 4},u{i % 20},{rng.normal(45, 2):.4f},{rng.normal(5, 2):.4f},{i}.png")
    (tmp_path / "obs.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "geo"
    code, _, err = run_cli("build", "geo", "--metadata", tmp_path / "obs.csv", "--label-col", "species", "--id-col", "obs_id",
                           "--nmax", "50", "--image-root", tmp_path / "imgs", "--image-col", "path", "--out", out, "-q")
    assert code == 0, err
    train = datasets.load_dataset(str(out), split="train")
    assert train[0]["image"].size == (5, 5)
    report = json.loads((out / "report.json").read_text())
    assert report["num_skipped"] == 0 and report["skipped"] == []
    (tmp_path / "imgs" / "7.png").unlink()  # a missing file is skipped and listed; the build goes on
    code, _, err = run_cli("build", "geo", "--metadata", tmp_path / "obs.csv", "--label-col", "species", "--nmax", "50",
                           "--image-root", tmp_path / "imgs", "--image-col", "path", "--out", tmp_path / "g2", "-q")
    assert code == 0, err
    report = json.loads((tmp_path / "g2" / "report.json").read_text())
    assert report["skipped"] == [{"file": "7.png", "split": "train", "reason": "missing under --image-root"}]


def test_users_classlabel_holds_only_the_classes_left_after_filtering(tmp_path, run_cli):
    """The Landmarks filters drop whole classes: the published ClassLabel, report and manifest name the
    classes that remain; the manifest keeps the source's classes beside them."""
    import datasets

    out = tmp_path / "users"
    assert run_cli("build", "users", "--out", out, "-q")[0] == 0
    manifest = json.loads((out / "hetbench.json").read_text())
    report = json.loads((out / "report.json").read_text())
    ds = datasets.load_dataset(str(out))
    present = sorted(set(ds["train"]["label"]) | set(ds["test"]["label"]))
    assert present == list(range(len(manifest["class_names"])))  # every class of the ClassLabel is used
    assert ds["train"].features["label"].names == manifest["class_names"]
    assert report["num_classes"] == len(manifest["class_names"]) < len(manifest["source_class_names"])
    assert set(manifest["class_names"]) <= set(manifest["source_class_names"])
    assert run_cli("verify", out)[0] == 0
