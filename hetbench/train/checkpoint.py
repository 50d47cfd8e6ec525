"""Checkpoints of a training run, so a killed run can go on where it stopped (``--checkpoint-every``,
``--resume``).

A checkpoint is one file beside the results JSON (:func:`checkpoint_path`), written through a temporary
file and an atomic rename after every ``checkpoint_every``-th round. It holds

* ``identity``: what the run is (split fingerprint, algorithm and hyper-parameters, the options the results
  record, the model, the hetbench version, the checkpoint format); a run resumes only from its own;
* ``round``: the last finished round;
* ``model``: the global model's parameters and buffers (flat vectors);
* ``algorithm``: :meth:`~hetbench.train.algorithms.base.Algorithm.state_dict` (server and per-client state)
  and the run's per-round diagnostics;
* ``rng``: torch's default generator, and CUDA's on a CUDA run (the numpy generators of a run are derived
  from (seed, round, client) and hold no state);
* ``history``: the curves so far (:class:`~hetbench.train.document.History`);
* ``timing``: the seconds spent so far (training, evaluation, wall clock).

The format runs no code when read: ``torch.save`` of nested dicts, lists and tuples of tensors, numbers,
strings and None, loaded with ``torch.load(weights_only=True)``; numpy arrays travel as tensors tagged
``{"__ndarray__": tensor}``. No class is pickled.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hetbench import __version__
from hetbench.atomic import atomic_file
from hetbench.errors import HetbenchError
from hetbench.train.algorithms import Algorithm, RunState, TrainConfig
from hetbench.train.data import FederatedData
from hetbench.train.document import History

FORMAT = "hetbench-train-checkpoint"
FORMAT_VERSION = 2  # 2: per-round algorithm diagnostics (a version-1 run resumed would lack its early rounds)
_NDARRAY = "__ndarray__"
_SECTIONS = ("identity", "round", "model", "algorithm", "log", "rng", "history", "timing")


def checkpoint_path(result_path: Path) -> Path:
    """Where the checkpoint of the run whose results go to ``result_path`` is kept: beside it, ``.ckpt``.

    Examples
    --------
    >>> from pathlib import Path
    >>> checkpoint_path(Path("results/mnist/fedavgm-server_lr0.5-s0.json")).as_posix()
    'results/mnist/fedavgm-server_lr0.5-s0.ckpt'
    """
    return Path(result_path).with_suffix(".ckpt")


def _partial(path: Path) -> Path:
    """The temporary file a checkpoint is written to before the rename (one per checkpoint: a write that was
    killed leaves at most this file, which the next write replaces)."""
    return path.parent / f".{path.name}.partial"


def remove_checkpoint(path: Path) -> None:
    """Delete a checkpoint and the temporary file of an interrupted write, where they exist."""
    for p in (Path(path), _partial(Path(path))):
        if p.is_file():
            p.unlink()


# -- encoding -----------------------------------------------------------------------------------------
def encode(value: Any) -> Any:
    """``value`` as what ``torch.load(weights_only=True)`` reads back: tensors on the CPU, numpy arrays as
    tagged tensors, numpy scalars as Python numbers; containers recursively.

    Examples
    --------
    >>> import numpy as np
    >>> encode({"n": np.int64(3), "a": np.array([True, False])})
    {'n': 3, 'a': {'__ndarray__': tensor([ True, False])}}
    """
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        whole = t.untyped_storage().nbytes() == t.numel() * t.element_size()
        return t if whole and t.is_contiguous() else t.clone()  # a view would save its whole storage
    if isinstance(value, np.ndarray):
        return {_NDARRAY: torch.from_numpy(np.array(value, copy=True))}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(encode(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a checkpoint cannot hold a {type(value).__name__}")


def decode(value: Any, device: torch.device | None = None) -> Any:
    """The inverse of :func:`encode`; tensors go to ``device`` (None: stay on the CPU).

    Examples
    --------
    >>> decode(encode({"a": np.arange(2), "t": [torch.ones(1)]}))
    {'a': array([0, 1]), 't': [tensor([1.])]}
    """
    if isinstance(value, torch.Tensor):
        return value if device is None else value.to(device)
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get(_NDARRAY), torch.Tensor):
            return value[_NDARRAY].numpy().copy()
        return {k: decode(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(decode(v, device) for v in value)
    return value


def _plain(value: Any) -> Any:
    """JSON-like form for comparing identities: tuples as lists, numpy numbers as Python numbers."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- identity -----------------------------------------------------------------------------------------
def run_identity(data: FederatedData, algorithm: Algorithm, config: TrainConfig) -> dict[str, Any]:
    """What a run is, flat (``algorithm.<param>``, ``config.<option>``): two runs with the same identity
    compute the same results, so one may resume from the other's checkpoint.

    Runtime options (workers, device, cache directory, checkpoint interval) are not part of it.
    """
    return {
        "checkpoint_format": FORMAT_VERSION,
        "hetbench_version": __version__,
        "split.fingerprint": data.fingerprint,
        "algorithm": algorithm.name,
        **{f"algorithm.{k}": _plain(v) for k, v in sorted(algorithm.params.items())},
        **{f"config.{k}": _plain(v) for k, v in sorted(config.result_options().items())},
        "model": config.model_for(data.image_size),
    }


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _first_difference(saved: dict[str, Any], current: dict[str, Any]) -> str | None:
    for key in [*current, *(k for k in saved if k not in current)]:
        if key not in saved:
            return f"{key} is missing there"
        if key not in current:
            return f"{key} is {_short(saved[key])} there and missing here"
        if saved[key] != current[key]:
            return f"{key} is {_short(saved[key])} there, {_short(current[key])} here"
    return None


