"""Embedders: a table's images (or an embedding column) -> an (n, d) float32 matrix.

:func:`embed_table` is the one dispatcher: the spec ``NAME[:ARG]`` (``--embedder``) names an entry
of :data:`EMBEDDERS`, each in a module of its own:

* ``task`` / ``task:EPOCHS`` (default of ``partition embedding``) - the paper's "network trained on
  the task of interest": hetbench's small CNN trained on the table's labels for a few epochs
  (default 3), penultimate layer (:mod:`hetbench.embed.task`);
* ``pixels`` / ``pixels:S`` - the image resized to S x S (default 16), RGB in [0, 1], flattened
  (:mod:`hetbench.embed.pixels`);
* ``hog`` - scikit-image HOG (Dalal & Triggs 2005) of the grey image at 32 x 32 (:mod:`hetbench.embed.hog`);
* ``color-hist`` - a 16-bin histogram per RGB channel, normalised (:mod:`hetbench.embed.color_hist`);
* ``column:NAME`` - embeddings already in the data set (:mod:`hetbench.embed.column`);
* ``torchscript:PATH`` and ``torch:MODULE:FACTORY`` - a user's PyTorch model, by default its
  penultimate layer (:mod:`hetbench.embed.torch_model`);
* ``onnx:PATH`` - an ONNX model run by onnxruntime (:mod:`hetbench.embed.onnx_model`).

Nothing downloads weights. Images are decoded once, in batches, with a progress bar
(:mod:`hetbench.embed.images`); embeddings of a build are cached by :mod:`hetbench.embed.cache`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

from hetbench.embed.color_hist import embed_color_hist
from hetbench.embed.column import embed_column
from hetbench.embed.hog import embed_hog
from hetbench.embed.images import BATCH, UnreadableImage, image_column, iter_images
from hetbench.embed.onnx_model import embed_onnx
from hetbench.embed.pixels import embed_pixels
from hetbench.embed.torch_model import embed_torch
from hetbench.errors import HetbenchError
from hetbench.image_limits import ImageTooLarge
from hetbench.registry import Registry, filter_kwargs


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported on the first call (the task embedder imports torch at load)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        fn = getattr(importlib.import_module(module), name)
        return fn(*args, **filter_kwargs(fn, kwargs))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported when first called."
    return call


def _check_plugin(name: str, fn: Any) -> None:
    """An embedder plugin is a callable ``embed(table, split, arg, ...) -> (n, d) array`` under a name without ``:``."""
    if not callable(fn) or ":" in name:
        raise HetbenchError(f"embedder plugin '{name}' must be a callable under a name without ':' (got {fn!r})")


#: embedder name -> ``embed(table, split, arg, *, spec, layer, quiet) -> (n, d) array`` (each takes
#: the keyword arguments it needs); plugins join through the entry-point group ``hetbench.embedders``
EMBEDDERS: Registry = Registry(
    "embedder",
    {
        "task": _lazy("hetbench.embed.task", "embed_task"),
        "pixels": embed_pixels,
        "hog": embed_hog,
        "color-hist": embed_color_hist,
        "column": embed_column,
        "torchscript": embed_torch,
        "onnx": embed_onnx,
        "torch": embed_torch,
    },
    option="`embedder`", plugins="hetbench.embedders", validate=_check_plugin,
)

_USAGE = ("task[:EPOCHS], pixels[:S], hog, color-hist, column:NAME, torchscript:PATH, onnx:PATH or "
          "torch:MODULE:FACTORY")


def embed_table(table, split: str, spec: str, layer: str | None = None, quiet: bool = True, engine=None) -> np.ndarray:
    """The (n, d) float32 embedding of every row of ``split`` under ``spec``.

    Parameters
    ----------
    table : SampleTable
        The source table.
    split : str
        The split to embed.
    spec : str
        ``NAME[:ARG]``, a name of :data:`EMBEDDERS` (see the module docstring).
    layer : str, optional
        The layer (``torch:``) or output (``onnx:``) that is the embedding.
    quiet : bool
        No progress bar.
    engine : EngineSpec, optional
        ``ray``: the image-feature embedders (``pixels``, ``hog``, ``color-hist``) embed every batch
        of images as a Ray task (:func:`hetbench.embed.images.embed_images`); the others (a model,
        a column) run here. The embedding is the same array whatever runs it.

    Returns
    -------
    numpy.ndarray
        ``(n, d)`` float32, C-contiguous, finite; one row per row of ``split``.

    Raises
    ------
    HetbenchError
        An unknown embedder, a bad argument, or a result of another shape or with non-finite values.

    Examples
    --------
    >>> from hetbench.embed import embed_table
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> t.splits["train"] = t.splits["train"].select(range(5))
    >>> e = embed_table(t, "train", "pixels:8")
    >>> e.shape, e.dtype, embed_table(t, "train", "hog").shape
    ((5, 192), dtype('float32'), (5, 324))
    >>> embed_table(t, "train", "sift")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: unknown embedder 'sift'; choose task[:EPOCHS], pixels[:S], hog, color-hist, column:NAME, torchscript:PATH, onnx:PATH or torch:MODULE:FACTORY
    """
    n = len(table.splits[split])
    kind, _, arg = spec.partition(":")
    if kind not in EMBEDDERS:
        raise HetbenchError(f"unknown embedder '{spec}'; choose {_USAGE}")
    try:
        values = EMBEDDERS.call(kind, table, split, arg=arg, spec=spec, layer=layer, quiet=quiet, engine=engine)
    except (UnreadableImage, ImageTooLarge) as exc:  # every row is embedded: one line naming the split and row
        raise HetbenchError(f"cannot embed split '{split}': {exc}") from None
    return _check(values, n, spec)


def _check(values: np.ndarray, n: int, spec: str) -> np.ndarray:
    if values.ndim != 2 or values.shape[0] != n:
        raise HetbenchError(f"embedder '{spec}' returned shape {values.shape}, expected ({n}, d)")
    if not np.isfinite(values).all():
        raise HetbenchError(f"embedder '{spec}' returned non-finite values")
    return np.ascontiguousarray(values, dtype=np.float32)


__all__ = ["BATCH", "EMBEDDERS", "embed_table", "image_column", "iter_images"]
