"""End to end: ``hetbench train`` on splits built by hetbench, read back with datasets.load_dataset,
then ``hetbench leaderboard`` over the results."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

FAST = ("--rounds", "2", "--clients-per-round", "3", "--batch-size", "16", "--threads", "1", "-q")



def _results(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def _without_timing(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc.pop("timing")
    return doc


def test_train_writes_one_result_per_algorithm_with_the_contract_fields(digits_split, tmp_path, run_cli):
    out = tmp_path / "res"
    code, stdout, err = run_cli("train", "--split", digits_split, "--algo", "central,fedavg,heteroswitch", *FAST,
                                "--out", out)
    assert code == 0, err
    files = _results(out)
    assert [f.name for f in files] == ["central-s0.json", "fedavg-s0.json", "heteroswitch-s0.json"]
    doc = json.loads((out / files[0].parent.name / "fedavg-s0.json").read_text())
    assert doc["kind"] == "hetbench-train-result"
    assert doc["split"]["num_clients"] == 6 and doc["split"]["group_by"] == "client_id"
    assert doc["config"]["rounds"] == 2 and doc["config"]["model"] == "digits-cnn"
    assert doc["curves"]["round"] == [1, 2] and len(doc["curves"]["train_loss"]) == 2
    f = doc["final"]
    for key in ("accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance",
                "client_accuracy_p10", "client_accuracy_p90", "relative_accuracy", "rounds_to_target"):
        assert key in f
    assert f["worst_group_accuracy"] <= f["accuracy"] <= 100
    assert f["client_accuracy_p10"] <= f["client_accuracy_p90"]
    central = json.loads((files[0]).read_text())["final"]["accuracy"]
    assert f["relative_accuracy"] == pytest.approx(f["accuracy"] / central, rel=1e-4)
    accs = [g["accuracy"] for g in doc["groups"].values()]
    assert min(accs) == pytest.approx(f["worst_group_accuracy"])
    assert np.var(accs) == pytest.approx(f["group_accuracy_variance"], abs=1e-3)
    assert doc["model"]["parameters"] > 0 and doc["model"]["macs"] > 0
    assert doc["timing"]["wall_time_s"] > 0


def test_same_seed_same_results_json_whatever_the_number_of_workers(digits_split, tmp_path, run_cli):
    no_threads = tuple(a for a in FAST if a not in ("--threads", "1"))  # torch's default thread count
    for name, workers in (("a", "1"), ("b", "3")):
        code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedavg,dapperfl,fedvc", *no_threads,
                               "--out", tmp_path / name, "--workers", workers)
        assert code == 0, err
    a, b = _results(tmp_path / "a"), _results(tmp_path / "b")
    assert [p.name for p in a] == [p.name for p in b]
    for pa, pb in zip(a, b):
        assert _without_timing(pa) == _without_timing(pb), pa.name
    code, _, _ = run_cli("train", "--split", digits_split, "--algo", "fedavg", *FAST, "--seed", "1", "--out",
                         tmp_path / "c")
    c = _without_timing(_results(tmp_path / "c")[0])
    assert c["curves"]["train_loss"] != _without_timing(a[1])["curves"]["train_loss"]


def test_eval_from_skips_only_the_test_passes_before_it(digits_split, tmp_path, run_cli):
    # the same training, evaluated every round or only from round 3: the evaluated rounds' numbers agree
    args = ("--split", digits_split, "--algo", "fedavg", "--rounds", "4", "--clients-per-round", "3",
            "--batch-size", "16", "--threads", "1", "-q")
    assert run_cli("train", *args, "--out", tmp_path / "every")[0] == 0
    assert run_cli("train", *args, "--eval-from", "3", "--out", tmp_path / "from3")[0] == 0
    every = json.loads(_results(tmp_path / "every")[0].read_text())
    late = json.loads(_results(tmp_path / "from3")[0].read_text())
    assert late["config"]["eval_from"] == 3 and every["config"]["eval_from"] == 1
    assert every["curves"]["round"] == [1, 2, 3, 4] and late["curves"]["round"] == [3, 4]
    for key in ("accuracy", "loss", "group_accuracy"):
        assert late["curves"][key] == (every["curves"][key][2:] if key != "group_accuracy"
                                       else {g: v[2:] for g, v in every["curves"][key].items()})
    assert late["curves"]["train_loss"] == every["curves"]["train_loss"]  # every round still trains
    assert late["final"]["last_k"]["rounds"] == [3, 4]


def test_non_default_hyper_parameters_name_the_file_and_overwrite_is_refused(digits_split, tmp_path, run_cli):
    out = tmp_path / "res"
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedprox", "--mu", "0.01", *FAST, "--out", out)
    assert code == 0, err
    assert [p.name for p in _results(out)] == ["fedprox-mu0.01-s0.json"]
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedprox", "--mu", "0.01", *FAST, "--out", out)
    assert code == 2 and "--overwrite" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedprox", "--mu", "0.01", *FAST, "--out", out,
                           "--overwrite")
    assert code == 0, err


def _write_split(folder: Path, with_client: bool = True, test_devices=("a", "b"), client_kind: str = "int32",
                 label_kind: str | None = None) -> Path:
    """A small image split written with the datasets library in the published layout."""
    import datasets
    from PIL import Image

    rng = np.random.default_rng(0)

    def rows(n, devices):
        d = {
            "image": [Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8)) for _ in range(n)],
            "label": rng.integers(0, 2, n).tolist(),
            "device": [devices[i % len(devices)] for i in range(n)],
        }
        if with_client:
            d["client_id"] = [i % 2 if client_kind != "string" else f"c{i % 2}" for i in range(n)]
        if label_kind == "string":
            d["label"] = [f"l{v}" for v in d["label"]]
        return d

    label = datasets.ClassLabel(names=["x", "y"]) if label_kind is None else datasets.Value(label_kind)
    feats = {"image": datasets.Image(), "label": label, "device": datasets.Value("string")}
    if with_client:
        feats["client_id"] = datasets.Value(client_kind)
    (folder / "data").mkdir(parents=True)
    datasets.disable_progress_bars()
    for split, n, devices in (("train", 12, ("a", "b")), ("test", 6, test_devices)):
        datasets.Dataset.from_dict(rows(n, devices), features=datasets.Features(feats)).to_parquet(
            str(folder / "data" / f"{split}-00000-of-00001.parquet"))
    datasets.enable_progress_bars()
    return folder


BAD = {
    "no client_id": ("nocid", {"with_client": False}, ["--algo", "fedavg"], 2, "client_id"),
    "group without test data": ("nogroup", {"test_devices": ("a",)}, ["--algo", "fedavg"], 2, "no test data"),
    "unknown algorithm": ("ok", {}, ["--algo", "fedavg,fedmagic"], 2, "unknown algorithm 'fedmagic'"),
    "unknown model": ("ok", {}, ["--model", "vgg16"], 2, "unknown model 'vgg16'"),
    "missing split": (None, {}, ["--algo", "fedavg"], 2, "not found"),
    "bad seed": ("ok", {}, ["--seed", "x"], 2, "--seed"),
    "learning rate not a number": ("ok", {}, ["--lr", "nan"], 2, "--lr must be a positive number"),
    "negative momentum": ("ok", {}, ["--momentum", "-0.5"], 2, "--momentum"),
    "eval-from zero": ("ok", {}, ["--eval-from", "0"], 2, "--eval-from must be a positive number (got 0)"),
    "eval-from past the last round": ("ok", {}, ["--rounds", "3", "--eval-from", "4"], 2,
                                      "--eval-from must be at most --rounds (3; got 4)"),
    "EMA factor out of range": ("ok", {}, ["--algo", "heteroswitch", "--ema-alpha", "1.5"], 2, "--ema-alpha must be in"),
    "loss becomes NaN": ("ok", {}, ["--lr", "1e12", "--rounds", "3"], 3, "diverged"),
    "negative seed": ("ok", {}, ["--seed", "-1"], 2, "--seed must be a non-negative integer (got -1)"),
    "seed beyond 64 bits": ("ok", {}, ["--seed", str(2**64)], 2, "--seed must be below 2**64"),
    "image size too large": ("ok", {}, ["--image-size", "100000"], 2, "--image-size must be an integer between 8 and 1024"),
    "string client ids": ("strcid", {"client_kind": "string"}, ["--algo", "fedavg"], 2,
                          "'client_id' column of string, not integers"),
    "string labels": ("strlabel", {"label_kind": "string"}, ["--algo", "fedavg"], 2, "'label' column of string"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_train_bad_input_is_one_line(case, tmp_path, run_cli):
    folder, kwargs, args, exit_code, needle = BAD[case]
    split = _write_split(tmp_path / folder, **kwargs) if folder else tmp_path / "missing"
    out = tmp_path / "res"
    code, _, err = run_cli("train", "--split", split, *args, "--threads", "1", "-q", "--out", out)
    assert code == exit_code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err
    assert not out.exists() or not _results(out)  # nothing half-written
    if case == "loss becomes NaN":
        import re

        assert re.search(r"in round \d+, client \d+", lines[0]), lines[0]


@pytest.mark.slow
def test_train_on_iso_isp_and_digits_domains_then_leaderboard(tmp_path, run_cli):
    iso = tmp_path / "iso"
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb,tone", "--crops-per-photo", "2", "--crop-size", "96",
                           "--size", "16", "-q", "--out", iso)
    assert code == 0, err
    dom = tmp_path / "dom"
    code, _, err = run_cli("build", "digits-domains", "--fraction", "0.05", "-q", "--out", dom)
    assert code == 0, err
    res = tmp_path / "res"
    for split, algos, extra in (
            (iso, "central,fedavg,fedavgm,fedprox,scaffold,qfedavg,fedir,fedvc,heteroswitch,dapperfl", ("--vc-size", "32")),
            (dom, "central,fedavg,dapperfl", ())):
        code, _, err = run_cli("train", "--split", split, "--algo", algos, "--rounds", "2", "--batch-size", "16",
                               *extra, "--seed", "0,1", "--image-size", "16", "--threads", "1", "-q",
                               "--out", res)
        assert code == 0, err
    iso_doc = json.loads(next(res.rglob("heteroswitch-s0.json")).read_text())
    assert iso_doc["split"]["group_by"] == "device" and len(iso_doc["groups"]) == 5
    assert iso_doc["config"]["model"] == "digits-cnn" and iso_doc["split"]["image_size"] == 16
    dom_doc = json.loads(next(res.rglob("dapperfl-s1.json")).read_text())
    assert dom_doc["split"]["group_by"] == "domain" and set(dom_doc["groups"]) == {"mnist", "mnistm", "syn", "usps"}
    ratios, params = dom_doc["clients"]["pruning_ratio"], dom_doc["clients"]["parameters"]
    assert params[ratios.index(min(ratios))] > params[ratios.index(max(ratios))]  # the pruned model is smaller
    board = tmp_path / "board"
    code, _, err = run_cli("leaderboard", res, "--out", board, "-q")
    assert code == 0, err
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.html"):
        assert (board / name).is_file()
    md = (board / "leaderboard.md").read_text()
    assert "heteroswitch" in md and "dapperfl" in md
    html = (board / "leaderboard.html").read_text()
    assert html.count('<table class="leaderboard"') == 4  # per split the ranked rows, then central (a reference)
    assert html.count('data-algorithm="') == 13 and html.count('data-algorithm="central" data-role="reference"') == 2
    shutil.rmtree(res)


# ---- issue 12: group protocols, stable metrics, --skip-existing / --resume from the command line ----


@pytest.fixture(scope="module")
def iso_isp(tmp_path_factory):
    """A tiny iso-isp build: one device (and one client) per white-balance variant, 16 px."""
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("split") / "iso"
    try:
        main(["build", "iso-isp", "--stages", "wb", "--size", "16", "--crops-per-photo", "1", "--crop-size", "96",
              "-q", "--out", str(out)])
    except SystemExit as exc:
        assert not exc.code
    return out


@pytest.fixture(scope="module")
def digits_domains(tmp_path_factory):
    from hetbench.cli.main import main

    out = tmp_path_factory.mktemp("split") / "domains"
    try:
        main(["build", "digits-domains", "--fraction", "0.05", "-q", "--out", str(out)])
    except SystemExit as exc:
        assert not exc.code
    return out


def test_heteroswitch_fig3_train_on_the_baseline_test_on_every_variant(iso_isp, tmp_path, run_cli, monkeypatch):
    out = tmp_path / "res"
    monkeypatch.setenv("COLUMNS", "300")  # the whole summary table on one line per run
    code, stdout, err = run_cli("train", "--split", iso_isp, "--train-groups", "baseline", "--algo", "central,fedavg",
                                "--rounds", "3", "--batch-size", "16", "--threads", "1", "--last-k", "2", "--out", out)
    assert code == 0, err
    names = [p.name for p in _results(out)]
    assert names == ["central-train_baseline-s0.json", "fedavg-train_baseline-s0.json"]
    doc = json.loads(_results(out)[1].read_text())
    assert doc["config"]["train_groups"] == ["baseline"] and doc["config"]["last_k"] == 2
    assert doc["split"]["num_clients"] == 1  # the baseline device's client only
    groups = doc["groups"]
    assert sorted(groups) == ["baseline", "wb=none", "wb=white-patch"]
    assert [g for g, v in groups.items() if v["trained_on"]] == ["baseline"]
    for g, v in groups.items():
        assert v["drop"] == pytest.approx(groups["baseline"]["accuracy"] - v["accuracy"], abs=1e-3)
    f = doc["final"]
    assert f["last_k"]["accuracy"] == pytest.approx(np.mean(doc["curves"]["accuracy"][-2:]), abs=1e-3)
    # the summary: the mean of the last k, and the protocol's columns
    assert "mean last 2" in stdout and "trained-on" in stdout and "train_baseline" in stdout


def test_test_groups_and_leave_one_domain_out(digits_domains, tmp_path, run_cli):
    out = tmp_path / "res"
    fast = ("--rounds", "2", "--clients-per-round", "3", "--batch-size", "16", "--threads", "1", "-q", "--out", out)
    code, _, err = run_cli("train", "--split", digits_domains, "--algo", "fedavg", "--test-groups", "usps,mnist", *fast)
    assert code == 0, err
    (only,) = _results(out)
    assert only.name == "fedavg-test_mnist+usps-s0.json"
    assert list(json.loads(only.read_text())["groups"]) == ["mnist", "usps"]
    code, _, err = run_cli("train", "--split", digits_domains, "--algo", "fedavg", "--protocol", "leave-one-group-out",
                           *fast)
    assert code == 0, err
    logo = [p for p in _results(out) if "logo_" in p.name]
    assert [p.name for p in logo] == [f"fedavg-logo_{d}-s0.json" for d in ("mnist", "mnistm", "syn", "usps")]
    for p in logo:
        doc = json.loads(p.read_text())
        held = p.name.split("logo_")[1][: -len("-s0.json")]
        assert {g for g, v in doc["groups"].items() if not v["trained_on"]} == {held}
        assert len(doc["groups"]) == 4 and doc["split"]["num_clients"] < 12  # without the held-out domain's clients


def test_cross_group_trains_each_group_alone_and_the_leaderboard_draws_the_matrix(digits_domains, tmp_path, run_cli):
    """Issue 30, item 4: one training per domain on its clients only, tested on every domain; the leaderboard
    gathers them into one domain x domain matrix (Markdown, HTML and PNG) whose cells are the runs' numbers."""
    out = tmp_path / "res"
    code, _, err = run_cli("train", "--split", digits_domains, "--algo", "fedavg", "--protocol", "cross-group",
                           "--rounds", "2", "--clients-per-round", "3", "--batch-size", "16", "--threads", "1",
                           "--seed", "0,1", "-q", "--out", out)
    assert code == 0, err
    domains = ("mnist", "mnistm", "syn", "usps")
    assert [p.name for p in _results(out)] == [f"fedavg-train_{d}-s{s}.json" for d in domains for s in (0, 1)]
    runs = {p.name: json.loads(p.read_text()) for p in _results(out)}
    for d in domains:
        doc = runs[f"fedavg-train_{d}-s0.json"]
        assert {g for g, v in doc["groups"].items() if v["trained_on"]} == {d} and len(doc["groups"]) == 4
    board = tmp_path / "board"
    code, _, err = run_cli("leaderboard", out, "--out", board, "--statistic", "final")
    assert code == 0, err
    md = (board / "leaderboard.md").read_text()
    section = md[md.index("### Cross-group accuracy: fedavg"):]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:5]
    assert [r.split(" | ")[0][2:].split(" (")[0] for r in rows] == list(domains)
    usps_on_mnist = [runs[f"fedavg-train_usps-s{s}.json"]["groups"]["mnist"]["accuracy"] for s in (0, 1)]
    assert f"{np.mean(usps_on_mnist):.1f}" in rows[3].split(" | ")[1]  # row usps, column mnist: the runs' mean
    assert "### Trained on" not in md  # the runs are one matrix, not one table each
    html = (board / "leaderboard.html").read_text()
    assert '<table class="groups cross">' in html and "Cross-group accuracy: fedavg" in html
    # the diagonal (in-group accuracy) is bold in every form, as in the PNG, and nothing else is
    for i, row in enumerate(rows):
        cells = row.strip("| ").split(" | ")[1:]
        assert [c.startswith("**") for c in cells] == [j == i for j in range(4)], row
    table = html[html.index('<table class="groups cross">'):]
    table = table[table.index("<tbody>"):table.index("</table>")]
    assert table.count("font-weight: bold") == 4
    for row in re.findall(r"<tr><th>(.*?)</tr>", table):
        bold = [j for j, td in enumerate(re.findall(r"<td[^>]*>", row)) if "bold" in td]
        assert bold == [list(domains).index(row.split(" (")[0])], row
    pngs = sorted(p.name for p in board.glob("cross_group_*.png"))
    assert len(pngs) == 1 and (board / pngs[0]).stat().st_size > 5000


