"""Where a run computes: ``--device auto|cpu|cuda|cuda:N|mps`` resolved to a :class:`torch.device`, the
determinism settings a CUDA run uses, ``--amp`` (bf16 autocast, CUDA only) and host-to-device copies.

On CUDA, :func:`resolve_device` makes the run as repeatable as the GPU allows before any kernel runs:
cuDNN deterministic with benchmarking off, ``torch.use_deterministic_algorithms(True, warn_only=True)``
(an operation with no deterministic CUDA kernel warns instead of failing) and cuBLAS's fixed workspace
(``CUBLAS_WORKSPACE_CONFIG=:4096:8`` unless already set). :func:`device_info` reports them for the
results document. On CPU nothing changes: results are bit-identical run to run and for any number of
workers.
"""

from __future__ import annotations

import contextlib
import os
import re

import torch

from hetbench.errors import HetbenchError

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N, mps"


def resolve_device(name: str | None) -> torch.device:
    """The torch device ``name`` stands for, refusing one this machine does not have.

    Parameters
    ----------
    name : str or None
        ``auto`` (or None): CUDA when available, else CPU; ``cpu``; ``cuda`` / ``cuda:N``; ``mps``.

    Raises
    ------
    HetbenchError
        For an unknown name, or a device torch cannot use here (no CUDA, GPU index out of range, no MPS).

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: device 'tpu' is not one of auto, cpu, cuda, cuda:N, mps
    """
    text = (name or "auto").strip().lower()
    if text == "auto":
        text = "cuda" if torch.cuda.is_available() else "cpu"
    if text == "cpu":
        return torch.device("cpu")
    m = re.fullmatch(r"cuda(?::(\d+))?", text)
    if m:
        if not torch.cuda.is_available():
            raise HetbenchError(f"`device` {text}: torch found no CUDA GPU on this machine (use `device` cpu or auto)")
        index = int(m.group(1) or 0)
        if index >= torch.cuda.device_count():
            raise HetbenchError(
                f"`device` {text}: this machine has {torch.cuda.device_count()} CUDA GPU(s), numbered from 0")
        configure_determinism()
        return torch.device("cuda", index)
    if text == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise HetbenchError("`device` mps: torch found no Apple MPS device on this machine (use `device` cpu)")
        return torch.device("mps")
    raise HetbenchError(f"`device` '{name}' is not one of {DEVICE_CHOICES}")


#: cuBLAS workspace that makes its reductions deterministic (NVIDIA cuBLAS docs, "Results reproducibility")
CUBLAS_WORKSPACE = ":4096:8"


def configure_determinism() -> dict:
    """Make CUDA kernels as deterministic as torch allows (see the module docstring); returns
    :func:`determinism_settings`. Idempotent; CPU runs do not need it."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    return determinism_settings()


def determinism_settings() -> dict:
    """The settings that decide whether CUDA results repeat, as they are now."""
    return {
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "deterministic_warn_only": bool(torch.is_deterministic_algorithms_warn_only_enabled()),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
    }


def check_amp(device: torch.device, amp: bool) -> None:
    """Refuse ``--amp`` (bf16 autocast) anywhere but on a CUDA device.

    Examples
    --------
    >>> check_amp(torch.device("cpu"), False)
    >>> check_amp(torch.device("cpu"), True)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: amp (bf16 autocast) needs a CUDA device; this run is on cpu (drop amp)
    """
    if amp and torch.device(device).type != "cuda":
        raise HetbenchError(f"`amp` (bf16 autocast) needs a CUDA device; this run is on {device} (drop `amp`)")


def device_info(device: torch.device | str, amp: bool = False) -> dict:
    """What a run computed on, for the results document: ``type``, ``name`` (the GPU's, or the device
    type), ``amp`` and ``deterministic``: on CUDA the settings in force (:func:`determinism_settings`), else
    None (nothing to set: CPU results are bit-identical run to run).

    Raises :class:`HetbenchError` for ``amp`` off CUDA (:func:`check_amp`).

    Examples
    --------
    >>> device_info("cpu")
    {'type': 'cpu', 'name': 'cpu', 'amp': False, 'deterministic': None}
    """
    device = torch.device(device)
    check_amp(device, amp)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return {"type": "cuda", "name": torch.cuda.get_device_name(index), "amp": bool(amp),
                "deterministic": determinism_settings()}
    return {"type": device.type, "name": device.type, "amp": bool(amp), "deterministic": None}


def autocast(device: torch.device, amp: bool):
    """bf16 autocast on ``device`` when ``amp`` (CUDA only), else a context that does nothing."""
    if not amp:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``t`` (a CPU tensor) on ``device``: itself on the CPU; on CUDA a non-blocking copy from pinned memory
    (``t`` is pinned first unless it already is)."""
    if device.type == "cpu":
        return t
    if device.type == "cuda":
        return (t if t.is_pinned() else t.pin_memory()).to(device, non_blocking=True)
    return t.to(device)
