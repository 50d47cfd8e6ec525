"""``onnx:PATH``: an ONNX model run by onnxruntime (``pip install 'hetbench[onnx]'``) as the embedder.

The model takes (N, 3, H, W) float images in [0, 1] (every image of the split must have one size);
the embedding is its first output, or the output named by ``layer`` (``--layer``). Nothing is
downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hetbench.embed.images import embed_images
from hetbench.errors import HetbenchError


def onnx_runner(path: str, output: str | None = None):
    """A batch function running the ONNX model ``path`` on (N, 3, H, W) images in [0, 1]; the
    embedding is ``output`` (default: the first output), flattened per row."""
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


def embed_onnx(table, split: str, arg: str, layer: str | None = None, quiet: bool | None = True) -> np.ndarray:
    """``onnx:PATH``: the ONNX model's (n, d) embedding of ``split``.

    Parameters
    ----------
    table : SampleTable
        The source table; ``split`` must have an image column, all images of one size.
    split : str
        The split to embed.
    arg : str
        ``PATH``, the ``.onnx`` file.
    layer : str, optional
        The model output that is the embedding (default: the first output).
    quiet : bool or None
        No progress bar (one over the images, with an ETA); None: as the enclosing
        :func:`hetbench.progress.show_progress` says.

    Examples
    --------
    A model that flattens the image and multiplies it by a (192, 4) matrix, written with ``onnx``:

    >>> import numpy as np
    >>> from onnx import TensorProto, helper, numpy_helper, save
    >>> w = numpy_helper.from_array(np.ones((192, 4), np.float32), "w")
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("MatMul", ["f", "w"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 8, 8])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])], initializer=[w])
    >>> save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "m.onnx")
    >>> from hetbench.embed import embed_table
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> t.splits["train"] = t.splits["train"].select(range(4))
    >>> embed_table(t, "train", "onnx:m.onnx").shape
    (4, 4)
    """
    return embed_images(table.splits[split], onnx_runner(arg, layer), "onnx", quiet)
