"""Model cost: parameters and multiply-accumulates (MACs) of one forward pass of one image.

MACs are counted with forward hooks on every ``nn.Conv2d`` and ``nn.Linear``: a convolution costs
``output elements * (in_channels / groups) * kh * kw``, a linear layer ``in_features * out_features`` per
output row. Norms, activations, pooling and additions are not counted (the usual convention, e.g. fvcore /
ptflops / the MobileNetV3 paper's "MAdds").

``live_only=True`` measures a channel-pruned model as if its pruned channels were removed. DapperFL (Jia
et al., "DapperFL: Domain Adaptive Federated Learning with Model Fusion Pruning for Edge Devices", NeurIPS
2024) prunes whole output channels by their L1 norm (structured pruning), leaving all-zero weights, bias and
following-norm affine parameters. A pruned output channel is dead, and so is the input channel of the next
layer that reads it; a layer is then costed with only its live channels:

- ``cout_live``: output channels whose weight slice is not all zero;
- ``cin_live``: channels of the layer's *actual input tensor* that are not identically zero over a fixed
  random batch of 4 images (``torch.Generator`` seeded 0, eval mode) and all spatial positions, in a
  probe pass with linearised activations (below);
- MACs = output positions * ``cout_live`` * (``cin_live`` / groups) * kh * kw; parameters = weight count
  * (``cout_live`` / cout) * (``cin_live`` / cin) + live bias entries.

Depthwise convolutions (``groups == in_channels``) tie output channel ``i`` to input channel ``i`` alone,
so their live channels are those whose weight slice is nonzero *and* whose input is live; MACs = positions
* live * kh * kw and parameters = weight count * live / cout. Bias entries are live where the bias is
nonzero or the channel's weight slice is. Parameters of every other layer (norms etc.) count in full. This
is the standard count for structurally removed channels.

Probe pass: a ReLU zeroes a live unit on all 4 images with probability about 1/16, so a plain forward
would call many unpruned channels (and most flattened FC inputs) dead. During the probe, zero-preserving
activations (ReLU, ReLU6, hard-swish, ...: ``f(0) == 0``) act as the identity and gates with ``f(0) != 0``
(hard-sigmoid, sigmoid) as the logistic sigmoid, which is never 0. A pruned channel is exactly 0 before its
activation, so it stays 0 and its readers see it dead, while a live channel is nonzero: an unpruned model
has live counts equal to its full counts.

Two counts of a pruned model's cost therefore exist. The *structural* MACs above fall roughly as
(1 - rho)^2 for a pruning ratio rho (a pruned output channel also removes the next layer's input
channel). DapperFL's Table 5 reports FLOPs as (1 - rho) x the dense model's count instead:
:func:`dense_equivalent_flops` gives that figure, in MACs, which is what the paper's FLOPs are (see there).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

LIVE_BATCH = 4
LIVE_SEED = 0

_ZERO_PRESERVING = (
    nn.ReLU, nn.ReLU6, nn.Hardswish, nn.Hardtanh, nn.LeakyReLU, nn.ELU, nn.GELU, nn.SiLU, nn.Mish, nn.Tanh
)
_GATES = (nn.Hardsigmoid, nn.Sigmoid)


@dataclass
class LayerCost:
    """The cost of one Conv2d / Linear call (MACs per image) and of its parameters."""

    name: str
    macs: float
    parameters: float
    cin_live: int
    cout_live: int


def _live_inputs(x: torch.Tensor, channel_dim: int) -> torch.Tensor:
    """Boolean mask of input channels that are not identically zero over the batch and positions."""
    dims = tuple(d for d in range(x.dim()) if d != channel_dim)
    return x.detach().abs().amax(dim=dims) > 0


def _live_outputs(weight: torch.Tensor) -> torch.Tensor:
    """Boolean mask of output channels (dim 0) whose weight slice is not all zero."""
    return weight.detach().reshape(weight.shape[0], -1).abs().amax(dim=1) > 0


def _layer_cost(name: str, module: nn.Module, x: torch.Tensor, y: torch.Tensor, live: bool) -> LayerCost:
    weight = module.weight
    cout = weight.shape[0]
    if isinstance(module, nn.Conv2d):
        groups = module.groups
        cin = module.in_channels
        kernel = weight.shape[2] * weight.shape[3]
        positions = y.shape[2] * y.shape[3]
        channel_dim = 1
    else:
        groups = 1
        cin = module.in_features
        kernel = 1
        positions = y.numel() // (y.shape[0] * cout)
        channel_dim = x.dim() - 1
    if not live:
        bias = module.bias.numel() if module.bias is not None else 0
        return LayerCost(name, positions * cout * (cin / groups) * kernel, weight.numel() + bias, cin, cout)
    out_mask = _live_outputs(weight)
    in_mask = _live_inputs(x, channel_dim)
    depthwise = groups > 1 and groups == cin and cout == cin
    if depthwise:
        out_mask = out_mask & in_mask
        cout_live = cin_live = int(out_mask.sum())
        macs = positions * cout_live * kernel
        params = weight.numel() * cout_live / cout
    else:
        cout_live, cin_live = int(out_mask.sum()), int(in_mask.sum())
        macs = positions * cout_live * (cin_live / groups) * kernel
        params = weight.numel() * (cout_live / cout) * (cin_live / cin)
    if module.bias is not None:
        params += int(((module.bias.detach() != 0) | out_mask).sum())
    return LayerCost(name, macs, params, cin_live, cout_live)


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


def _linearise_activations(model: nn.Module) -> list[tuple[nn.Module, object]]:
    """Swap activation forwards for the probe pass; returns what to restore (module, its own forward)."""
    swapped: list[tuple[nn.Module, object]] = []
    for module in model.modules():
        if isinstance(module, _ZERO_PRESERVING):
            replacement = _identity
        elif isinstance(module, _GATES):
            replacement = torch.sigmoid
        else:
            continue
        swapped.append((module, module.__dict__.get("forward")))
        module.forward = replacement
    return swapped


def profile_layers(
    model: nn.Module, in_channels: int, image_size: int, live_only: bool = False
) -> tuple[list[LayerCost], int]:
    """Per-layer costs of every Conv2d / Linear call, and the parameter count of all other layers."""
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    dtype = param.dtype if param is not None else torch.float32
    generator = torch.Generator().manual_seed(LIVE_SEED)
    batch = LIVE_BATCH if live_only else 1
    x = torch.randn(batch, in_channels, image_size, image_size, generator=generator)
    x = x.to(device=device, dtype=dtype)

    costs: list[LayerCost] = []
    counted: set[int] = set()
    handles = []

    def hook(name: str):
        def _record(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
            cost = _layer_cost(name, module, inputs[0], output, live_only)
            if id(module) in counted:  # a module called twice costs MACs twice, parameters once
                cost.parameters = 0
            counted.add(id(module))
            costs.append(cost)

        return _record

    layer_params: set[int] = set()
    for name, module in model.named_modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            handles.append(module.register_forward_hook(hook(name)))
            layer_params.update(id(p) for p in module.parameters(recurse=False))
    swapped = _linearise_activations(model) if live_only else []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
        for module, saved in swapped:
            del module.forward
            if saved is not None:
                module.forward = saved
        model.train(was_training)
    other = sum(p.numel() for p in model.parameters() if id(p) not in layer_params)
    # Conv / Linear layers the forward never reached still hold parameters
    unused = sum(
        p.numel()
        for m in model.modules()
        if isinstance(m, (nn.Conv2d, nn.Linear)) and id(m) not in counted
        for p in m.parameters(recurse=False)
    )
    return costs, other + unused


def profile(model: nn.Module, in_channels: int, image_size: int, live_only: bool = False) -> dict:
    """``{"parameters": int, "macs": int}`` of one forward pass of one ``in_channels x image_size^2`` image.

    ``live_only=True`` counts only live (unpruned) channels; see the module docstring.
    """
    costs, other = profile_layers(model, in_channels, image_size, live_only)
    if not live_only:
        parameters = sum(p.numel() for p in model.parameters())
    else:
        parameters = other + sum(c.parameters for c in costs)
    return {"parameters": int(round(parameters)), "macs": int(round(sum(c.macs for c in costs)))}


def dense_equivalent_flops(dense_macs: float, ratio: float) -> int:
    """DapperFL Table 5's FLOPs of a model pruned at ``ratio``: (1 - rho) x the dense model's count.

    The paper's Table 5 (Appendix D, ResNet-10 on Digits) lists FLOPs 203.34M, 152.50M, 101.67M and
    50.83M at rho = 0.2, 0.4, 0.6, 0.8 (and #Para 3.92M ... 0.98M), exactly (1 - rho) x 254.2M (and
    x 4.90M). 254.2M is ResNet-10's count of multiply-accumulates at 32 x 32 px (253.4M for the
    convolutions and linear layers as :func:`profile` counts them; the rest is what counters such as
    thop add for norm layers), not twice that (506.9M): the paper's "FLOPs" are MACs, one multiply-add
    per FLOP, as common profilers report them. This function therefore scales MACs. It differs from the structural count of ``profile(..., live_only=True)``, which removes the
    pruned channels from both sides of every layer and falls about as (1 - rho)^2.

    Parameters
    ----------
    dense_macs : float
        MACs of one forward pass of the unpruned model (:func:`profile`).
    ratio : float
        The pruning ratio rho, in [0, 1].

    Returns
    -------
    int
        ``round((1 - ratio) * dense_macs)``.

    Examples
    --------
    >>> from hetbench.train.models.profile import dense_equivalent_flops
    >>> dense_equivalent_flops(254_175_000, 0.2)  # Table 5: 203.34M at rho = 0.2
    203340000
    >>> dense_equivalent_flops(1000, 0.0), dense_equivalent_flops(1000, 0.8)
    (1000, 200)
    """
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"pruning ratio must be in [0, 1] (got {ratio})")
    return int(round((1.0 - float(ratio)) * float(dense_macs)))
