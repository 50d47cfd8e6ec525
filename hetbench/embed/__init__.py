"""Embedders: a table's images (or an embedding column) -> an (n, d) float32 matrix.

Specs (``--embedder``):

* ``task`` / ``task:EPOCHS`` (default) - the paper's "network trained on the task of interest":
  hetbench's small CNN trained on the table's labels for a few epochs (default 3), penultimate layer
  (``hetbench.embed.task``);
* ``pixels`` / ``pixels:S`` - the image resized to S x S (default 16), RGB in [0, 1], flattened;
* ``hog`` - scikit-image HOG (Dalal & Triggs 2005) of the grey image at 32 x 32;
* ``color-hist`` - a 16-bin histogram per RGB channel, normalised;
* ``column:NAME`` - embeddings already in the data set (one fixed-length vector per row);
* ``torchscript:PATH`` - a TorchScript module mapping (N, 3, H, W) float images in [0, 1] to (N, d);
* ``onnx:PATH`` - an ONNX model run by onnxruntime (``pip install hetbench[onnx]``) with the same
  input; the embedding is its first output, or the output named by ``layer``;
* ``torch:MODULE:FACTORY`` - ``MODULE.FACTORY()`` returns an ``nn.Module``; the embedding is the
  output of the layer named by ``layer`` (``--layer``), by default the input of its last
  ``nn.Linear`` (the penultimate layer). Local timm / torchvision weights are served this way,
  e.g. a factory that builds the model and loads a checkpoint from disk.

Nothing downloads weights. Images are decoded once, in batches, with a progress bar.
"""

from __future__ import annotations

import importlib
import io
from pathlib import Path
from typing import Iterator

import numpy as np

from hetbench.errors import HetbenchError

BATCH = 256


def image_column(ds) -> str:
    col = next((c for c, f in ds.features.items() if type(f).__name__ == "Image"), None)
    if col is None:
        raise HetbenchError(
            f"no image column to embed (columns: {', '.join(ds.column_names)}); use --embedder column:NAME for "
            "precomputed embeddings"
        )
    return col


def iter_images(ds, batch: int = BATCH) -> Iterator[list[np.ndarray]]:
    """Decoded uint8 RGB images of a split, in batches (straight from the stored bytes)."""
    from PIL import Image

    col = image_column(ds)
    table = ds.with_format("arrow")
    for start in range(0, len(ds), batch):
        out = []
        for item in table[start : start + batch][col].to_pylist():
            img = Image.open(io.BytesIO(item["bytes"])) if item.get("bytes") else Image.open(item["path"])
            out.append(np.asarray(img.convert("RGB")))
        yield out


def _resize(img: np.ndarray, side: int) -> np.ndarray:
    import cv2

    interp = cv2.INTER_AREA if min(img.shape[:2]) > side else cv2.INTER_LINEAR
    return cv2.resize(img, (side, side), interpolation=interp)


def _pixels(batch: list[np.ndarray], side: int) -> np.ndarray:
    return np.stack([_resize(im, side).reshape(-1) for im in batch]).astype(np.float32) / 255.0


def _hog(batch: list[np.ndarray]) -> np.ndarray:
    import cv2
    from skimage.feature import hog

    feats = []
    for im in batch:
        grey = cv2.cvtColor(_resize(im, 32), cv2.COLOR_RGB2GRAY)
        feats.append(hog(grey, orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2), feature_vector=True))
    return np.stack(feats).astype(np.float32)


def _color_hist(batch: list[np.ndarray]) -> np.ndarray:
    feats = []
    for im in batch:
        h = [np.bincount((im[..., c].ravel() >> 4).astype(np.int64), minlength=16) for c in range(3)]
        v = np.concatenate(h).astype(np.float32)
        feats.append(v / max(v.sum() / 3.0, 1.0))
    return np.stack(feats)


def _torch_batch(batch: list[np.ndarray]):
    import torch

    shapes = {im.shape for im in batch}
    if len(shapes) != 1:
        raise HetbenchError("a torch embedder needs images of one size; resize the data set first")
    x = np.stack(batch).astype(np.float32) / 255.0
    return torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()


