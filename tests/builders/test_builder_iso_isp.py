"""End to end: hetbench build iso-isp / devices, loaded back with datasets.load_dataset."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

RAW = Path(__file__).resolve().parents[3] / "shared" / "data" / "raw"
SMALL = ("--crops-per-photo", "2", "--crop-size", "96", "--size", "48", "-q")


@pytest.mark.slow
def test_iso_isp_embedded_default_loads_and_verifies(tmp_path, run_cli):
    import datasets

    out = tmp_path / "iso"
    code, stdout, err = run_cli("build", "iso-isp", "--stages", "wb,tone", *SMALL[:-1], "--out", out)  # not -q: the summary
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    train, test = ds["train"], ds["test"]
    for col in ("image", "label", "client_id", "device", "isp", "capture_id"):
        assert col in train.column_names
    devices = {"baseline", "wb=none", "wb=white-patch", "tone=none", "tone=srgb-gamma+equalize"}
    assert set(train["device"]) == devices and set(test["device"]) == devices
    assert not set(train["capture_id"]) & set(test["capture_id"])  # split by capture
    assert set(test["client_id"]) == {-1}
    assert train[0]["image"].size == (48, 48)
    report = json.loads((out / "report.json").read_text())
    assert set(report["devices"]) == devices
    # every device is tested on every held-out capture: round(0.2 x 14) = 3, and the summary says so
    assert report["captures"] == {"used": 14, "train": 11, "test": 3}
    assert Counter(test["device"]) == dict.fromkeys(devices, 3)
    assert "15 test images; test images per device: 3" in stdout
    assert len(report["device_distance"]["matrix"]) == 5
    assert report["devices"]["wb=none"]["image_stats"]["cast_a"] < report["devices"]["baseline"]["image_stats"]["cast_a"]
    for plot in ("contact_sheet.png", "device_distance.png", "device_image_stats.png", "label_distribution_heatmap.png"):
        assert (out / "plots" / plot).is_file()
    # each client holds one device's renders
    dev_by_client = {}
    for c, d in zip(train["client_id"], train["device"]):
        dev_by_client.setdefault(c, set()).add(d)
    assert all(len(v) == 1 for v in dev_by_client.values())
    code, stdout, _ = run_cli("verify", out)
    assert code == 0, stdout


@pytest.mark.slow
def test_same_manifest_whatever_num_proc(tmp_path, run_cli):
    args = ("build", "iso-isp", "--stages", "compress", *SMALL)
    assert run_cli(*args, "--num-proc", "1", "--out", tmp_path / "a")[0] == 0
    assert run_cli(*args, "--num-proc", "2", "--out", tmp_path / "b")[0] == 0
    assert (tmp_path / "a" / "hetbench.json").read_bytes() == (tmp_path / "b" / "hetbench.json").read_bytes()


@pytest.mark.slow
def test_iso_isp_on_real_raw_captures_skips_what_it_cannot_read(tmp_path, run_cli):
    import datasets

    if not RAW.is_dir():
        pytest.skip("the shared real RAW captures (../shared/data/raw) are not present")
    raw_dir = tmp_path / "raws"
    raw_dir.mkdir()
    for f in RAW.iterdir():
        if f.suffix.lower() in (".dng", ".kdc"):
            shutil.copy(f, raw_dir / f.name)
    (raw_dir / "truncated.dng").write_bytes((RAW / "canon_eos550d_magiclantern_colorchecker.dng").read_bytes()[:20_000])
    from raw_fixtures import malformed_dng_bytes

    (raw_dir / "singular-matrix.dng").write_bytes(malformed_dng_bytes())
    out = tmp_path / "real"
    code, stdout, err = run_cli("build", "iso-isp", "--stages", "wb", "--raw-dir", raw_dir, "--size", "64", "--out", out)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    skipped = {Path(s["file"]).name: s["reason"] for s in report["skipped"]}
    assert "canon_eos6d_linearraw_lossy.dng" in skipped and "truncated.dng" in skipped
    assert skipped["singular-matrix.dng"].startswith("malformed colour matrices: a ColorMatrix is singular")
    assert report["num_skipped"] == 3
    first = report["skipped"][0]  # the summary names the first two with their reasons
    assert f"3 captures skipped: {first['file']} ({first['reason']})" in stdout
    assert "and 1 more (report.json lists every one)" in stdout
    ds = datasets.load_dataset(str(out))
    assert len(ds["train"]) + len(ds["test"]) == 5 * 3  # 5 usable captures x 3 wb variants


@pytest.mark.slow
def test_devices_by_market_share(tmp_path, run_cli):
    import datasets

    out = tmp_path / "dev"
    code, _, err = run_cli("build", "devices", "--clients", "30", *SMALL, "--out", out)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    devs = report["devices"]
    assert len(devs) == 9
    clients = {d: v["clients"] for d, v in devs.items()}
    assert sum(clients.values()) == 30 and min(clients.values()) >= 1
    assert max(clients, key=clients.get) == max(devs, key=lambda d: devs[d]["weight"])
    train = datasets.load_dataset(str(out), split="train")
    assert set(train["device"]) == set(devs)
    assert len({i for i in train["isp"]}) > 1  # phones have different ISPs


BAD = {
    "unknown stage": (["iso-isp", "--stages", "wb,vignette"], "unknown ISP stage"),
    "size out of range": (["iso-isp", "--size", "5"], "--size"),
    "empty raw dir": (["iso-isp", "--raw-dir", "{empty}"], "no RAW files"),
    "missing raw dir": (["iso-isp", "--raw-dir", "{missing}"], "not a folder"),
    "labels name missing files": (["iso-isp", "--raw-dir", "{raws}", "--labels", "{labels}"], "not in --raw-dir"),
    "too few clients": (["devices", "--clients", "3"], "fewer than the 9 devices"),
    "unknown profile set": (["devices", "--profiles", "nokia42"], "nokia42"),
    "unknown lens-shading model": (["iso-isp", "--raw-dir", "{raws}", "--lens-shading", "radial:0.5"], "choose dng, none or cos4:C"),
    "lens shading without RAWs": (["devices", "--lens-shading", "cos4:0.5"], "take their lens shading from the device profiles"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_build_bad_input(case, tmp_path, run_cli):
    (tmp_path / "empty").mkdir()
    raws = tmp_path / "raws"
    raws.mkdir()
    (raws / "a.dng").write_bytes(b"not really a raw")
    labels = tmp_path / "labels.csv"
    labels.write_text("file,label\na.dng,cat\nb.dng,dog\n")
    fmt = {"empty": tmp_path / "empty", "missing": tmp_path / "nope", "raws": raws, "labels": labels}
    args, needle = BAD[case]
    out = tmp_path / "out"
    code, _, err = run_cli("build", *[a.format(**fmt) for a in args], "--out", out, "-q")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert not out.exists()


def test_identical_repeated_label_rows_are_accepted(tmp_path):
    from hetbench.builders.captures import read_labels

    for n in "ab":
        (tmp_path / f"{n}.dng").write_bytes(b"x")
    labels = tmp_path / "labels.csv"
    labels.write_text("file,label\na.dng,cat\nb.dng,dog\n./a.dng,cat\n")
    files = [str(tmp_path / "a.dng"), str(tmp_path / "b.dng")]
    assert list(read_labels(str(labels), files, str(tmp_path)).values()) == ["cat", "dog"]


@pytest.mark.parametrize("weights", [{"baseline": 0, "wb=none": 1, "wb=white-patch": 2},
                                     {"baseline": 1e308, "wb=none": 1, "wb=white-patch": 0.5}])
def test_zero_and_large_finite_device_weights_are_accepted(tmp_path, weights):
    import yaml

    from hetbench.builders.captures import read_device_weights

    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(weights))
    assert read_device_weights(str(path), list(weights)) == {k: float(v) for k, v in weights.items()}


def test_too_many_clients_for_the_training_captures_fails_after_rendering():
    """Before rendering every capture counts; after it only those kept for training."""
    from hetbench.builders.iso_isp import prepare_iso_isp
    from hetbench.errors import HetbenchError

    # 7 embedded captures, 3 devices: 21 clients give each device 7, one per capture, but some
    # captures are held out for testing
    with pytest.raises(HetbenchError, match=r"clients 21 is too many: .* only \d of the captures are for training"):
        prepare_iso_isp("wb", size=16, clients=21, crops_per_photo=1, crop_size=64, quiet=True)


class _Rendered(Exception):
    """Raised in place of the table: the test has what it needs before any rendering."""


@pytest.mark.parametrize("family", ["iso-isp", "devices"])
def test_the_embedded_default_tests_every_device_on_at_least_100_images(family, tmp_path, run_cli, monkeypatch):
    """Issue 15: with the CLI's defaults every device is tested on >= 100 images of the 7 scenes.
    The captures the build would render and its own hold-out are counted; nothing is rendered."""
    import hetbench.builders.iso_isp as iso_isp
    from hetbench.builders.device_split import held_out_captures
    from hetbench.isp.jobs import JobResult

    seen = {}

    def no_rendering(jobs, *args, **kwargs):
        seen["jobs"] = jobs
        return [JobResult(j.index, j.capture_id, j.label, [], []) for j in jobs]

    def count(jobs, results, devices, isp_of, test_fraction, seed, *args):
        seen.update(devices=devices, held=held_out_captures([r.label for r in results], test_fraction, seed))
        raise _Rendered

    monkeypatch.setattr(iso_isp, "run_jobs", no_rendering)
    monkeypatch.setattr(iso_isp, "rendered_table", count)
    with pytest.raises(_Rendered):
        run_cli("build", family, "--out", tmp_path / "out", "-q")
    jobs, held = seen["jobs"], seen["held"]
    assert len({j.label for j in jobs}) == 7  # the seven scenes
    assert {j.source.image.shape for j in jobs} == {(256, 256, 3)}
    assert len(jobs) == 525 and int(held.sum()) >= 100  # 105: every device renders every held-out capture
    assert {j.label for j, h in zip(jobs, held) if h} == {j.label for j in jobs}  # every scene is tested
    assert len(seen["devices"]) == (5 if family == "iso-isp" else 9)


def test_a_recipe_keeps_its_crops_and_one_that_records_none_means_the_old_default():
    """``hetbench verify`` re-runs a recipe as it was made: a new default never changes an old build."""
    from hetbench.builders.captures import rebuild_from_recipe

    seen = []

    class Prepared:
        def build(self):
            return "split"

    def prepare(**params):
        seen.append((params["crops_per_photo"], params["crop_size"]))
        return Prepared()

    for params in ({"stages": "wb", "crops_per_photo": 1, "crop_size": 96}, {"stages": "wb"},
                   {"stages": "wb", "raw_dir": "raws", "crops_per_photo": None, "crop_size": None}):
        assert rebuild_from_recipe(prepare, {"recipe": {"partition": {"seed": 0, "params": params}}}) == "split"
    assert seen == [(1, 96), (8, 384), (8, 384)]


def test_num_proc_is_capped_at_the_cores_with_a_note(monkeypatch, capsys):
    import hetbench.isp.jobs as jobs

    monkeypatch.setattr(jobs.os, "cpu_count", lambda: 2)
    assert jobs.cap_num_proc(1000, 50) == 2
    assert capsys.readouterr().err.strip() == "hetbench: note: --num-proc 1000 is more than the 2 CPU cores; using 2"
    assert jobs.cap_num_proc(1000, 50, quiet=True) == 2 and capsys.readouterr().err == ""
    assert jobs.cap_num_proc(2, 1) == 1  # never more workers than jobs
    with pytest.raises(jobs.HetbenchError, match="at least 1"):
        jobs.cap_num_proc(0, 5)


def test_a_raw_folder_built_with_the_cos4_model_records_it_verifies_and_skips_a_bad_opcode(tmp_path, run_cli):
    """``--lens-shading cos4:C`` flattens the vignetting of RAWs without their own correction, is part
    of the recipe (``hetbench verify`` rebuilds the same bytes), and a file with a malformed
    FixVignetteRadial is skipped, counted and listed while the build goes on."""
    import struct

    import datasets
    import numpy as np

    from hetbench.isp.capture import RawCapture
    from hetbench.isp.dng import write_dng
    from hetbench.isp.lens_shading import cos4_vignette
    from raw_fixtures import CM_D65

    raws = tmp_path / "raws"
    raws.mkdir()
    falloff = 1.0 / cos4_vignette(0.4).gain(96, 96).astype(np.float64)
    for i in range(4):
        mosaic = np.rint(64 + (600 + 150 * i) * falloff).astype(np.uint16)
        write_dng(RawCapture(mosaic, "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45)), raws / f"flat{i}.dng")
    bad = struct.pack(">I", 1) + struct.pack(">IIII", 3, 0x01030000, 1, 8) + bytes(8)
    write_dng(RawCapture(np.full((96, 96), 700, np.uint16), "RGGB", 64, 4095, CM_D65, (0.6, 1.0, 0.45)),
              raws / "bad-vignette.dng", opcode_list2=bad)
    labels = tmp_path / "labels.csv"
    labels.write_text("file,label\n" + "".join(f"flat{i}.dng,{'ab'[i % 2]}\n" for i in range(4)) + "bad-vignette.dng,a\n")

    def corner_to_centre(folder):
        rows = datasets.load_dataset(str(folder), split="train")
        images = [np.asarray(r["image"].convert("L"), float) for r in rows if r["device"] == "baseline"]
        return float(np.mean([im[:6, :6].mean() / im[42:54, 42:54].mean() for im in images]))

    built = {}
    for shading in ("dng", "cos4:0.4"):
        out = tmp_path / shading.replace(":", "-")
        code, _, err = run_cli("build", "iso-isp", "--stages", "tone", "--raw-dir", raws, "--labels", labels,
                               "--lens-shading", shading, "--size", "96", "--test-fraction", "0.5", "--out", out, "-q")
        assert code == 0, err
        report = json.loads((out / "report.json").read_text())
        assert [Path(s["file"]).name for s in report["skipped"]] == ["bad-vignette.dng"]
        assert "FixVignetteRadial has 8 parameter bytes, not 56" in report["skipped"][0]["reason"]
        built[shading] = out
    assert corner_to_centre(built["dng"]) < 0.8  # the files' vignetting is left in
    assert corner_to_centre(built["cos4:0.4"]) > 0.95  # the model of their lens takes it out
    manifest = json.loads((built["cos4:0.4"] / "hetbench.json").read_text())
    assert manifest["recipe"]["build"]["params"]["lens_shading"] == "cos4:0.4"
    code, _, err = run_cli("verify", built["cos4:0.4"])
    assert code == 0, err


def test_a_device_cards_label_statistics_say_they_are_zero_by_construction(tmp_path, run_cli):
    """Every device renders the same captures: the card must not read as an IID split. A label split's
    card has no such sentence."""
    out = tmp_path / "iso"
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb", *SMALL, "--out", out)
    assert code == 0, err
    card = (out / "README.md").read_text()
    heterogeneity = card[card.index("## Heterogeneity"):card.index("| metric | value |")]
    assert "**What this split varies: its clients' devices.**" in heterogeneity
    assert "near zero by construction (EMD 0.0000" in heterogeneity and "device_distance" in heterogeneity
    code, _, err = run_cli("partition", "dirichlet", "--alpha", "0.1", "--clients", "5", "--out", tmp_path / "dir", "-q")
    assert code == 0, err
    assert "What this split varies" not in (tmp_path / "dir" / "README.md").read_text()
