"""``torchscript:PATH`` and ``torch:MODULE:FACTORY``: a user's PyTorch model as the embedder.

Both take (N, 3, H, W) float images in [0, 1] (every image of the split must have one size). A
TorchScript module's output is the embedding. For ``torch:MODULE:FACTORY``, ``MODULE.FACTORY()``
returns an ``nn.Module``; the embedding is the output of the layer named by ``layer`` (``--layer``),
by default the input of its last ``nn.Linear`` (the penultimate layer, as in Borazjani et al.).
Local timm / torchvision weights are served this way, e.g. a factory that builds the model and loads
a checkpoint from disk. Nothing downloads weights.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

from hetbench.embed.images import embed_images
from hetbench.errors import HetbenchError


def torch_batch(batch: list[np.ndarray]):
    """uint8 (H, W, 3) images -> one (N, 3, H, W) float tensor in [0, 1]."""
    import torch

    shapes = {im.shape for im in batch}
    if len(shapes) != 1:
        raise HetbenchError("a torch embedder needs images of one size; resize the data set first")
    x = np.stack(batch).astype(np.float32) / 255.0
    return torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()


def load_torch(spec: str, layer: str | None = None):
    """(model in eval mode, captured activations or None) for ``torchscript:PATH`` or
    ``torch:MODULE:FACTORY``; the hook stores the chosen layer's activation under ``"z"``."""
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
        factory = getattr(importlib.import_module(parts[1]), parts[2])
    except (ImportError, AttributeError) as exc:
        raise HetbenchError(f"cannot build '{spec}': {exc}") from exc
    if not callable(factory):
        raise HetbenchError(f"'{spec}': {parts[1]}.{parts[2]} is a {type(factory).__name__}, not a factory that returns a torch.nn.Module")
    try:
        model = factory()
    except Exception as exc:  # the user's factory: its failure is bad input, not a hetbench bug
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise HetbenchError(f"cannot build '{spec}': {parts[1]}.{parts[2]}() raised {type(exc).__name__}: {detail}") from exc
    if not isinstance(model, torch.nn.Module):
        raise HetbenchError(f"'{spec}' returned a {type(model).__name__}, not a torch.nn.Module")
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
            raise HetbenchError(f"'{spec}' has no nn.Linear layer; name the embedding layer with `layer`")
        linears[-1].register_forward_pre_hook(lambda _m, inputs: captured.__setitem__("z", inputs[0]))
    return model, captured


def embed_torch(table, split: str, spec: str, layer: str | None = None, quiet: bool | None = True) -> np.ndarray:
    """``torchscript:PATH`` or ``torch:MODULE:FACTORY``: the model's (n, d) embedding of ``split``.

    Parameters
    ----------
    table : SampleTable
        The source table; ``split`` must have an image column, all images of one size.
    split : str
        The split to embed.
    spec : str
        ``torchscript:PATH`` (the module's output is the embedding) or ``torch:MODULE:FACTORY``.
    layer : str, optional
        With ``torch:MODULE:FACTORY``: the named module whose output is the embedding (default: the
        input of the last ``nn.Linear``).
    quiet : bool or None
        No progress bar (one over the images, with an ETA); None: as the enclosing
        :func:`hetbench.progress.show_progress` says.

    References
    ----------
    .. [1] K. Borazjani, P. Abdisarabshali, N. Khosravan and S. Hosseinalipour, "Redefining non-IID
       Data in Federated Learning for Computer Vision Tasks: Migrating from Labels to Embeddings for
       Task-Specific Data Distributions", arXiv preprint, 2025 (penultimate-layer embeddings).

    Examples
    --------
    >>> import torch
    >>> from hetbench.embed import embed_table
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> t.splits["train"] = t.splits["train"].select(range(4))
    >>> torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 5))).save("m.pt")
    >>> embed_table(t, "train", "torchscript:m.pt").shape
    (4, 5)
    """
    import torch

    model, captured = load_torch(spec, layer)

    def fn(b):
        with torch.no_grad():
            out = model(torch_batch(b))
            z = captured["z"] if captured is not None else out
        return z.reshape(z.shape[0], -1).float().numpy()

    return embed_images(table.splits[split], fn, spec.partition(":")[0], quiet)