def _onnx_runner(path: str, output: str | None):
    """A batch function running an ONNX model with onnxruntime on (N, 3, H, W) images in [0, 1]."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise HetbenchError("the onnx: embedder needs onnxruntime (pip install 'hetbench[onnx]')") from exc
    if not Path(path).is_file():
        raise HetbenchError(f"ONNX file '{path}' not found")
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise HetbenchError(f"cannot load ONNX model '{path}': {type(exc).__name__}") from exc
    names = [o.name for o in session.get_outputs()]
    if output is not None and output not in names:
        raise HetbenchError(f"no output '{output}' in the ONNX model; outputs: {', '.join(names)}")
    input_name = session.get_inputs()[0].name

    def run(batch: list[np.ndarray]) -> np.ndarray:
        shapes = {im.shape for im in batch}
        if len(shapes) != 1:
            raise HetbenchError("an ONNX embedder needs images of one size; resize the data set first")
        x = np.ascontiguousarray(np.stack(batch).astype(np.float32).transpose(0, 3, 1, 2) / 255.0)
        out = session.run([output or names[0]], {input_name: x})[0]
        return out.reshape(out.shape[0], -1)

    return run


def _load_torch(spec: str, layer: str | None):
    """(model, hook holder) for torchscript:PATH or torch:MODULE:FACTORY."""
    import torch

    if spec.startswith("torchscript:"):
        path = spec.split(":", 1)[1]
        if not Path(path).is_file():
            raise HetbenchError(f"TorchScript file '{path}' not found")
        try:
            model = torch.jit.load(path, map_location="cpu")
        except Exception as exc:
            raise HetbenchError(f"cannot load TorchScript '{path}': {type(exc).__name__}") from exc
        return model.eval(), None
    parts = spec.split(":")
    if len(parts) != 3 or not all(parts[1:]):
        raise HetbenchError("write torch:MODULE:FACTORY, e.g. torch:mypkg.models:make_resnet18")
    try:
        module = importlib.import_module(parts[1])
        model = getattr(module, parts[2])()
    except (ImportError, AttributeError) as exc:
        raise HetbenchError(f"cannot build '{spec}': {exc}") from exc
    if not isinstance(model, torch.nn.Module):
        raise HetbenchError(f"'{spec}' did not return a torch.nn.Module")
    model.eval()
    captured: dict = {}
    modules = dict(model.named_modules())
    if layer is not None:
        if layer not in modules:
            raise HetbenchError(f"no layer '{layer}' in the model; layers: {', '.join(n for n in modules if n)[:300]}")
        modules[layer].register_forward_hook(lambda _m, _i, out: captured.__setitem__("z", out))
    else:
        linears = [m for m in modules.values() if isinstance(m, torch.nn.Linear)]
        if not linears:
            raise HetbenchError(f"'{spec}' has no nn.Linear layer; name the embedding layer with --layer")
        linears[-1].register_forward_pre_hook(lambda _m, inputs: captured.__setitem__("z", inputs[0]))
    return model, captured


def embed_table(table, split: str, spec: str, layer: str | None = None, quiet: bool = True) -> np.ndarray:
    """The (n, d) float32 embedding of every row of ``split`` under ``spec`` (module docstring)."""
    from hetbench.progress import progress_bar

    ds = table.splits[split]
    n = len(ds)
    if spec.startswith("column:"):
        name = spec.split(":", 1)[1]
        if name not in ds.column_names:
            raise HetbenchError(f"embedding column '{name}' not found (columns: {', '.join(ds.column_names)})")
        col = ds.with_format("arrow")[name].combine_chunks()
        try:
            values = np.asarray(col.to_pylist(), dtype=np.float32)
        except ValueError as exc:
            raise HetbenchError(f"column '{name}' does not hold one fixed-length vector per row") from exc
        if values.ndim != 2 or values.shape[0] != n:
            raise HetbenchError(f"column '{name}' does not hold one fixed-length vector per row (shape {values.shape})")
        return _check(values, n, spec)
    kind, _, arg = spec.partition(":")
    if kind == "task":
        from hetbench.embed.task import task_embeddings

        try:
            epochs = int(arg) if arg else 3
        except ValueError as exc:
            raise HetbenchError(f"write task or task:EPOCHS (got '{spec}')") from exc
        return _check(task_embeddings(table, split, epochs=epochs, quiet=quiet), n, spec)
    if kind == "pixels":
        side = int(arg) if arg else 16
        if not 2 <= side <= 256:
            raise HetbenchError(f"pixels:S needs 2 <= S <= 256 (got {side})")
        fn = lambda b: _pixels(b, side)  # noqa: E731
    elif kind == "hog":
        fn = _hog
    elif kind == "color-hist":
        fn = _color_hist
    elif kind == "onnx":
        fn = _onnx_runner(arg, layer)
    elif kind in ("torchscript", "torch"):
        import torch

        model, captured = _load_torch(spec, layer)

        def fn(b):
            with torch.no_grad():
                out = model(_torch_batch(b))
                z = captured["z"] if captured is not None else out
            return z.reshape(z.shape[0], -1).float().numpy()
    else:
        raise HetbenchError(
            f"unknown embedder '{spec}'; choose task[:EPOCHS], pixels[:S], hog, color-hist, column:NAME, torchscript:PATH, "
            "onnx:PATH or torch:MODULE:FACTORY"
        )
    parts = []
    with progress_bar(f"embedding {n:,} images ({kind})", n, quiet) as bar:
        for batch in iter_images(ds):
            parts.append(np.asarray(fn(batch), dtype=np.float32))
            bar.update(len(batch))
    return _check(np.concatenate(parts) if parts else np.zeros((0, 1), np.float32), n, spec)


def _check(values: np.ndarray, n: int, spec: str) -> np.ndarray:
    if values.ndim != 2 or values.shape[0] != n:
        raise HetbenchError(f"embedder '{spec}' returned shape {values.shape}, expected ({n}, d)")
    if not np.isfinite(values).all():
        raise HetbenchError(f"embedder '{spec}' returned non-finite values")
    return np.ascontiguousarray(values, dtype=np.float32)
