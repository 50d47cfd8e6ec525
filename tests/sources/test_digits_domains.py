"""Digits domains builder (DapperFL-style MNIST / USPS / MNIST-M / SYN imitations, made offline)."""

from __future__ import annotations

import io

import cv2
import datasets
import numpy as np
import pytest
from PIL import Image

from hetbench.sources.digits_domains import (
    DESCRIPTION,
    DOMAINS,
    build_digits_domains,
    save_digits_domains,
)
from hetbench.errors import HetbenchError
from hetbench.partitioners.domains import DomainsPartitioner
from hetbench.sources import load_table

PER = 120


@pytest.fixture(scope="module")
def dd():
    return build_digits_domains(per_domain=PER, seed=0)


def _raw(ds):
    return ds.cast_column("image", datasets.Image(decode=False))


def _arrays(ds):
    return np.stack([np.asarray(Image.open(io.BytesIO(r["bytes"]))) for r in _raw(ds)["image"]])


def test_schema_and_counts(dd):
    assert set(dd) == {"train", "test"}
    assert DESCRIPTION and "\n" not in DESCRIPTION
    for split in dd.values():
        assert split.features["label"].names == [str(i) for i in range(10)]
        assert isinstance(split.features["image"], datasets.Image)
    n_test = round(0.2 * PER)
    for name in DOMAINS:
        train = [d for d in dd["train"]["domain"] if d == name]
        test = [d for d in dd["test"]["domain"] if d == name]
        assert len(train) == PER - n_test and len(test) == n_test
    assert set(dd["train"]["domain"]) == set(DOMAINS) == {"mnist", "usps", "mnistm", "syn"}


def test_labels_balanced_and_stratified(dd):
    for name in DOMAINS:
        labs = {}
        for s in ("train", "test"):
            doms = np.array(dd[s]["domain"])
            labs[s] = np.array(dd[s]["label"])[doms == name]
        allc = np.bincount(np.concatenate([labs["train"], labs["test"]]), minlength=10)
        assert allc.min() == allc.max() == PER // 10
        assert np.all(np.bincount(labs["test"], minlength=10) >= 1)  # stratified: every label in test
        assert len(set(labs["train"].tolist())) == 10


def test_images_rgb_28(dd):
    for split in dd.values():
        imgs = _arrays(split)
        assert imgs.shape == (split.num_rows, 28, 28, 3) and imgs.dtype == np.uint8
        assert split[0]["image"].mode == "RGB" and split[0]["image"].size == (28, 28)


def test_domains_differ(dd):
    imgs = _arrays(dd["train"])
    doms = np.array(dd["train"]["domain"])
    stats = {}
    for name in DOMAINS:
        x = imgs[doms == name]
        sat = np.stack([cv2.cvtColor(i, cv2.COLOR_RGB2HSV)[..., 1] for i in x]).mean()
        stats[name] = (x.mean(), sat)
    # grey domains have no saturation; colour domains have a lot
    assert stats["mnist"][1] == 0 and stats["usps"][1] == 0
    assert stats["mnistm"][1] > 50 and stats["syn"][1] > 50
    # dark MNIST background vs brighter, blurry, frame-filling USPS-like digits vs photos / flat colours
    assert stats["usps"][0] > stats["mnist"][0] + 20
    assert stats["mnistm"][0] > stats["mnist"][0] + 30 and stats["syn"][0] > stats["mnist"][0] + 30
    # SYN backgrounds are flat colours: low within-image variation away from the digit, unlike photos
    syn, mm = imgs[doms == "syn"].astype(float), imgs[doms == "mnistm"].astype(float)
    corner = (slice(0, 4), slice(0, 4))
    assert syn[:, corner[0], corner[1]].std(axis=(1, 2)).mean() < mm[:, corner[0], corner[1]].std(axis=(1, 2)).mean()


def test_deterministic_and_seed_dependent(dd):
    again = build_digits_domains(per_domain=PER, seed=0)
    other = build_digits_domains(per_domain=PER, seed=1)
    for s in ("train", "test"):
        assert again[s]["sample_id"] == dd[s]["sample_id"]
        assert [r["bytes"] for r in _raw(again[s])["image"]] == [r["bytes"] for r in _raw(dd[s])["image"]]
        assert again[s]["label"] == dd[s]["label"]
    assert [r["bytes"] for r in _raw(other["train"])["image"]] != [r["bytes"] for r in _raw(dd["train"])["image"]]


def test_ids_unique_and_splits_disjoint(dd):
    train, test = dd["train"]["sample_id"], dd["test"]["sample_id"]
    assert len(set(train)) == len(train) and len(set(test)) == len(test)
    assert not set(train) & set(test)
    assert len(set(train) | set(test)) == 4 * PER


def test_domains_partitioner(dd):
    table = load_table(dd)
    p = DomainsPartitioner(num_clients=8, fraction=0.05).partition(table, seed=0)
    doms = np.asarray(table.splits["train"]["domain"], dtype=object)
    covered = set()
    for name, idx in zip(p.client_names, p.client_indices()):
        assert idx.size == round(0.05 * (PER - round(0.2 * PER)))
        (dom,) = set(doms[idx])
        assert dom == name.rsplit("/", 1)[0]
        covered.add(dom)
    assert covered == set(DOMAINS) and p.num_clients == 8


def test_save_and_bad_input(tmp_path):
    saved = save_digits_domains(tmp_path / "dd", per_domain=20, seed=3)
    loaded = datasets.load_from_disk(str(tmp_path / "dd"))
    assert loaded["train"]["sample_id"] == saved["train"]["sample_id"]
    with pytest.raises(HetbenchError):
        build_digits_domains(per_domain=5)
