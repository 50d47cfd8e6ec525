"""Channel-wise L1 structured pruning on a flat parameter vector (DapperFL's Model Fusion Pruning, Jia et al.,
NeurIPS 2024, sec. 3.2 and Algorithm 1).

A model's prunable layers are its convolutions (not depthwise) and hidden linear layers, each with the
normalisation layer that directly follows it (:func:`prune_groups`); the classifier is never pruned. A
mask at ratio rho removes the floor(rho C) output channels of lowest L1 norm of every such layer, with
their bias and their normalisation scale and shift (:func:`l1_channel_mask`).

Examples
--------
>>> import torch
>>> from torch import nn
>>> from hetbench.train.flat import FlatModel
>>> model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.GroupNorm(2, 4), nn.Flatten(), nn.Linear(4, 2))
>>> model.classifier = model[3]
>>> flat = FlatModel(model)
>>> groups = prune_groups(model, {id(p): s for p, s in zip(flat.param_list, flat.offsets)})
>>> [g.out_channels for g in groups]
[4]
>>> mask, pruned, total = l1_channel_mask(flat.params, groups, 0.5)
>>> pruned, total
(2, 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

_NORMS = (nn.GroupNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm)


@dataclass
class PruneGroup:
    """One prunable layer: flat slices of its weight (rows = output channels), bias and norm params."""

    out_channels: int
    weight: tuple[int, int]
    bias: tuple[int, int] | None
    norm: list[tuple[int, int]]


def prune_groups(model: nn.Module, offsets: dict[int, tuple[int, int]]) -> list[PruneGroup]:
    """Convolutions (not depthwise) and hidden linear layers in registration order, each paired with the
    normalisation layer that directly follows it; the classifier is never pruned."""
    classifier = getattr(model, "classifier", None)
    groups: list[PruneGroup] = []
    last: PruneGroup | None = None
    for module in model.modules():
        if isinstance(module, nn.Conv2d) and not (module.groups > 1 and module.groups == module.in_channels):
            last = PruneGroup(module.out_channels, offsets[id(module.weight)],
                              offsets[id(module.bias)] if module.bias is not None else None, [])
            groups.append(last)
        elif isinstance(module, nn.Linear) and module is not classifier:
            last = PruneGroup(module.out_features, offsets[id(module.weight)],
                              offsets[id(module.bias)] if module.bias is not None else None, [])
            groups.append(last)
        elif isinstance(module, _NORMS) and last is not None:
            channels = getattr(module, "num_channels", None) or getattr(module, "num_features", None)
            if channels == last.out_channels and getattr(module, "weight", None) is not None:
                last.norm.append(offsets[id(module.weight)])
                if module.bias is not None:
                    last.norm.append(offsets[id(module.bias)])
            last = None
        elif isinstance(module, (nn.Conv2d, nn.Linear)):
            last = None
    return groups


def l1_channel_mask(params: torch.Tensor, groups: list[PruneGroup], ratio: float) -> tuple[torch.Tensor, int, int]:
    """Flat 0/1 mask removing floor(ratio * C) lowest-L1 output channels of every group (at least one
    channel kept); returns (mask, pruned channels, prunable channels)."""
    mask = torch.ones_like(params)
    pruned = total = 0
    for g in groups:
        c = g.out_channels
        total += c
        n = min(int(np.floor(ratio * c + 1e-9)), c - 1)
        if n <= 0:
            continue
        w = params[g.weight[0] : g.weight[1]].view(c, -1)
        order = torch.argsort(w.abs().sum(dim=1), stable=True)
        drop = order[:n]
        mask[g.weight[0] : g.weight[1]].view(c, -1)[drop] = 0.0
        for a, b in ([g.bias] if g.bias else []) + g.norm:
            mask[a:b][drop] = 0.0
        pruned += n
    return mask, pruned, total
