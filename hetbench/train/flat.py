"""One flat parameter vector behind a model, so FL arithmetic is vector arithmetic.

Every parameter of the working model becomes a view into one contiguous float32 vector. Loading the
global model into a client is one ``copy_``, an SGD step is one fused ``add_``, and aggregation,
proximal terms, control variates and masks are operations on vectors of the same length. Floating-point
buffers (BatchNorm running statistics) live in a second flat vector and are averaged like parameters.
"""

from __future__ import annotations

import torch
from torch import nn


class FlatModel:
    """Bind ``model``'s parameters (and float buffers) to flat vectors ``params`` (and ``buffers``).

    Parameters
    ----------
    model : nn.Module
        The model; its parameters and floating-point buffers become views into the flat vectors, with their
        current values.
    params, buffers : torch.Tensor, optional
        1-D float32 tensors (of the model's parameter and float-buffer counts) to bind to instead of new ones:
        a row of a stacked ``(clients, size)`` tensor, so that several models live side by side in one tensor
        (:class:`hetbench.train.lockstep.LockstepGroup`).

    Examples
    --------
    >>> import torch
    >>> rows = torch.zeros(2, 3)
    >>> flat = FlatModel(torch.nn.Linear(2, 1), params=rows[1])
    >>> flat.model.bias.data.fill_(7.0) is not None, rows[1, 2].item()
    (True, 7.0)
    """

    def __init__(self, model: nn.Module, params: torch.Tensor | None = None,
                 buffers: torch.Tensor | None = None) -> None:
        self.model = model
        self.param_list = [p for p in model.parameters()]
        self.params = self._bind(self.param_list, params)
        self.buffer_list = [b for b in model.buffers() if b.is_floating_point()]
        self.buffers = self._bind(self.buffer_list, buffers)
        self.offsets = []
        start = 0
        for p in self.param_list:
            self.offsets.append((start, start + p.numel()))
            start += p.numel()

    @staticmethod
    def _bind(tensors: list[torch.Tensor], out: torch.Tensor | None = None) -> torch.Tensor:
        total = sum(t.numel() for t in tensors)
        device = tensors[0].device if tensors else torch.device("cpu")
        if out is None:
            flat = torch.empty(total, dtype=torch.float32, device=device)
        else:
            if out.dim() != 1 or out.numel() != total or out.dtype != torch.float32 or out.stride(0) != 1:
                raise ValueError(f"cannot bind {total} values to a tensor of shape {tuple(out.shape)}")
            flat = out
        start = 0
        with torch.no_grad():
            for t in tensors:
                n = t.numel()
                flat[start : start + n].copy_(t.detach().reshape(-1))
                t.data = flat[start : start + n].view_as(t)
                start += n
        return flat

    @property
    def size(self) -> int:
        return int(self.params.numel())

    def state(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A copy of (params, buffers)."""
        return self.params.clone(), self.buffers.clone()

    def load(self, params: torch.Tensor, buffers: torch.Tensor | None = None) -> None:
        with torch.no_grad():
            self.params.copy_(params)
            if buffers is not None and buffers.numel():
                self.buffers.copy_(buffers)

    def grad_of(self, loss: torch.Tensor) -> torch.Tensor:
        """The gradient of ``loss`` as one flat vector (zeros for parameters it does not reach)."""
        grads = torch.autograd.grad(loss, self.param_list, allow_unused=True)
        return torch.cat(
            [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, self.param_list)]
        )
