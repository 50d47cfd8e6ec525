"""Fingerprints: canonical JSON and sha256 over arrays, the two forms every hetbench hash is built from.

Depends on nothing of hetbench, so every layer may use it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the form every fingerprint hashes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=_json_default)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def sha256_of_arrays(*arrays: np.ndarray, extra: str = "") -> str:
    """sha256 over the little-endian bytes of each array (dtype and shape included) and a string."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    h.update(extra.encode())
    return h.hexdigest()