# -- reading ------------------------------------------------------------------------------------------
def read_checkpoint(path: Path, identity: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint at ``path``, as saved (tensors on the CPU), once it is known to be this run's.

    Raises
    ------
    HetbenchError
        One line: no file, a file torch cannot read or that is no hetbench checkpoint, or a checkpoint of
        another configuration (naming the first key that differs).
    """
    path = Path(path)
    if not path.is_file():
        raise HetbenchError(f"cannot resume: no checkpoint at '{path}' (run without `resume` to start over)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types here (zip, unpickling, EOF, runtime)
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
        raise HetbenchError(f"cannot resume: checkpoint '{path}' is unreadable ({reason}); delete it to start over"
                            ) from None
    if not (isinstance(state, dict) and state.get("format") == FORMAT and all(k in state for k in _SECTIONS)
            and isinstance(state["identity"], dict)):
        raise HetbenchError(f"cannot resume: '{path}' is not a hetbench training checkpoint")
    diff = _first_difference(state["identity"], _plain(identity))
    if diff is not None:
        raise HetbenchError(f"cannot resume: checkpoint '{path}' is of another run configuration: {diff}")
    return state


def check_resumable(path: Path, data: FederatedData, algorithm: Algorithm, config: TrainConfig) -> None:
    """Refuse (:class:`~hetbench.errors.HetbenchError`, one line) unless ``run_training(..., checkpoint=path,
    resume=True)`` can continue from ``path``: the file exists, reads as a hetbench checkpoint and was
    written by a run of the same split, algorithm, hyper-parameters, options, model and hetbench version.

    Parameters
    ----------
    path : Path
        The checkpoint (:func:`checkpoint_path` of the results file).
    data, algorithm, config
        The run that would resume (as given to :func:`~hetbench.train.simulation.run_training`).
    """
    config = config.for_algorithm(algorithm).check()
    read_checkpoint(path, run_identity(data, algorithm, config))


# -- writing ------------------------------------------------------------------------------------------
def save_checkpoint(path: Path, identity: dict[str, Any], round_index: int, run: RunState, algorithm: Algorithm,
                    history: History, timing: dict[str, float]) -> None:
    """Write the state after round ``round_index`` to ``path`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    device = run.global_params.device
    rng = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        rng["cuda"] = torch.cuda.get_rng_state(device)
    state = {
        "format": FORMAT,
        "identity": _plain(identity),
        "round": int(round_index),
        "model": {"params": encode(run.global_params), "buffers": encode(run.global_buffers)},
        "algorithm": encode(algorithm.state_dict()),
        "log": encode(run.log),
        "rng": rng,
        "history": encode({f.name: getattr(history, f.name) for f in dataclasses.fields(history) if f.init}),
        "timing": {k: float(v) for k, v in timing.items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, tmp=_partial(path), fsync=True) as tmp, open(tmp, "wb") as fh:
        torch.save(state, fh)


def restore_checkpoint(path: Path, identity: dict[str, Any], run: RunState,
                       algorithm: Algorithm) -> tuple[int, History, dict[str, float]]:
    """Put the run back in the state the checkpoint at ``path`` saved; returns (last finished round, the
    history so far, the seconds spent so far). Call after ``algorithm.setup(run)``."""
    state = read_checkpoint(path, identity)
    device = run.global_params.device
    try:
        params = state["model"]["params"].to(device)
        buffers = state["model"]["buffers"].to(run.global_buffers.device)  # an empty buffer vector stays on the CPU
        if params.shape != run.global_params.shape or buffers.shape != run.global_buffers.shape:
            raise ValueError("the model's size differs")
        history = History(**decode(state["history"]))
        algo_state = decode(state["algorithm"], device)
        log = decode(state["log"])
        rng = state["rng"]
        timing = {k: float(v) for k, v in state["timing"].items()}
        last = int(state["round"])
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
        raise HetbenchError(f"cannot resume: checkpoint '{path}' is damaged ({reason})") from None
    run.global_params, run.global_buffers = params, buffers
    run.log = log
    run.round = last
    algorithm.load_state_dict(algo_state)
    torch.set_rng_state(rng["torch"])
    if device.type == "cuda" and "cuda" in rng:
        torch.cuda.set_rng_state(rng["cuda"], device)
    return last, history, timing


__all__ = ["FORMAT_VERSION", "check_resumable", "checkpoint_path", "decode", "encode", "read_checkpoint",
           "remove_checkpoint", "restore_checkpoint", "run_identity", "save_checkpoint"]