def test_the_summary_written_to_a_file_is_never_cut(digits_split, tmp_path, run_cli, monkeypatch):
    """Issue 31, item 2: stdout to a file or a pipe gets the whole summary table, not 80 columns of it."""
    monkeypatch.delenv("COLUMNS", raising=False)
    code, stdout, err = run_cli("train", "--split", digits_split, "--algo", "fedavg,fedprox", "--rounds", "1",
                                "--clients-per-round", "2", "--threads", "1", "--out", tmp_path / "res")
    assert code == 0, err
    assert "…" not in stdout and "worst group" in stdout and "rel. acc." in stdout and "fedprox" in stdout


def test_skip_existing_and_resume_from_the_command_line(digits_split, tmp_path, run_cli, monkeypatch):
    import hetbench.train.simulation as simulation

    monkeypatch.setenv("COLUMNS", "300")  # the whole summary table on one line per run
    out = tmp_path / "res"
    args = ("train", "--split", digits_split, "--rounds", "3", "--clients-per-round", "3", "--batch-size", "16",
            "--threads", "1", "--checkpoint-every", "1", "--out", out)
    code, _, err = run_cli(*args, "--algo", "fedavg", "-q")
    assert code == 0, err
    real = simulation.run_training

    def killed_in_round_2(data, algo, config, *a, on_round=None, **kw):
        def hook(r, summary):
            if r == 2:
                raise KeyboardInterrupt  # Ctrl-C: exit 130, the checkpoint of round 1 (or 2) stays
        return real(data, algo, config, *a, on_round=hook, **kw)

    monkeypatch.setattr(simulation, "run_training", killed_in_round_2)
    code, _, err = run_cli(*args, "--algo", "fedavg,fedprox", "--skip-existing", "-q")
    assert code == 130, err
    monkeypatch.setattr(simulation, "run_training", real)
    (folder,) = out.iterdir()  # <out>/<split name>
    assert sorted(p.name for p in folder.iterdir()) == ["fedavg-s0.json", "fedprox-s0.ckpt"]
    code, stdout, err = run_cli(*args, "--algo", "fedavg,fedprox", "--resume")
    assert code == 0, err
    assert "skipped 1 existing result: fedavg-s0.json" in err
    assert "resuming 1 run from its checkpoint: fedprox-s0.json" in err
    assert "fedavg (kept)" in stdout and "fedprox (resumed)" in stdout
    assert sorted(p.name for p in folder.iterdir()) == ["fedavg-s0.json", "fedprox-s0.json"]  # checkpoint gone
    fresh = tmp_path / "fresh"
    code, _, err = run_cli(*args[:-1], fresh, "--algo", "fedprox", "-q")
    assert code == 0, err
    assert _without_timing(folder / "fedprox-s0.json") == _without_timing(fresh / folder.name / "fedprox-s0.json")


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes() for p in folder.rglob("*")}


