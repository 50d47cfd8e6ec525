"""Results files: one JSON per (split, algorithm, seed), written atomically (format: ``docs/output-contract.md``).

Layout: ``<out>/<split name>/<algorithm>[-<non-default params>]-s<seed>.json``. The document is stable:
keys sorted, floats rounded, so two runs with the same inputs, options and seed give the same file except
for the ``timing`` block (wall-clock seconds).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

from hetbench.errors import HetbenchError

#: what every results document says it is, and the version of its layout (``docs/output-contract.md``);
#: the leaderboard reads only documents of this kind and version
RESULT_KIND = "hetbench-train-result"
SCHEMA_VERSION = 1


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", str(text)).strip("._") or "split"


def _fmt(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "_".join(_fmt(x) for x in v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def result_path(out: str | os.PathLike, split_name: str, algorithm: str, params: dict, defaults: dict, seed: int) -> Path:
    """Where the result of one run goes; parameters that differ from the paper's defaults name the file."""
    changed = [
        f"{k}{_fmt(v)}" for k, v in sorted(params.items())
        if k in defaults and _fmt(v) != _fmt(defaults[k])
    ]
    stem = "-".join([algorithm, *changed, f"s{seed}"])
    return Path(out) / _safe(split_name) / f"{_safe(stem)}.json"


def check_free(paths: list[Path], overwrite: bool) -> None:
    """Refuse to replace existing result files unless ``overwrite`` (checked before any training)."""
    taken = [p for p in paths if p.exists()]
    if taken and not overwrite:
        raise HetbenchError(
            f"result file '{taken[0]}' already exists{f' (and {len(taken) - 1} more)' if len(taken) > 1 else ''}; "
            "pass --overwrite to replace"
        )
    for p in paths:
        if p.exists() and not p.is_file():
            raise HetbenchError(f"'{p}' exists and is not a file")


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n"


def write_result(doc: dict, path: Path) -> None:
    """Write ``doc`` to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        tmp.write_text(dumps(doc))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
