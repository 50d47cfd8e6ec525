"""What a writing command may replace, and what it must never touch: one overwrite rule for every command.

* **Markers.** ``--overwrite`` replaces only an output of the *same kind* that hetbench wrote, told by a
  marker that must parse (a file merely named like one is not enough), or an empty folder:

  ============== ======================== ===========================================================
  kind           marker                   parses when
  ============== ======================== ===========================================================
  ``split``      ``hetbench.json``        :func:`hetbench.publish.manifest.read_manifest` accepts it
  ``leaderboard`` ``leaderboard.csv``     its header row starts ``split,fingerprint,rank,algorithm,seeds``
  ``claims``     ``claims.json``          a JSON object whose ``format`` starts ``hetbench-claims/``
  ``flower-app`` ``pyproject.toml``       TOML whose ``[tool.flwr.app]`` has ``publisher = "hetbench"``
  ============== ======================== ===========================================================

  The commands that write one file: a ``train`` result replaces only a JSON object whose ``kind`` is
  ``hetbench-train-result``; an ``export`` file only one whose sidecar ``.<name>.hetbench-export.json``
  parses and records the file's sha256.
* **Inputs.** ``--out`` equal to, inside or containing an input (``--dataset``, ``--split``, the results
  folder of ``leaderboard``, ``--raw-dir``, ...) is refused before anything is written. The CLI declares a
  command's inputs (:func:`declared_inputs`); library functions pass theirs to
  :func:`hetbench.atomic.check_out_dir`.

Every refusal is one line (:class:`~hetbench.errors.HetbenchError`, exit code 2).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping

from hetbench.errors import HetbenchError

#: the header a leaderboard's CSV starts with (:data:`hetbench.leaderboard.text.CSV_COLUMNS`)
LEADERBOARD_HEADER = ("split", "fingerprint", "rank", "algorithm", "seeds")
#: what a train result says it is (:data:`hetbench.train.results.RESULT_KIND`)
TRAIN_RESULT_KIND = "hetbench-train-result"
#: what an export's sidecar says it is
EXPORT_KIND = "hetbench-export"
_MAX_MARKER_BYTES = 64 << 20  # a marker larger than this is not one hetbench wrote


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_MARKER_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _json(path: Path) -> object:
    text = _read(path)
    try:
        return None if text is None else json.loads(text)
    except (ValueError, RecursionError):
        return None


def _split_ok(folder: Path) -> bool:
    from hetbench.contract import read_manifest

    try:
        read_manifest(folder)
    except HetbenchError:
        return False
    return True


def _leaderboard_ok(folder: Path) -> bool:
    import csv

    text = _read(folder / "leaderboard.csv")
    if not text:
        return False
    try:
        header = next(csv.reader([text.split("\n", 1)[0]]))
    except (csv.Error, StopIteration):
        return False
    return tuple(header[: len(LEADERBOARD_HEADER)]) == LEADERBOARD_HEADER


def _claims_ok(folder: Path) -> bool:
    """A finished reproduce output (its ``claims.json``), or an interrupted one: only its in-progress mark
    or its run store (``runs/hetbench-store.json``, :mod:`hetbench.reproduce.store`) is written yet."""
    doc = _json(folder / "claims.json")
    if (folder / "claims.json").exists():
        return isinstance(doc, dict) and isinstance(doc.get("format"), str) and doc["format"].startswith("hetbench-claims/")
    mark = _json(folder / ".hetbench-reproduce")  # being written (hetbench.reproduce.output.IN_PROGRESS)
    if isinstance(mark, dict) and str(mark.get("format", "")).startswith("hetbench-claims-in-progress/"):
        return True
    store = _json(folder / "runs" / "hetbench-store.json")
    return isinstance(store, dict) and str(store.get("format", "")).startswith("hetbench-run-store/")


def _flower_app_ok(folder: Path) -> bool:
    import tomllib

    text = _read(folder / "pyproject.toml")
    try:
        doc = tomllib.loads(text) if text is not None else None
    except (tomllib.TOMLDecodeError, RecursionError):
        return False
    app = (doc or {}).get("tool", {}).get("flwr", {}).get("app", {})
    return isinstance(app, dict) and app.get("publisher") == "hetbench" and str(
        (app.get("components") or {}).get("serverapp", "")).startswith("hetbench.flower.")


#: kind -> (marker file, what it is called in messages, whether a folder's marker parses as that kind)
KINDS: dict[str, tuple[str, str, Callable[[Path], bool]]] = {
    "split": ("hetbench.json", "hetbench build", _split_ok),
    "leaderboard": ("leaderboard.csv", "hetbench leaderboard", _leaderboard_ok),
    "claims": ("claims.json", "hetbench reproduce output", _claims_ok),
    "flower-app": ("pyproject.toml", "hetbench Flower app project", _flower_app_ok),
}


def _kind(kind: str) -> tuple[str, str, Callable[[Path], bool]]:
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r} (one of {', '.join(KINDS)})")
    return KINDS[kind]


def marker_problem(folder: str | os.PathLike, kind: str = "split") -> str | None:
    """Why ``--overwrite`` may not replace the existing folder ``folder`` as an output of ``kind`` (None: it may).

    Parameters
    ----------
    folder : path
        An existing folder.
    kind : str
        One of :data:`KINDS`: ``split``, ``leaderboard``, ``claims``, ``flower-app``.

    Returns
    -------
    str or None
        None for an empty folder or one whose marker parses as ``kind``; else the reason, for a message.

    Examples
    --------
    >>> import pathlib
    >>> d = pathlib.Path("marker_example"); d.mkdir()
    >>> marker_problem(d) is None                      # empty
    True
    >>> _ = (d / "hetbench.json").write_text("{}")
    >>> marker_problem(d)
    'is not a hetbench build (its hetbench.json does not parse as one) and not empty'
    >>> _ = (d / "claims.json").write_text('{"format": "hetbench-claims/1"}')
    >>> marker_problem(d, "claims") is None
    True
    """
    marker, what, ok = _kind(kind)
    folder = Path(folder)
    try:
        if next(iter(folder.iterdir()), None) is None:
            return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if ok(folder):
        return None
    why = f"its {marker} does not parse as one" if (folder / marker).exists() else f"no {marker}"
    return f"is not a {what} ({why}) and not empty"


def file_problem(path: str | os.PathLike, kind: str) -> str | None:
    """Why ``--overwrite`` may not replace the existing file ``path`` as a ``train`` result or an ``export``.

    Parameters
    ----------
    path : path
        An existing file.
    kind : str
        ``train-result`` (a JSON object whose ``kind`` is ``hetbench-train-result``) or ``export`` (its
        sidecar ``.<name>.hetbench-export.json`` parses and records the file's sha256).

    Returns
    -------
    str or None
        None when hetbench wrote it; else the reason.

    Examples
    --------
    >>> import pathlib
    >>> p = pathlib.Path("file_problem_example.json")
    >>> _ = p.write_text('{"kind": "hetbench-train-result"}')
    >>> file_problem(p, "train-result") is None
    True
    >>> _ = p.write_text("my notes")
    >>> file_problem(p, "train-result")
    'is not a hetbench train result'
    """
    path = Path(path)
    if kind == "train-result":
        doc = _json(path)
        return None if isinstance(doc, dict) and doc.get("kind") == TRAIN_RESULT_KIND else \
            "is not a hetbench train result"
    if kind == "export":
        doc = _json(export_marker(path))
        if not (isinstance(doc, dict) and doc.get("kind") == EXPORT_KIND):
            return f"is not a hetbench export (no {export_marker(path).name} beside it)"
        return None if doc.get("sha256") == sha256_file(path) else "changed since hetbench exported it"
    raise ValueError(f"unknown file kind {kind!r}")


def export_marker(path: str | os.PathLike) -> Path:
    """The sidecar that marks ``path`` as a file ``hetbench export`` wrote: ``.<name>.hetbench-export.json``.

    Parameters
    ----------
    path : path
        The exported file.

    Returns
    -------
    Path
        Its sidecar, beside it.

    Examples
    --------
    >>> export_marker("out/obs.csv").as_posix()
    'out/.obs.csv.hetbench-export.json'
    """
    path = Path(path)
    return path.with_name(f".{path.name}.{EXPORT_KIND}.json")


def sha256_file(path: str | os.PathLike) -> str | None:
    """The hex sha256 of a file's bytes (None when it cannot be read).

    Parameters
    ----------
    path : path
        The file.

    Returns
    -------
    str or None
        64 hex digits.

    Examples
    --------
    >>> sha256_file("no-such-file") is None
    True
    """
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


# ---- inputs ------------------------------------------------------------------------------------
_DECLARED: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar("hetbench_inputs", default=())

#: the parameters that name what a writing command reads (parameter name -> how a message names it: in Python
#: terms, which the command line prints as its flag, :mod:`hetbench.errors`)
INPUT_OPTIONS = {name: f"`{name}`" for name in ("dataset", "split", "raw_dir", "labels", "device_weights", "data_dir",
                                                "metadata", "image_root", "profiles", "embedder")}


def input_paths(params: Mapping[str, object]) -> dict[str, str]:
    """The inputs among a command's parsed options (:data:`INPUT_OPTIONS`) that name a path on this machine.

    Parameters
    ----------
    params : mapping
        The command's options, by parameter name.

    Returns
    -------
    dict
        Option (as the message names it) -> path; an embedder ``torchscript:PATH`` / ``onnx:PATH`` gives PATH.

    Examples
    --------
    >>> input_paths({"dataset": ".", "name": ".", "embedder": "torchscript:.", "split": "builtin:nope"})
    {'`dataset`': '.', '`embedder`': '.'}
    """
    found = {}
    for name, option in INPUT_OPTIONS.items():
        value = params.get(name)
        if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
            continue
        value = os.fspath(value)
        if name == "embedder":
            scheme, _, rest = value.partition(":")
            if scheme not in ("torchscript", "onnx") or not rest:
                continue
            value = rest
        if os.path.lexists(value):
            found[option] = value
    return found


@contextmanager
def declared_inputs(inputs: Mapping[str, str | os.PathLike]) -> Iterator[None]:
    """Within the block, every output check (:func:`check_inputs` without ``inputs``) also refuses ``inputs``.

    Parameters
    ----------
    inputs : mapping
        Option name -> path the command reads.

    Returns
    -------
    contextmanager

    Examples
    --------
    >>> with declared_inputs({"`dataset`": "."}):
    ...     check_inputs("sub")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out 'sub' is inside the input dataset '.'; choose a folder outside it
    """
    token = _DECLARED.set(_DECLARED.get() + tuple((k, os.fspath(v)) for k, v in inputs.items()))
    try:
        yield
    finally:
        _DECLARED.reset(token)


def _places(path: str | os.PathLike) -> set[Path]:
    """``path`` as written (absolute) and with its symbolic links resolved."""
    absolute = os.path.abspath(os.fspath(path))
    return {Path(absolute), Path(os.path.realpath(absolute))}


def _overlap(target: Path, source: Path) -> str | None:
    if target == source:
        return "is the input"
    if source in target.parents:
        return "is inside the input"
    return "contains the input" if target in source.parents else None


def check_inputs(out: str | os.PathLike, inputs: Mapping[str, str | os.PathLike | None] | None = None) -> None:
    """Refuse an ``out`` equal to, inside or containing an input that exists (symbolic links resolved).

    Parameters
    ----------
    out : path
        The output folder or file.
    inputs : mapping, optional
        Option name -> path read by the command (None values and paths that do not exist are ignored), on
        top of those declared with :func:`declared_inputs`.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        One line naming the option and how ``out`` overlaps it.

    Examples
    --------
    >>> check_inputs("elsewhere", {"`dataset`": "builtin:digits"})
    >>> check_inputs("..", {"`dataset`": "."})
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out '..' contains the input dataset '.'; choose a folder outside it
    """
    pairs = list(_DECLARED.get()) + [(k, os.fspath(v)) for k, v in (inputs or {}).items() if v is not None]
    targets = _places(out)
    for option, given in pairs:
        if not given or not os.path.lexists(given):
            continue
        how = next((h for t in targets for s in _places(given) if (h := _overlap(t, s))), None)
        if how:
            raise HetbenchError(f"`out` '{out}' {how} {option} '{given}'; choose a folder outside it")
