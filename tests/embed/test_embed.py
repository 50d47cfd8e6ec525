"""Embedders: shapes, determinism, user-supplied torch models and their penultimate layer."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from hetbench.errors import HetbenchError


@pytest.fixture(scope="module")
def small_digits():
    import datasets

    from hetbench.sources import load_table

    t = load_table("builtin:digits")
    t.splits["train"] = t.splits["train"].select(range(120))
    t.labels["train"] = t.labels["train"][:120]
    assert isinstance(t.splits["train"], datasets.Dataset)
    return t


@pytest.mark.parametrize("spec, dim", [("pixels", 768), ("pixels:4", 48), ("hog", 324), ("color-hist", 48)])
def test_classical_embedders(small_digits, spec, dim):
    from hetbench.embed import embed_table

    e = embed_table(small_digits, "train", spec)
    assert e.shape == (120, dim) and e.dtype == np.float32 and np.isfinite(e).all()
    assert np.array_equal(e, embed_table(small_digits, "train", spec))


def test_pixels_separate_digit_classes(small_digits):
    """A sanity check that the features carry the task: nearest class mean beats chance by far."""
    from hetbench.embed import embed_table

    e = embed_table(small_digits, "train", "pixels:8")
    y = small_digits.labels["train"]
    means = np.stack([e[y == c].mean(axis=0) for c in range(10)])
    pred = np.argmin(((e[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert (pred == y).mean() > 0.7


def test_torch_factory_penultimate_layer_and_named_layer(small_digits, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    (tmp_path / "tinymodels.py").write_text(
        "import torch\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from hetbench.embed import embed_table

    penultimate = embed_table(small_digits, "train", "torch:tinymodels:make")
    assert penultimate.shape == (120, 32) and (penultimate >= 0).all()  # after the ReLU
    first = embed_table(small_digits, "train", "torch:tinymodels:make", layer="1")
    assert first.shape == (120, 32) and (first < 0).any()  # before the ReLU
    with pytest.raises(HetbenchError, match="no layer"):
        embed_table(small_digits, "train", "torch:tinymodels:make", layer="nope")
    sys.modules.pop("tinymodels", None)


def test_torchscript_embedder(small_digits, tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 7)))
    path = tmp_path / "m.pt"
    model.save(str(path))
    from hetbench.embed import embed_table

    assert embed_table(small_digits, "train", f"torchscript:{path}").shape == (120, 7)
    with pytest.raises(HetbenchError, match="not found"):
        embed_table(small_digits, "train", f"torchscript:{tmp_path / 'missing.pt'}")


def test_column_embedder_and_errors(tmp_path):
    import datasets

    from hetbench.embed import embed_table
    from hetbench.sources import load_table

    ds = datasets.Dataset.from_dict({"label": [0, 1, 0], "emb": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "bad": [[1.0], [1.0, 2.0], [3.0]]})
    t = load_table(ds)
    assert embed_table(t, "train", "column:emb").tolist() == [[1, 2], [3, 4], [5, 6]]
    for spec, needle in [("column:bad", "fixed-length"), ("column:zzz", "not found"), ("pixels", "no image column"),
                         ("sift", "unknown embedder"), ("torch:only_two", "MODULE:FACTORY")]:
        with pytest.raises(HetbenchError, match=needle):
            embed_table(t, "train", spec)


def test_onnx_embedder(small_digits, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime", reason="onnxruntime is in the dev extra")
    pytest.importorskip("onnx", reason="torch's ONNX export needs the onnx package (dev extra)")
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 5))
    path = tmp_path / "m.onnx"
    torch.onnx.export(model, torch.zeros(1, 3, 8, 8), str(path), dynamo=False, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    from hetbench.embed import embed_table, iter_images

    e = embed_table(small_digits, "train", f"onnx:{path}")
    assert e.shape == (120, 5)
    x = np.stack([im for batch in iter_images(small_digits.splits["train"]) for im in batch])
    with torch.no_grad():
        expected = model(torch.from_numpy(x.astype(np.float32).transpose(0, 3, 1, 2) / 255.0)).numpy()
    assert np.allclose(e, expected, atol=1e-5)  # onnxruntime gives the same embedding as the model
    with pytest.raises(HetbenchError, match="no output"):
        embed_table(small_digits, "train", f"onnx:{path}", layer="nope")
    with pytest.raises(HetbenchError, match="not found"):
        embed_table(small_digits, "train", f"onnx:{tmp_path / 'missing.onnx'}")


def _embed_calls(monkeypatch) -> list:
    import hetbench.partitioners.embedding as mod

    calls: list = []
    real = mod.embed_table

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(mod, "embed_table", counting)
    return calls


def test_stored_embeddings_are_reused_on_overwrite_and_the_folder_verifies(tmp_path, run_cli, monkeypatch):
    out = tmp_path / "emb"
    args = ("partition", "embedding", "--embedder", "pixels:8", "--clusters", "5", "--out", out, "-q")
    calls = _embed_calls(monkeypatch)
    assert run_cli(*args)[0] == 0 and calls == ["pixels:8"]
    first = (out / "hetbench.json").read_bytes()
    assert run_cli(*args, "--overwrite")[0] == 0
    assert calls == ["pixels:8"]  # the rebuild read the stored embeddings
    assert (out / "hetbench.json").read_bytes() == first
    assert run_cli("verify", out)[0] == 0


@pytest.mark.parametrize("damage", ["edited", "truncated", "pickled"])
def test_damaged_stored_embeddings_are_embedded_again_with_one_warning(tmp_path, run_cli, monkeypatch, damage):
    out = tmp_path / "emb"
    args = ("partition", "embedding", "--embedder", "pixels:8", "--clusters", "5", "--out", out, "-q")
    assert run_cli(*args)[0] == 0
    first = (out / "hetbench.json").read_bytes()
    path = out / "embeddings" / "train.npy"
    if damage == "edited":  # zeros would give one real cluster if they were read
        np.save(path, np.zeros_like(np.load(path)))
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    else:
        np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    calls = _embed_calls(monkeypatch)
    with pytest.warns(UserWarning, match="damaged") as record:
        assert run_cli(*args, "--overwrite")[0] == 0
    assert len(record) == 1 and calls == ["pixels:8"]
    assert (out / "hetbench.json").read_bytes() == first  # embedded again: the same split
    assert run_cli("verify", out)[0] == 0


def test_stored_embeddings_are_keyed_by_the_model_files_content(small_digits, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from hetbench.embed.cache import model_digest, reusable_embeddings
    from hetbench.partitioners import EmbeddingPartitioner
    from hetbench.pipeline import make_split

    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    torch.jit.script(net).save("m.pt")
    spec = "torchscript:m.pt"
    make_split(small_digits, EmbeddingPartitioner(4, 0.5, 3, embedder=spec), "emb", quiet=True)
    assert reusable_embeddings("emb", small_digits, spec, None)["train"].shape[0] == small_digits.num_rows("train")
    before = model_digest(spec)
    torch.manual_seed(1)
    torch.jit.script(net.__class__(*[torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 3, 6), torch.nn.ReLU(),
                                     torch.nn.Linear(6, 3)])).save("m.pt")  # another model, the same name
    assert model_digest(spec) != before
    assert reusable_embeddings("emb", small_digits, spec, None) is None
    assert reusable_embeddings("emb", small_digits, "pixels:8", None) is None  # another embedder


@pytest.mark.parametrize("spec, needle", [
    ("torch:math:pi", "'torch:math:pi': math.pi is a float, not a factory that returns a torch.nn.Module"),
    ("torch:math:floor", "cannot build 'torch:math:floor': math.floor() raised TypeError"),
    ("torch:builtins:dict", "'torch:builtins:dict' returned a dict, not a torch.nn.Module"),
])
def test_torch_factory_that_is_no_module_factory_is_one_line(small_digits, spec, needle):
    pytest.importorskip("torch")
    from hetbench.embed import embed_table

    with pytest.raises(HetbenchError) as info:
        embed_table(small_digits, "train", spec)
    assert needle in str(info.value) and "\n" not in str(info.value)
