"""Bad input: one clear line on stderr, exit code 2, no output folder left behind."""

from __future__ import annotations

import pytest


def _write_csv(path, header, rows):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def csvs(tmp_path):
    no_label = _write_csv(tmp_path / "nolabel.csv", "x,y", [f"{i},{i % 3}" for i in range(30)])
    floats = _write_csv(tmp_path / "floats.csv", "x,label", [f"{i},{i * 0.5}" for i in range(30)])
    with_test = tmp_path / "with_test"
    with_test.mkdir()
    _write_csv(with_test / "train-0.csv", "x,label", [f"{i},{i % 3}" for i in range(30)])
    _write_csv(with_test / "test-0.csv", "x,label", [f"{i},{i % 3}" for i in range(9)])
    return {"no_label": no_label, "floats": floats, "with_test": f"train={with_test / 'train-0.csv'},test={with_test / 'test-0.csv'}"}


CASES = {
    "missing label column": (["dirichlet", "--dataset", "{no_label}"], "label"),
    "named label column missing": (["dirichlet", "--dataset", "{no_label}", "--label-col", "species"], "species"),
    "alpha < 0": (["dirichlet", "--alpha", "-0.5"], "alpha"),
    "more clients than samples": (["dirichlet", "--clients", "5000"], "more clients"),
    "iid more clients than samples": (["iid", "--clients", "5000"], "more clients"),
    "sizes more than the training rows": (["iid", "--clients", "3", "--sizes", "600,600,600"], "training rows"),
    "sizes more than the rows of a source test split": (["iid", "--dataset", "{with_test}", "--clients", "2", "--sizes", "20,20"], "sum"),
    "sizes wrong count": (["dirichlet", "--clients", "3", "--sizes", "10,10"], "3 clients"),
    "unknown dataset path": (["iid", "--dataset", "no/such/folder.parquet"], "not found"),
    "unknown builtin": (["iid", "--dataset", "builtin:cifar"], "built-in"),
    "float labels": (["iid", "--dataset", "{floats}"], "float"),
    "impossible min size": (["dirichlet", "--scheme", "class", "--min-size", "500"], "impossible"),
    "bad test fraction": (["iid", "--test-split", "client", "--test-fraction", "1.5"], "test-fraction"),
    "natural policy without natural key": (["iid", "--test-split", "natural"], "natural"),
    "global policy without test split": (["iid", "--test-split", "global"], "test split"),
    "natural-id missing column": (["natural-id", "--column", "writer"], "writer"),
    "natural-id min samples too high": (["natural-id", "--min-samples", "100000"], "min-samples"),
    "too many classes per client": (["classes-per-client", "--classes", "11"], "between 1 and 10"),
    "bad sizes text": (["iid", "--sizes", "a,b"], "comma"),
    "not a number": (["dirichlet", "--alpha", "lots"], "alpha"),
    "quantity beta 0": (["quantity", "--beta", "0"], "--beta must be a finite number > 0"),
    "quantity beta < 0": (["quantity", "--size-dist", "lognormal", "--beta", "-1"], "--beta"),
    "quantity more clients than samples": (["quantity", "--clients", "5000"], "more clients"),
    "feature-noise sigma < 0": (["feature-noise", "--sigma", "-0.1"], "--sigma must be a finite number >= 0"),
    "feature-noise without images": (["feature-noise", "--dataset", "{no_label}", "--label-col", "y"], "image column"),
    "label-noise rate > 1": (["label-noise", "--rate", "1.5"], "--rate must be in [0, 1]"),
    "label-noise rate < 0": (["label-noise", "--rate", "-0.1", "--kind", "pair"], "--rate"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2(case, tmp_path, csvs, run_cli):
    args, needle = CASES[case]
    args = [a.format(**csvs) for a in args]
    out = tmp_path / "out"
    code, stdout, err = run_cli("partition", *args, "--out", out)
    assert code == 2, (case, stdout, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hetbench: error:")
    assert needle.lower() in lines[0].lower(), lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_existing_out_without_overwrite(tmp_path, run_cli):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run_cli("partition", "iid", "--out", out)
    assert code == 2 and "--overwrite" in err
    assert (out / "keep.txt").read_text() == "mine"


def test_verify_on_a_non_build(tmp_path, run_cli):
    code, _, err = run_cli("verify", tmp_path)
    assert code == 2 and "not a hetbench build" in err


def test_corrupt_parquet_source(tmp_path, run_cli):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    code, _, err = run_cli("partition", "iid", "--dataset", bad, "--out", tmp_path / "o")
    assert code == 2 and "could not read" in err and len(err.strip().splitlines()) == 1


# ---- issue 11: every bad input of every command -------------------------------------------------
# Each entry: the full command ({name} placeholders are files of the `inputs` fixture; {out} is the
# folder that must not be created) and a needle of its one stderr line.
ISO = ("build", "iso-isp", "--stages", "wb", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96", "-q")
ISO_RAW = ("build", "iso-isp", "--stages", "wb", "--size", "32", "--raw-dir", "{raws}", "-q")
DEVICES = ("build", "devices", "--clients", "9", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96", "-q")

CATALOGUE = {
    # --seed -1 (and beyond 64 bits) on every command, refused before any work
    "seed -1 partition": (["partition", "iid", "--seed", "-1"], "--seed must be a non-negative integer (got -1)"),
    "seed -1 partition dirichlet": (["partition", "dirichlet", "--seed", "-1"], "non-negative"),
    "seed 2**64 partition": (["partition", "iid", "--seed", str(2**64)], "below 2**64"),
    "seed -1 iso-isp": ([*ISO, "--seed", "-1"], "--seed must be a non-negative integer"),
    "seed -1 devices": ([*DEVICES, "--seed", "-1"], "--seed must be a non-negative integer"),
    "seed -1 synthetic devices": (["build", "devices", "--synthetic-color", "3", "-q", "--seed", "-1"], "non-negative"),
    "seed -1 geo": (["build", "geo", "-q", "--seed", "-1"], "--seed must be a non-negative integer"),
    "seed -1 users": (["build", "users", "-q", "--seed", "-1"], "--seed must be a non-negative integer"),
    "seed -1 digits-domains": (["build", "digits-domains", "-q", "--seed", "-1"], "non-negative"),
    "seed -1 train": (["train", "--split", "{split}", "-q", "--seed", "-1"], "--seed must be a non-negative integer"),
    "seed 2**64 train": (["train", "--split", "{split}", "-q", "--seed", str(2**64)], "below 2**64"),
    # SPLIT=PATH sources: a split named twice, one file for two splits, one id in two splits
    "split named twice": (["partition", "iid", "--dataset", "train={a},train={c}"], "split 'train' is given twice"),
    "same file twice": (["partition", "iid", "--dataset", "train={a},test={a}"], "same file"),
    "same file by another path": (["partition", "iid", "--dataset", "train={a},test={a_dotted}"], "same file"),
    "same file by a link": (["partition", "iid", "--dataset", "train={a},test={a_link}"], "same file"),
    "a byte-identical copy": (["partition", "iid", "--dataset", "train={a},test={a_copy}"], "same file"),
    "one id in two splits": (["partition", "iid", "--dataset", "train={a},test={c}", "--id-col", "x"], "in both splits"),
    # --labels of RAW captures
    "labels conflict": ([*ISO_RAW, "--labels", "{labels_conflict}"], "line 4: file 'a.dng' is labelled 'dog'"),
    "labels empty": ([*ISO_RAW, "--labels", "{labels_empty}"], "line 3: empty label for file 'b.dng'"),
    # --device-weights
    "device weight -1": ([*ISO, "--device-weights", "{weights_negative}"], "weight of 'wb=none' must be a finite number >= 0"),
    "device weight inf": ([*ISO, "--device-weights", "{weights_inf}"], "weight of 'baseline' must be a finite number"),
    "device weights overflow": ([*ISO, "--device-weights", "{weights_huge}"], "positive, finite sum"),
    "device weights all 0": ([*ISO, "--device-weights", "{weights_zero}"], "positive, finite sum"),
    "device weight text": ([*ISO, "--device-weights", "{weights_text}"], "weight of 'baseline' must be a number"),
    # more clients than captures can serve
    "iso-isp 100000 clients, 3 captures": ([*ISO_RAW, "--clients", "100000"], "every client needs a training capture"),
    "iso-isp 100000 clients, embedded": ([*ISO, "--clients", "100000"], "every client needs a training capture"),
    "devices 100000 clients": ([*DEVICES[:-1], "--clients", "100000"], "every client needs a training capture"),
    # train
    "train string client_id": (["train", "--split", "{string_clients}", "-q"], "'client_id' column of string, not integers"),
    "train image size 100000": (["train", "--split", "{split}", "-q", "--image-size", "100000"], "between 8 and 1024"),
    "train image size 4": (["train", "--split", "{split}", "-q", "--image-size", "4"], "between 8 and 1024"),
    # leaderboard: the only result nests too deeply (skipped as malformed, so none is left)
    "leaderboard nested json": (["leaderboard", "{nested}"], "nested more than 64 levels"),
    # a torch:MODULE:FACTORY that is not a factory of a module
    "embedder not callable": (["partition", "embedding", "--embedder", "torch:math:pi"], "'torch:math:pi': math.pi is a float"),
    "embedder factory fails": (["partition", "embedding", "--embedder", "torch:math:floor"], "math.floor() raised TypeError"),
    "embedder returns no module": (["partition", "embedding", "--embedder", "torch:builtins:dict"], "returned a dict"),
}


@pytest.fixture
def inputs(tmp_path):
    """Every file the catalogue names."""
    import datasets
    import numpy as np

    from hetbench.png import encode_png_opencv as encode_png

    d = tmp_path / "in"
    d.mkdir()
    files = {}
    a = _write_csv(d / "a.csv", "x,label", [f"{i},{i % 3}" for i in range(30)])
    files["a"], files["a_dotted"] = a, d / "." / ".." / "in" / "a.csv"
    (d / "a_link.csv").symlink_to(a)
    files["a_link"] = d / "a_link.csv"
    files["a_copy"] = d / "a_copy.csv"
    files["a_copy"].write_bytes(a.read_bytes())
    files["c"] = _write_csv(d / "c.csv", "x,label", [f"{i},{i % 3}" for i in range(25, 40)])
    raws = d / "raws"
    raws.mkdir()
    for n in "abc":
        (raws / f"{n}.dng").write_bytes(b"not a raw")  # never read: every case fails before rendering
    files["raws"] = raws
    files["labels_conflict"] = _write_csv(d / "conflict.csv", "file,label", ["a.dng,cat", "b.dng,dog", "a.dng,dog", "c.dng,cat"])
    files["labels_empty"] = _write_csv(d / "empty.csv", "file,label", ["a.dng,cat", "b.dng,", "c.dng,dog"])
    devices = ("baseline", "wb=none", "wb=white-patch")
    for name, values in {"negative": (1, -1, 1), "inf": (".inf", 1, 1), "huge": (1e308, 1e308, 1), "zero": (0, 0, 0),
                         "text": ("lots", 1, 1)}.items():
        files[f"weights_{name}"] = d / f"weights_{name}.yaml"
        files[f"weights_{name}"].write_text("".join(f"'{k}': {v}\n" for k, v in zip(devices, values)))
    # a split whose client_id holds strings
    feats = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64"), "client_id": datasets.Value("string")})
    png = encode_png(np.zeros((8, 8, 3), np.uint8))
    rows = {"image": [{"bytes": png, "path": None}] * 4, "label": [0, 1, 0, 1], "client_id": ["a", "a", "b", "b"]}
    split = d / "string_clients"
    split.mkdir()
    for s in ("train", "test"):
        datasets.Dataset.from_dict(rows, features=feats).to_parquet(str(split / f"{s}.parquet"))
    files["string_clients"] = split
    files["split"] = d / "no_split_is_read"  # the case fails before the split is read
    nested = d / "results"
    nested.mkdir()
    (nested / "deep.json").write_text('{"kind": "hetbench-train-result", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (nested / "deep_but_readable.json").write_text('{"kind": "hetbench-train-result", "x": ' + "[" * 70 + "]" * 70 + "}")
    files["nested"] = nested
    return files


@pytest.fixture
def no_rendering(monkeypatch):
    """Rendering is the expensive work: every catalogue case must fail before it."""
    import hetbench.builders.iso_isp as iso_isp

    def refuse(*args, **kwargs):
        raise AssertionError("rendering started before the bad input was refused")

    monkeypatch.setattr(iso_isp, "run_jobs", refuse)


@pytest.mark.parametrize("case", sorted(CATALOGUE))
def test_catalogue_one_line_exit_2_nothing_left(case, tmp_path, inputs, no_rendering, run_cli):
    args, needle = CATALOGUE[case]
    out = tmp_path / "out"
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, err = run_cli(*[a.format(**inputs) for a in args], "--out", out)
    assert code == 2, (case, stdout, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hetbench: error:"), lines[0]
    assert needle.lower() in lines[0].lower(), lines[0]
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temporary sibling left either


# ---- issue 12: hetbench train's devices, groups, stable metrics, checkpoints --------------------
# Each entry: the arguments after `train --split {groups} --rounds 2 -q`, the folder given as --out
# ("fresh": must not be created; "killed": holds a checkpoint of a run with another learning rate and must
# stay as it is) and a needle of the one stderr line.
TRAIN_CATALOGUE = {
    "device tpu": (["--device", "tpu"], "fresh", "--device 'tpu' is not one of auto, cpu, cuda, cuda:N, mps"),
    "device cuda:7": (["--device", "cuda:7"], "fresh", "--device cuda:7"),
    "last-k 0": (["--last-k", "0"], "fresh", "--last-k must be a positive number (got 0)"),
    "checkpoint-every 0": (["--checkpoint-every", "0"], "fresh", "--checkpoint-every must be a positive number"),
    "protocol unknown": (["--protocol", "unknown"], "fresh", "--protocol 'unknown' is not one of leave-one-group-out"),
    "train group not in split": (["--train-groups", "a,z"], "fresh",
                                 "--train-groups: 'z' is not a group of column 'device' of this split (groups: a, b, c)"),
    "train groups leave no client": (["--train-groups", "c"], "fresh",
                                     "--train-groups c leaves no training client: none of the 2 clients"),
    "train groups empty": (["--train-groups", ","], "fresh", "--train-groups is empty"),
    "train group named twice": (["--train-groups", "a,a"], "fresh", "--train-groups names group 'a' twice"),
    "test group not in split": (["--test-groups", "x"], "fresh", "--test-groups: 'x' is not a group of column 'device'"),
    "logo with train groups": (["--protocol", "leave-one-group-out", "--train-groups", "a"], "fresh", "drop --train-groups"),
    "logo leaves no client": (["--protocol", "leave-one-group-out"], "fresh",
                              "holding out 'a', leaves no training client"),
    "groups without a group column": (["--group-by", "all", "--train-groups", "a"], "fresh",
                                      "--train-groups needs groups, but the split has none"),
    "resume with overwrite": (["--resume", "--overwrite"], "killed", "cannot be combined with --overwrite"),
    "an option the algorithm does not take": (["--algo", "fedavg,scaffold", "--mu", "0.1"], "fresh",
                                               "--mu is not an option of fedavg or scaffold"),
    "adaptive server tau 0": (["--algo", "fedadam", "--tau", "0"], "fresh", "--tau must be a positive number (got 0.0)"),
    "adaptive server beta1 1": (["--algo", "fedyogi", "--beta1", "1"], "fresh", "--beta1 must be in [0, 1) (got 1.0)"),
    "adaptive server beta2 -0.1": (["--algo", "fedadam", "--beta2", "-0.1"], "fresh", "--beta2 must be in [0, 1)"),
    "fedbn without normalisation layers": (["--algo", "fedavg,fedbn"], "fresh",
                                           "fedbn keeps each client's normalisation layers, but the model"),
    "dar form misspelt": (["--algo", "dapperfl", "--dar-form", "cubed"], "fresh", "--dar-form"),
    "skip-existing with overwrite": (["--skip-existing", "--overwrite"], "killed", "cannot be combined with --overwrite"),
    "resume another configuration": (["--resume", "--checkpoint-every", "1"], "killed",
                                     "is of another run configuration: config.lr is 0.5 there, 0.05 here"),
}
if not __import__("torch").cuda.is_available():  # these cases need a machine without a GPU
    TRAIN_CATALOGUE["device cuda without a GPU"] = (["--device", "cuda"], "fresh", "torch found no CUDA GPU")
    TRAIN_CATALOGUE["amp without a GPU"] = (["--amp"], "fresh", "--amp (bf16 autocast) needs a CUDA device")


def _group_split(folder):
    """Two clients: client 0's rows are all device 'a', client 1's are 'b' and 'c'; test rows of a, b, c."""
    import datasets
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=["x", "y"]),
                               "device": datasets.Value("string"), "client_id": datasets.Value("int64")})
    (folder / "data").mkdir(parents=True)
    for split, n in (("train", 16), ("test", 9)):
        client = [i % 2 for i in range(n)] if split == "train" else [-1] * n
        device = (["a" if i % 2 == 0 else "bc"[(i // 2) % 2] for i in range(n)] if split == "train"
                  else ["abc"[i % 3] for i in range(n)])
        rows = {"image": [Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8)) for _ in range(n)],
                "label": rng.integers(0, 2, n).tolist(), "device": device, "client_id": client}
        datasets.Dataset.from_dict(rows, features=feats).to_parquet(str(folder / "data" / f"{split}.parquet"))
    return folder


@pytest.fixture(scope="module")
def train_inputs(tmp_path_factory):
    """The group split, and a results folder left by a killed run of it (a checkpoint, lr 0.5)."""
    from hetbench.train.algorithms import TrainConfig, make_algorithm
    from hetbench.train.checkpoint import checkpoint_path
    from hetbench.train.data import load_federated
    from hetbench.train.results import result_path
    from hetbench.train.simulation import run_training

    root = tmp_path_factory.mktemp("train_inputs")
    split = _group_split(root / "groups")
    killed = root / "killed"
    data = load_federated(str(split))
    ckpt = checkpoint_path(result_path(killed, data.name, "fedavg", {}, {}, 0, fingerprint=data.fingerprint))
    ckpt.parent.mkdir(parents=True)
    config = TrainConfig(rounds=2, lr=0.5, checkpoint_every=1, device="cpu")  # the CLI cases: lr 0.05
    run_training(data, make_algorithm("fedavg"), config, checkpoint=ckpt)
    assert ckpt.is_file()
    return {"groups": split, "killed": killed}


@pytest.mark.parametrize("case", sorted(TRAIN_CATALOGUE))
def test_train_catalogue_one_line_exit_2_nothing_written(case, tmp_path, train_inputs, run_cli):
    import shutil

    args, out_kind, needle = TRAIN_CATALOGUE[case]
    out = tmp_path / "out"
    if out_kind == "killed":
        shutil.copytree(train_inputs["killed"], out)
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, stdout, err = run_cli("train", "--split", train_inputs["groups"], "--rounds", "2", "--threads", "1", "-q",
                                *args, "--out", out)
    assert code == 2, (case, stdout, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hetbench: error:"), lines[0]
    assert needle.lower() in lines[0].lower(), lines[0]
    assert (out_kind == "killed") == out.exists()
    after = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing written, nothing removed


# ---- issue 14: the input is checked before the output folder; default names follow the input -------------------
INPUT_BEFORE_OUT = {
    "partition, unknown label column": (["partition", "iid", "--label-col", "nope"], "nope"),
    "partition, missing dataset": (["partition", "dirichlet", "--dataset", "no/such.csv"], "no/such.csv"),
    "partition iid --sizes, unknown label column": (["partition", "iid", "--sizes", "1,2", "--clients", "2",
                                                     "--label-col", "nope"], "nope"),
    "build geo, unknown label column": (["build", "geo", "--label-col", "nope"], "nope"),
    "build geo, missing metadata": (["build", "geo", "--metadata", "no/such.csv"], "not a local path"),
    "build users, unknown user column": (["build", "users", "--user-col", "nope"], "nope"),
    "build iso-isp, unknown stage": (["build", "iso-isp", "--stages", "nope"], "nope"),
    "build iso-isp, missing raw folder": (["build", "iso-isp", "--raw-dir", "nope", "--labels", "nope"], "nope"),
    "build devices, unknown profile set": (["build", "devices", "--profiles", "nope"], "nope"),
    "build devices --synthetic-color, unknown label column": (
        ["build", "devices", "--synthetic-color", "3", "--label-col", "nope"], "nope"),
}


@pytest.mark.parametrize("case", sorted(INPUT_BEFORE_OUT))
def test_bad_input_reported_before_an_existing_output(case, tmp_path, run_cli, no_rendering):
    """An existing --out with a bad input: the input problem is reported, not 'already exists'."""
    args, needle = INPUT_BEFORE_OUT[case]
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, stdout, err = run_cli(*args, "--out", out)
    assert code == 2, (case, stdout, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert needle.lower() in lines[0].lower() and "already exists" not in lines[0], lines[0]
    assert (out / "keep.txt").read_text() == "mine"
    # and with a good input the existing folder is still refused
    good = list(args)
    for bad in ("nope", "no/such.csv"):
        while bad in good:
            i = good.index(bad)
            del good[i - 1: i + 1]
    code, _, err = run_cli(*good, "--out", out)
    assert code == 2 and "already exists" in err, err


def test_iid_sizes_count_training_rows(tmp_path, run_cli):
    """--sizes are the training rows the summary counts (issue 14): under the client policy each client's
    hold-out comes on top; sizes summing to the training rows work, the rest is dropped as 'remainder'."""
    import json

    out = tmp_path / "s"
    code, stdout, err = run_cli("partition", "iid", "--clients", "3", "--sizes", "500,500,437", "--out", out)
    assert code == 0, err
    assert "1,437 training samples" in stdout and "sizes 437/500/500" in stdout, stdout
    report = json.loads((out / "report.json").read_text())
    assert report["num_samples"] == 1437 and report["size_stats"]["min"] == 437
    code, stdout, err = run_cli("partition", "iid", "--clients", "2", "--sizes", "100,50", "--out", tmp_path / "t")
    assert code == 0, err
    assert "150 training samples" in stdout and "remainder" in stdout, stdout
    code, _, err = run_cli("verify", tmp_path / "t")
    assert code == 0, err


def test_build_default_names_follow_the_metadata(tmp_path, run_cli, monkeypatch):
    """Two builds on different metadata with the default --out do not collide (issue 14)."""
    import datasets

    from hetbench.sources import load_table

    monkeypatch.chdir(tmp_path)
    obs = load_table("builtin:observations").splits["train"].select(range(3000))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        obs.remove_columns([c for c in obs.column_names if isinstance(obs.features[c], datasets.Image)]).to_csv(
            str(tmp_path / name / "obs.csv"))
    for name in ("a", "b"):
        code, stdout, err = run_cli("build", "geo", "--metadata", f"{name}/obs.csv", "--label-col", "species",
                                    "--nmax", "500", "-q")
        assert code == 0, err
    folders = sorted(p.name for p in (tmp_path / "hetbench_splits").iterdir())
    assert len(folders) == 2 and all(f.startswith("geo-obs-") and f.endswith("-nmax500-s0") for f in folders), folders
    code, _, err = run_cli("build", "users", "--metadata", "a/obs.csv", "--label-col", "species", "--user-col",
                           "observer", "--filters", "none", "-q")
    assert code == 0, err
    assert any(p.name.startswith("users-obs-") for p in (tmp_path / "hetbench_splits").iterdir())
