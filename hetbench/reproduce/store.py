"""The run store of ``hetbench reproduce``: every training run a claim needs, kept the moment it finishes.

A run is keyed by its content: the claim, the split's fingerprint, the algorithm and its hyper-parameters,
every training option that changes what the run computes (``TrainConfig.result_options``, so not the
device or the worker count), the seed, the group protocol's tag and :data:`TRAINING_REVISION`, the version
of what hetbench's trainer computes. The key is the SHA-256 of that identity written as canonical JSON;
the record is ``<store>/<claim>/<key[:16]>.json``, holding the identity, the machine that ran it and the
results document, compacted to what the verdicts read (:func:`compact`).

``reproduce`` asks the store before training (:meth:`RunStore.get`) and writes each run as it finishes
(:meth:`RunStore.put`, through a temporary file and an atomic rename), so killing the process at any
moment loses at most the run in flight, and re-running the same command trains only what is missing.
A record that does not parse, was written for another identity, or is not a run record is refused in one
line and never used. ``--budget`` gives the store a deadline: once it has passed, a run that is not in
the store is not started (:class:`BudgetSpent`) and its claim is reported ``not run (k of n runs)``.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from hetbench.reproduce.store import RunStore
>>> store = RunStore.open(Path(tempfile.mkdtemp()) / "runs")
>>> store.claim = "demo"
>>> identity = {"split": "ab" * 32, "algorithm": "fedavg", "params": {}, "config": {"rounds": 2}, "seed": 0}
>>> store.get(identity) is None
True
>>> result = {"final": {"accuracy": 50.0, "last_k": {}}, "curves": {"round": [], "accuracy": []}, "groups": {}}
>>> store.put(identity, result, seconds=1.5)
>>> store.get(identity)["final"]
{'accuracy': 50.0, 'last_k': {}}
>>> store.done, store.trained  # the claim's runs found or trained (2: the one put, then found), trained here
(2, 1)
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from hetbench.atomic import write_atomic
from hetbench.errors import HetbenchError

#: the marker file of a store folder
MARKER = "hetbench-store.json"
STORE_FORMAT = "hetbench-run-store/1"
RECORD_FORMAT = "hetbench-run/1"
#: the version of what hetbench's trainer computes for given inputs: bump it whenever a change alters the
#: results of a run (an algorithm's rule, a default, the sampling), so that older records are not reused
TRAINING_REVISION = "44.1"  # issue 44: FedVC draws with replacement, DapperFL's epochs and DAR, FedBN's BN and eval

#: the results document's fields a record leaves out: per-client detail no verdict reads (DapperFL's
#: per-client footprints, one entry per client of the split)
DROPPED_FIELDS = ("clients",)


class BudgetSpent(Exception):
    """``--budget`` has run out: a run that is not in the store is not started."""


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces): the text a key is the hash of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, default=str)


def run_key(claim: str, identity: dict[str, Any]) -> str:
    """The SHA-256 of a run's claim, identity and :data:`TRAINING_REVISION`.

    Examples
    --------
    >>> a = run_key("c", {"seed": 0}); a == run_key("c", {"seed": 0}), a == run_key("c", {"seed": 1}), len(a)
    (True, False, 64)
    """
    text = canonical({"claim": claim, "revision": TRAINING_REVISION, "run": identity})
    return hashlib.sha256(text.encode()).hexdigest()


def compact(doc: dict[str, Any]) -> dict[str, Any]:
    """A results document without the per-client detail no verdict reads (:data:`DROPPED_FIELDS`) and
    without the local path of the split it was trained on (a scratch folder of the run that made it; the
    split is named by its fingerprint).

    Examples
    --------
    >>> compact({"final": {}, "clients": [1, 2], "split": {"fingerprint": "ab", "path": "/tmp/x"}})
    {'final': {}, 'split': {'fingerprint': 'ab'}}
    """
    out = {k: v for k, v in doc.items() if k not in DROPPED_FIELDS}
    if isinstance(out.get("split"), dict) and "path" in out["split"]:
        out["split"] = {k: v for k, v in out["split"].items() if k != "path"}
    return out


def recompact(folder: str | os.PathLike) -> int:
    """Rewrite every record of the store in ``folder`` with :func:`compact` (records written by an older
    version may hold more); returns how many changed. Keys and identities are untouched."""
    changed = 0
    for path in sorted(Path(folder).glob("*/*.json")):
        record = json.loads(path.read_text())
        if record.get("format") != RECORD_FORMAT:
            continue
        small = compact(record["result"])
        if small != record["result"]:
            _write_json(path, {**record, "result": small})
            changed += 1
    return changed


def machine() -> dict[str, str]:
    """Which machine ran a record: host name, processor, Python and torch versions."""
    import torch

    return {"host": platform.node(), "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(), "torch": torch.__version__}


class RunStore:
    """A folder of run records (see the module docstring); :meth:`open` creates or checks one.

    ``claim`` is the claim whose runners are asking (set by ``reproduce`` before each claim); ``done`` and
    ``trained`` count this claim's runs found or trained in this process; ``deadline`` (a
    ``time.monotonic`` value, or None) is ``--budget``'s end.
    """

    def __init__(self, folder: Path, deadline: float | None = None) -> None:
        self.folder = folder
        self.deadline = deadline
        self.claim = ""
        self.done = 0
        self.trained = 0
        self.borrows: tuple[str, ...] = ()
        self.touched: list[str] = []

    @staticmethod
    def check(folder: str | os.PathLike) -> None:
        """Refuse (HetbenchError, one line) a ``folder`` that exists and is not empty and not a run store;
        nothing is written."""
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise HetbenchError(f"`store` '{folder}' is a file, not a run store hetbench wrote")
        if folder.is_dir() and any(folder.iterdir()):
            try:
                doc = json.loads((folder / MARKER).read_text())
            except (OSError, ValueError, RecursionError):
                doc = None
            if not (isinstance(doc, dict) and doc.get("format") == STORE_FORMAT):
                raise HetbenchError(f"`store` '{folder}' is not a run store hetbench wrote (no valid {MARKER}); "
                                    "give an empty or new folder, or one a reproduce run made")

    @classmethod
    def open(cls, folder: str | os.PathLike, deadline: float | None = None) -> "RunStore":
        """The store in ``folder`` (made with its first record when it does not exist or is empty); a folder
        with other content and no store marker is refused in one line (HetbenchError, :meth:`check`)."""
        folder = Path(folder)
        cls.check(folder)
        return cls(folder, deadline)  # the folder and its marker are made with the first record (put)

    def begin_claim(self, claim: str, borrows: tuple[str, ...] = ()) -> None:
        """Count the runs of ``claim`` from now on; a run it asks for that is not in its own records but in
        those of a claim of ``borrows`` with the same identity is copied over (:meth:`get`), so that two
        claims resting on the same runs (dapperfl-ablation on dapperfl-domains' DapperFL) train them once."""
        self.claim, self.done, self.trained = claim, 0, 0
        self.borrows = tuple(borrows)
        self.touched: list[str] = []  # the keys found or kept since, in order

    def path(self, key: str, claim: str | None = None) -> Path:
        return self.folder / (claim or self.claim) / f"{key[:16]}.json"

    def _read(self, path: Path, key: str) -> dict[str, Any]:
        """The record at ``path``, checked to be hetbench's for ``key`` (HetbenchError, one line, if not)."""
        try:
            record = json.loads(path.read_text())
            result = record.get("result") if isinstance(record, dict) else None
            ok = (record.get("format") == RECORD_FORMAT and record.get("key") == key and isinstance(result, dict)
                  and (isinstance(result.get("diverged"), str) or _complete(result)))
        except (OSError, ValueError, RecursionError, AttributeError):
            ok = False
        if not ok:
            raise HetbenchError(f"run store '{self.folder}': '{path.relative_to(self.folder)}' is not a run record "
                                "hetbench wrote for this run (corrupt or foreign); remove it to train the run again")
        return record

    def get(self, identity: dict[str, Any]) -> dict[str, Any] | None:
        """The stored results document of the run ``identity`` (None: not stored). A record that is not one
        hetbench wrote for this identity is refused (HetbenchError), never used. A run found only among the
        records of a claim this one borrows from is copied under this claim, its machine and seconds kept and
        ``borrowed_from`` naming the claim."""
        key = run_key(self.claim, identity)
        path = self.path(key)
        if path.exists():
            record = self._read(path, key)
        else:
            for other in self.borrows:
                other_key = run_key(other, identity)
                if self.path(other_key, other).exists():
                    found = self._read(self.path(other_key, other), other_key)
                    record = {**found, "key": key, "claim": self.claim, "borrowed_from": other}
                    path.parent.mkdir(parents=True, exist_ok=True)
                    _write_json(path, record)
                    break
            else:
                return None
        self.done += 1
        self.touched.append(key)
        return record["result"]

    def check_budget(self) -> None:
        """Raise :class:`BudgetSpent` once the deadline has passed."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise BudgetSpent(self.claim)

    def put(self, identity: dict[str, Any], doc: dict[str, Any], seconds: float) -> None:
        """Keep the run ``identity``'s results (compacted), atomically; ``{"diverged": why}`` keeps a run that
        diverged, so that it is not trained again either."""
        key = run_key(self.claim, identity)
        record = {"format": RECORD_FORMAT, "key": key, "claim": self.claim, "revision": TRAINING_REVISION,
                  "identity": identity, "machine": machine(), "seconds": round(float(seconds), 1),
                  "result": compact(doc)}
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not (self.folder / MARKER).is_file():
                _write_json(self.folder / MARKER, {"format": STORE_FORMAT, "revision": TRAINING_REVISION})
            _write_json(path, record)
        except OSError as exc:
            raise HetbenchError(f"cannot write the run store '{self.folder}': {exc.strerror or exc}") from None
        self.done += 1
        self.trained += 1
        self.touched.append(key)

    def prune(self) -> list[str]:
        """Remove the current claim's records that this claim did not find or keep (runs of settings it no
        longer has); returns their paths relative to the store, sorted. Only a claim whose every run was
        found or kept should be pruned (``reproduce --prune-store`` skips one that ``--budget`` stopped).

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from hetbench.reproduce.store import RunStore
        >>> store = RunStore.open(Path(tempfile.mkdtemp()) / "runs")
        >>> store.begin_claim("x")
        >>> store.put({"seed": 0}, {"final": {}}, 1.0)
        >>> old = store.path("0" * 64); old.write_text("{}")
        2
        >>> store.prune()
        ['x/0000000000000000.json']
        """
        kept = {self.path(key) for key in self.touched}
        folder = self.folder / self.claim
        gone = sorted(p for p in folder.glob("*.json") if p not in kept) if folder.is_dir() else []
        for path in gone:
            path.unlink()
        return [p.relative_to(self.folder).as_posix() for p in gone]

    def records(self) -> list[dict[str, Any]]:
        """The records of the runs the current claim found or kept (for the machines that ran them)."""
        out = []
        for key in dict.fromkeys(self.touched):
            try:
                out.append(json.loads(self.path(key).read_text()))
            except (OSError, ValueError):
                continue
        return out


def _complete(result: dict[str, Any]) -> bool:
    """Whether a stored results document has what the verdicts read: the final metrics with their last-k
    means, the curves and the groups."""
    final, curves = result.get("final"), result.get("curves")
    return (isinstance(final, dict) and isinstance(final.get("last_k"), dict) and isinstance(curves, dict)
            and isinstance(curves.get("round"), list) and isinstance(curves.get("accuracy"), list)
            and isinstance(result.get("groups"), dict))


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(doc, sort_keys=True, indent=1, allow_nan=True) + "\n")
