"""Results files: one JSON per (split, algorithm, seed), written atomically (format: ``docs/output-contract.md``).

Layout: ``<out>/<split name>-<fingerprint[:12]>/<algorithm>[-<non-default params>][-<groups>]-s<seed>.json``
(:func:`results_folder_name`: two splits that share a name never share a folder). The document is stable:
keys sorted, floats rounded, so two runs with the same inputs, options and seed give the same file except
for the ``timing`` block (wall-clock seconds).

The document's derived figures are computed here too, from plain lists (no torch), so that the
leaderboard computes the same numbers from a schema-1 document's curves: :func:`curve_statistics` (each
metric's best round and the mean of its last k evaluations) and :func:`group_protocol` (which test groups
were trained on, and each group's accuracy drop from them).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from hetbench.atomic import write_atomic
from hetbench.errors import HetbenchError

#: what every results document says it is, and the version of its layout (``docs/output-contract.md``);
#: the leaderboard reads documents of this kind and of these versions (1: no ``final.best`` /
#: ``final.last_k``, the leaderboard computes them from the curves)
RESULT_KIND = "hetbench-train-result"
SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)

#: the metrics every evaluation records (one curve each), in the order of the curves
EVAL_METRICS = ("accuracy", "client_accuracy", "worst_group_accuracy", "group_accuracy_variance", "loss")
#: the group-protocol metrics (``--train-groups``), one value per evaluation
PROTOCOL_METRICS = ("trained_on_accuracy", "unseen_accuracy", "mean_drop")
#: metrics whose best value is the lowest (the rest: the highest); per-group drops too
LOWER_IS_BETTER = frozenset({"loss", "group_accuracy_variance", "mean_drop", "group_drop"})
#: the default k of the "mean of the last k evaluations" statistic (``--last-k``)
DEFAULT_LAST_K = 3
#: decimals of the derived statistics (means, pooled accuracies, drops)
DIGITS = 6


#: the longest name :func:`_safe` returns: a longer one keeps its start and a digest of the whole (a split
#: named with 300 characters made every result path too long for the file system)
MAX_SAFE_NAME = 120


def _safe(text: str) -> str:
    """``text`` as one file or folder name: letters, digits and ``._+=-``, at most :data:`MAX_SAFE_NAME` long.

    Examples
    --------
    >>> _safe("digits-iid-n10-s0"), _safe("my split/v2")
    ('digits-iid-n10-s0', 'my_split_v2')
    >>> len(_safe("a" * 300)), _safe("a" * 300)[-12:]
    (120, 'a-9835fa6bf4')
    """
    safe = re.sub(r"[^A-Za-z0-9._+=-]+", "_", str(text)).strip("._") or "split"
    if len(safe) <= MAX_SAFE_NAME:
        return safe
    import hashlib

    digest = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe[: MAX_SAFE_NAME - 11]}-{digest}"


def _fmt(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "_".join(_fmt(x) for x in v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


#: hex digits of the split fingerprint in a results folder's name (as many as in the split's shard file names)
FINGERPRINT_DIGITS = 12


def results_folder_name(split_name: str, fingerprint: str) -> str:
    """A split's results folder, ``<split name>-<fingerprint[:12]>``: splits that share a name (two iso-isp
    builds with other ``--clients``) get two folders, the same split (its manifest's ``split_fingerprint``)
    always the same one, where ``--resume`` and ``--skip-existing`` find its results.

    >>> results_folder_name("iso-isp-wb+tone-s0", "0f3a9c27d1b84e55aa"), results_folder_name("my split/v2", "")
    ('iso-isp-wb+tone-s0-0f3a9c27d1b8', 'my_split_v2')
    """
    short = re.sub(r"[^A-Za-z0-9]+", "", str(fingerprint or ""))[:FINGERPRINT_DIGITS]
    return f"{_safe(split_name)}-{short}" if short else _safe(split_name)


def result_path(out: str | os.PathLike, split_name: str, algorithm: str, params: dict, defaults: dict, seed: int,
                *, fingerprint: str) -> Path:
    """Where the result of one run goes: the split's folder (:func:`results_folder_name`), a file named by the
    algorithm, the parameters that differ from the paper's defaults and the seed.

    >>> result_path("res", "digits-n4", "fedprox", {"mu": 0.1}, {"mu": 0.01}, 0, fingerprint="5e1d0c9b8a7f6e").as_posix()
    'res/digits-n4-5e1d0c9b8a7f/fedprox-mu0.1-s0.json'
    """
    changed = [
        f"{k}{_fmt(v)}" for k, v in sorted(params.items())
        if k in defaults and _fmt(v) != _fmt(defaults[k])
    ]
    stem = "-".join([algorithm, *changed, f"s{seed}"])
    return Path(out) / results_folder_name(split_name, fingerprint) / f"{_safe(stem)}.json"


def existing_result(path: Path, overwrite: bool) -> bool:
    """Whether a result file exists at ``path``; with ``overwrite`` it must be a hetbench train result (a JSON
    object whose ``kind`` is ``hetbench-train-result``), or it is refused: ``--overwrite`` never replaces a
    file hetbench did not write.

    Parameters
    ----------
    path : Path
        Where one run's result goes.
    overwrite : bool
        Whether the caller means to replace it.

    Returns
    -------
    bool
        True when ``path`` exists (and, with ``overwrite``, may be replaced).

    Examples
    --------
    >>> import pathlib
    >>> p = pathlib.Path("existing_example.json")
    >>> existing_result(p, overwrite=True)
    False
    >>> _ = p.write_text("my notes")
    >>> existing_result(p, overwrite=True)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: 'existing_example.json' is not a hetbench train result; overwrite replaces only result files hetbench train wrote
    """
    from hetbench.outputs import file_problem

    if not path.exists():
        return False
    if not path.is_file():
        raise HetbenchError(f"'{path}' exists and is not a file")
    problem = file_problem(path, "train-result") if overwrite else None
    if problem is not None:
        raise HetbenchError(f"'{path}' {problem}; `overwrite` replaces only result files hetbench train wrote")
    return True


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n"


def write_result(doc: dict, path: Path) -> None:
    """Write ``doc`` to ``path`` through a temporary file and an atomic rename.

    Parameters
    ----------
    doc : dict
        The results document.
    path : Path
        Where it goes; missing folders are made.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        When it cannot be written (a full or read-only disk, ...): one line; no partial file is left, nor a
        folder made for it.

    Examples
    --------
    >>> write_result({"kind": "hetbench-train-result"}, Path("results/split/fedavg-s0.json"))
    >>> json.loads(Path("results/split/fedavg-s0.json").read_text())
    {'kind': 'hetbench-train-result'}
    """
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, dumps(doc))
    except OSError as exc:
        for folder in missing:  # deepest first: only the folders made for this file, if still empty
            try:
                folder.rmdir()
            except OSError:
                break
        raise HetbenchError(f"cannot write the result '{path}': {exc.strerror or exc}") from None
