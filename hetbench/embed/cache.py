"""Reusing the stored embeddings of a build when it is remade, keyed by content.

An embedding split stores the embeddings it was partitioned on (:mod:`hetbench.publish.embeddings`).
Rebuilding over that folder (``--out`` of an existing build with ``--overwrite``) reuses them
instead of embedding again, but only when everything that decides them is the same: the source's
input fingerprint, the embedder spec and layer, the hetbench version and, for an embedder read from
a model file, the file's sha256 (:func:`model_digest`), and when every file matches its digest.
Anything else (another model file under the same name, a truncated or pickled ``.npy``, a
malformed manifest) is ignored: the embeddings are computed again, after one warning line when the
stored ones were damaged.
"""

from __future__ import annotations

import hashlib
import importlib.util
import warnings
from pathlib import Path

import numpy as np


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_digest(spec: str | None) -> str | None:
    """sha256 of the model file an embedder spec reads, or None for a built-in embedder.

    ``torchscript:PATH`` and ``onnx:PATH`` read PATH; ``torch:MODULE:FACTORY`` reads MODULE's source
    file (found without importing it). Nothing is imported or run.

    Examples
    --------
    >>> from hetbench.embed.cache import model_digest
    >>> model_digest("hog") is None, model_digest("torchscript:no-such-model.pt") is None
    (True, True)
    >>> _ = open("m.onnx", "wb").write(b"model")
    >>> model_digest("onnx:m.onnx")[:12]
    '9372c470eead'
    """
    if not isinstance(spec, str):
        return None
    from hetbench.local_paths import MODEL_FILE_EMBEDDERS

    kind, _, arg = spec.partition(":")
    path: Path | None = None
    if kind in MODEL_FILE_EMBEDDERS:
        path = Path(arg)
    elif kind == "torch":
        module = arg.rpartition(":")[0] or arg
        try:
            found = importlib.util.find_spec(module) if "." not in module else None
        except (ImportError, ValueError):
            found = None
        path = Path(found.origin) if found is not None and found.origin else None
    if path is None or not path.is_file():
        return None
    return _file_sha256(path)


def reusable_embeddings(out, table, spec: str, layer: str | None) -> dict[str, np.ndarray] | None:
    """The embeddings stored in the build at ``out`` when they were made from the same source,
    embedder, layer, model file and hetbench version; None otherwise (module notes).

    Examples
    --------
    >>> from hetbench.embed.cache import reusable_embeddings
    >>> reusable_embeddings(None, None, "hog", None), reusable_embeddings("no-build-here", None, "hog", None)
    (None, None)
    """
    from hetbench.errors import HetbenchError
    from hetbench.contract.embeddings import read_embeddings
    from hetbench.errors import Mismatch
    from hetbench.contract import MANIFEST_NAME, read_manifest
    from hetbench.version import __version__

    if not out or not (Path(out) / MANIFEST_NAME).is_file():
        return None
    try:
        manifest = read_manifest(out)
        params = manifest["recipe"]["partition"].get("params") or {}
        entry = manifest.get("embeddings") or {}
        from hetbench.local_paths import public_value

        same = (manifest.get("input_fingerprint") == table.fingerprint and params.get("embedder") == public_value("embedder", spec)[0]
                and params.get("layer") == layer and manifest.get("hetbench_version") == __version__)
        if not same or not entry:
            return None
        digest = model_digest(spec)
        if any(info.get("model_sha256") != digest for info in entry.values() if isinstance(info, dict)):
            return None
        return read_embeddings(out, manifest)
    except (HetbenchError, Mismatch, OSError, KeyError, TypeError, AttributeError) as exc:
        warnings.warn(f"the stored embeddings of '{out}' are damaged ({str(exc).splitlines()[0][:160]}); "
                      "embedding again", stacklevel=2)
        return None


__all__ = ["model_digest", "reusable_embeddings"]
