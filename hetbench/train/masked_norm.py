"""BatchNorm over the real rows of a padded batch, so a round's clients can train as one stacked computation.

A stacked round (:mod:`hetbench.train.stacked`) pads a client's short batch with rows labelled -100. The loss
leaves them out, but BatchNorm in training mode would take them into its batch statistics. :func:`mask_batch_norm`
swaps every BatchNorm layer of a model for a :class:`MaskedBatchNorm` with the same parameters and buffers (same
names, so ``functional_call`` binds the same state). That layer computes its statistics over the rows a
:class:`RowMask` marks as real:

``mean = sum_i m_i x_i / n``, ``var = sum_i m_i (x_i - mean)^2 / n`` with ``n = sum_i m_i`` times the
positions per channel. This is BatchNorm's training-mode normalisation (Ioffe and Szegedy 2015, Algorithm 1)
over the real rows. The running statistics get PyTorch's update: ``(1 - momentum) r + momentum s``, with the
unbiased variance ``var n / (n - 1)``. With every row real it is ``torch.nn.BatchNorm2d``'s training step up
to the order of float sums. In evaluation mode the layer is plain BatchNorm on its running statistics.

Under ``vmap`` each client's call sees its own rows' mask, statistics and running buffers: the mask is set
inside the vmapped function (:meth:`RowMask.set`), and the running buffers are the client's own rows of the
stacked buffers, updated in place.

References
----------
.. [1] S. Ioffe and C. Szegedy, "Batch normalization: accelerating deep network training by reducing internal
   covariate shift", ICML 2015, Algorithm 1 (the batch statistics) and sec. 3.1 (the running averages used
   at inference; PyTorch's ``momentum`` form).

Examples
--------
>>> import torch
>>> from torch import nn
>>> rows = RowMask()
>>> model = mask_batch_norm(nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2)), rows)
>>> x = torch.randn(4, 1, 3, 3)
>>> padded = torch.cat([x, x[:1].expand(2, -1, -1, -1)])  # two padding rows copy the first
>>> with rows.set(torch.tensor([1.0, 1, 1, 1, 0, 0])):
...     out = model(padded)
>>> reference = nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2))
>>> _ = reference.load_state_dict(model.state_dict())
>>> torch.allclose(out[:4], reference(x), atol=1e-5)
True
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from hetbench.errors import HetbenchError


class RowMask:
    """The mask of real rows (1.0) and padding rows (0.0) that the :class:`MaskedBatchNorm` layers of one model
    read during a forward pass; None outside one (every row is then real)."""

    def __init__(self) -> None:
        self.mask: torch.Tensor | None = None

    @contextmanager
    def set(self, mask: torch.Tensor) -> Iterator[None]:
        """Make ``mask`` (one float per row of the batch) the mask of the forward passes inside the block."""
        self.mask = mask
        try:
            yield
        finally:
            self.mask = None


class MaskedBatchNorm(nn.Module):
    """A BatchNorm layer whose training-mode statistics cover only the rows its :class:`RowMask` marks as real.

    Parameters
    ----------
    bn : torch.nn.modules.batchnorm._BatchNorm
        The layer it replaces: its ``weight``, ``bias``, ``running_mean``, ``running_var`` and
        ``num_batches_tracked`` become this layer's (the same tensors), with its ``eps`` and ``momentum``.
    rows : RowMask
        Where the mask of the current forward pass is read from.
    """

    def __init__(self, bn: nn.modules.batchnorm._BatchNorm, rows: RowMask) -> None:
        super().__init__()
        if bn.momentum is None or not bn.track_running_stats:
            raise HetbenchError("a stacked round masks BatchNorm with a momentum and running statistics only")
        self.rows = rows
        self.eps = float(bn.eps)
        self.momentum = float(bn.momentum)
        self.weight = bn.weight
        self.bias = bn.bias
        self.register_buffer("running_mean", bn.running_mean)
        self.register_buffer("running_var", bn.running_var)
        self.register_buffer("num_batches_tracked", bn.num_batches_tracked)
        self.training = bn.training

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps)
        mask = self.rows.mask
        if mask is None:
            mask = torch.ones(x.shape[0], dtype=x.dtype, device=x.device)
        spread = (1,) * (x.dim() - 2)
        m = mask.to(x.dtype).view(-1, 1, *spread)
        dims = [0, *range(2, x.dim())]
        count = mask.sum() * (x[0, 0].numel())  # real rows times the positions per channel
        mean = (x * m).sum(dims) / count
        centred = x - mean.view(1, -1, *spread)
        var = (centred.square() * m).sum(dims) / count
        out = centred * torch.rsqrt(var + self.eps).view(1, -1, *spread)
        if self.weight is not None:
            out = out * self.weight.view(1, -1, *spread) + self.bias.view(1, -1, *spread)
        # the running averages, in place on this client's buffers (PyTorch's update, unbiased variance)
        self.running_mean.mul_(1.0 - self.momentum).add_(mean.detach() * self.momentum)
        self.running_var.mul_(1.0 - self.momentum).add_((var.detach() * count / (count - 1)) * self.momentum)
        return out


def mask_batch_norm(model: nn.Module, rows: RowMask) -> nn.Module:
    """``model`` with every BatchNorm layer replaced, in place, by a :class:`MaskedBatchNorm` reading ``rows``;
    parameter and buffer names are unchanged."""
    for name, child in list(model.named_children()):
        if isinstance(child, nn.modules.batchnorm._BatchNorm):
            setattr(model, name, MaskedBatchNorm(child, rows))
        else:
            mask_batch_norm(child, rows)
    return model