def test_the_decode_cache_goes_where_cache_dir_or_hetbench_cache_says(digits_split, tmp_path, run_cli, monkeypatch):
    def cached(folder):
        return sorted(p.name for p in folder.rglob("*.npy")) if folder.exists() else []

    before = _tree(digits_split)
    monkeypatch.delenv("HETBENCH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedavg", *FAST, "--out", tmp_path / "default")
    assert code == 0, err
    assert len(cached(tmp_path / "xdg" / "hetbench" / "train")) == 2  # by default: the user's cache folder
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedavg", *FAST, "--out", tmp_path / "a",
                           "--cache-dir", tmp_path / "flag")
    assert code == 0, err
    assert len(cached(tmp_path / "flag")) == 2  # the train and test images
    monkeypatch.setenv("HETBENCH_CACHE", str(tmp_path / "env"))
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedavg", *FAST, "--out", tmp_path / "b")
    assert code == 0, err
    assert cached(tmp_path / "env") == cached(tmp_path / "flag")
    assert _tree(digits_split) == before  # no run wrote into the split folder
    assert _without_timing(_results(tmp_path / "a")[0]) == _without_timing(_results(tmp_path / "b")[0])
    assert _without_timing(_results(tmp_path / "a")[0]) == _without_timing(_results(tmp_path / "default")[0])
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "fedavg", *FAST, "--out", tmp_path / "c",
                           "--cache-dir", digits_split / ".hetbench-cache")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "lies inside the split folder" in err, err
    assert _tree(digits_split) == before


