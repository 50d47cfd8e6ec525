"""Where a run computes: ``--device auto|cpu|cuda|cuda:N|mps`` resolved to a :class:`torch.device`."""

from __future__ import annotations

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
    hetbench.errors.HetbenchError: --device 'tpu' is not one of auto, cpu, cuda, cuda:N, mps
    """
    text = (name or "auto").strip().lower()
    if text == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if text == "cpu":
        return torch.device("cpu")
    m = re.fullmatch(r"cuda(?::(\d+))?", text)
    if m:
        if not torch.cuda.is_available():
            raise HetbenchError(f"--device {text}: torch found no CUDA GPU on this machine (use --device cpu or auto)")
        index = int(m.group(1) or 0)
        if index >= torch.cuda.device_count():
            raise HetbenchError(
                f"--device {text}: this machine has {torch.cuda.device_count()} CUDA GPU(s), numbered from 0")
        return torch.device("cuda", index)
    if text == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise HetbenchError("--device mps: torch found no Apple MPS device on this machine (use --device cpu)")
        return torch.device("mps")
    raise HetbenchError(f"--device '{name}' is not one of {DEVICE_CHOICES}")