def _zero_images(npy: Path) -> None:
    """Zero a cache entry's images and recompute its CRC-32s (all that an unkeyed checksum asks for)."""
    meta_path = npy.with_name(npy.name[:-4] + ".json")
    meta = json.loads(meta_path.read_text())
    raw = bytearray(npy.read_bytes())
    start = len(raw) - int(np.prod(meta["shape"]))
    raw[start:] = bytes(len(raw) - start)
    npy.write_bytes(bytes(raw))
    per = int(meta["block_rows"]) * int(np.prod(meta["shape"][1:]))
    meta["block_crc32"] = [zlib.crc32(bytes(raw[a : a + per])) for a in range(start, len(raw), per)]
    meta_path.write_text(json.dumps(meta))


def test_zeroed_or_pickled_cached_images_are_decoded_again_with_one_warning_line(digits_split, tmp_path, run_cli):
    args = ["train", "--split", str(digits_split), "--algo", "fedavg", *FAST, "--cache-dir", str(tmp_path / "c")]
    code, _, err = run_cli(*args, "--out", tmp_path / "first")
    assert code == 0, err
    want = _without_timing(_results(tmp_path / "first")[0])
    npy = next((tmp_path / "c").glob("*-train-*.npy"))
    _zero_images(npy)
    done = subprocess.run([sys.executable, "-m", "hetbench.cli.main", *args, "--out", str(tmp_path / "zeroed")],
                          capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = _without_timing(_results(tmp_path / "zeroed")[0])
    assert got["final"] == want["final"] and got == want  # the accuracy of the real images, not of zeros
    warned = [line for line in done.stderr.splitlines() if "warning" in line.lower()]
    assert len(warned) == 1 and warned[0].startswith("hetbench: warning: the decoded-image cache of "), done.stderr
    np.save(npy, np.array([{"images": 0}], dtype=object), allow_pickle=True)  # a pickled array file
    with pytest.warns(UserWarning, match="cannot be trusted") as caught:
        code, _, err = run_cli(*args, "--out", tmp_path / "pickled")
    assert code == 0 and "Traceback" not in err, err
    assert [w.category.__name__ for w in caught if "decoded-image cache" in str(w.message)] == ["CacheWarning"]
    assert _without_timing(_results(tmp_path / "pickled")[0]) == want


def test_a_diverged_centralised_run_is_no_reference(digits_split, tmp_path, run_cli, monkeypatch):
    """Issue 31, item 1: a centralised run back at chance is reported, and nothing is measured against it."""
    import hetbench.train.reference as reference

    monkeypatch.setattr(reference, "reference_failure", lambda doc: "its accuracy fell from 59.0% (round 2) to 10.0%")
    out = tmp_path / "res"
    code, _, err = run_cli("train", "--split", digits_split, "--algo", "central,fedavg", "--rounds", "2",
                           "--clients-per-round", "2", "--threads", "1", "-q", "--out", out)
    assert code == 0, err
    assert "is no reference: its accuracy fell from 59.0%" in err
    docs = {p.name.split("-s")[0]: json.loads(p.read_text()) for p in _results(out)}
    assert docs["central"]["final"]["reference_failure"].startswith("its accuracy fell")
    assert docs["fedavg"]["final"]["relative_accuracy"] is None and docs["fedavg"]["final"]["target_accuracy"] is None
    code, _, err = run_cli("leaderboard", out, "--out", tmp_path / "lb")
    assert code == 0, err
