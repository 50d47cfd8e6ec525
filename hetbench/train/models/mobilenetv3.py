"""MobileNetV3-Small: Howard et al., "Searching for MobileNetV3" (ICCV 2019), Table 2.

Inverted residual blocks (Sandler et al., "MobileNetV2", CVPR 2018) with squeeze-and-excitation (Hu et
al., CVPR 2018; squeeze width ``make_divisible(exp / 4, 8)``, hard-sigmoid gate) and hard-swish or ReLU per
Table 2; a 1x1 convolution to 576 channels, global average pooling, a 1024-unit hidden layer with
hard-swish and dropout 0.2, then the classifier. With ``norm="batch"`` at 224 px the layers,
initialisation and parameter count (2,542,856 for 1000 classes) are torchvision's ``mobilenet_v3_small``.

Small images: the paper's stem convolution has stride 2, and the network downsamples by 32 in all; a
32x32 image would be 1x1 after the fourth stride-2 layer. For images up to 64 px the stem uses stride 1
(as CIFAR variants of ImageNet networks do), so a 32x32 image reaches the last stage at 2x2.
Shapes and parameter counts do not change with the stride.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from .norm import conv_bias, init_norm_, make_norm

SMALL_INPUT_MAX_SIZE = 64
"""Largest image side that gets a stride-1 stem."""

BN_EPS = 1e-3
BN_MOMENTUM = 0.01


class BlockConfig(NamedTuple):
    """One row of Table 2: input channels, kernel, expansion size, output channels, SE, hard-swish, stride."""

    in_channels: int
    kernel: int
    expanded: int
    out_channels: int
    use_se: bool
    use_hs: bool
    stride: int


# Howard et al. 2019, Table 2 (MobileNetV3-Small), bneck rows.
SMALL_BLOCKS: tuple[BlockConfig, ...] = (
    BlockConfig(16, 3, 16, 16, True, False, 2),
    BlockConfig(16, 3, 72, 24, False, False, 2),
    BlockConfig(24, 3, 88, 24, False, False, 1),
    BlockConfig(24, 5, 96, 40, True, True, 2),
    BlockConfig(40, 5, 240, 40, True, True, 1),
    BlockConfig(40, 5, 240, 40, True, True, 1),
    BlockConfig(40, 5, 120, 48, True, True, 1),
    BlockConfig(48, 5, 144, 48, True, True, 1),
    BlockConfig(48, 5, 288, 96, True, True, 2),
    BlockConfig(96, 5, 576, 96, True, True, 1),
    BlockConfig(96, 5, 576, 96, True, True, 1),
)
STEM_CHANNELS = 16
LAST_CONV_CHANNELS = 576
HIDDEN = 1024
DROPOUT = 0.2


def make_divisible(value: float, divisor: int = 8) -> int:
    """Round ``value`` to a multiple of ``divisor``, never down by more than 10% (MobileNetV2 code)."""
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if new < 0.9 * value:
        new += divisor
    return new


def conv_norm_act(
    cin: int, cout: int, kernel: int, stride: int, norm: str, act: type[nn.Module] | None, groups: int = 1
) -> nn.Sequential:
    """Convolution ("same" padding), normalisation and an optional activation."""
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=conv_bias(norm)),
        make_norm(norm, cout, bn_eps=BN_EPS, bn_momentum=BN_MOMENTUM),
    ]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    """Global pool, 1x1 conv to ``squeeze`` with ReLU, 1x1 conv back with a hard-sigmoid gate."""

    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.relu = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.gate = nn.Hardsigmoid(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.fc2(self.relu(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    """Expand (1x1, skipped when the expansion size equals the input), depthwise kxk, SE, project (1x1)."""

    def __init__(self, cfg: BlockConfig, norm: str, stride: int) -> None:
        super().__init__()
        act: type[nn.Module] = nn.Hardswish if cfg.use_hs else nn.ReLU
        layers: list[nn.Module] = []
        if cfg.expanded != cfg.in_channels:
            layers.append(conv_norm_act(cfg.in_channels, cfg.expanded, 1, 1, norm, act))
        depthwise = conv_norm_act(cfg.expanded, cfg.expanded, cfg.kernel, stride, norm, act, groups=cfg.expanded)
        layers.append(depthwise)
        if cfg.use_se:
            layers.append(SqueezeExcitation(cfg.expanded, make_divisible(cfg.expanded // 4, 8)))
        layers.append(conv_norm_act(cfg.expanded, cfg.out_channels, 1, 1, norm, None))
        self.block = nn.Sequential(*layers)
        self.use_residual = stride == 1 and cfg.in_channels == cfg.out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.block(x)
        return out + x if self.use_residual else out


class MobileNetV3Small(nn.Module):
    """MobileNetV3-Small; :meth:`features` is the 1024-d hidden vector after hard-swish and dropout.

    ``--model mobilenetv3-small``. Its dropout draws from torch's global generator, so the trainer trains
    it in one thread and reseeds that generator per client update.

    Parameters
    ----------
    in_channels, num_classes, image_size : int
        Image channels, classes and the side of the square images (at least 8); up to 64 px the stem has stride 1, above it stride 2.
    norm : {"group", "batch", "none"}, default "group"
        Normalisation after every convolution (GroupNorm after Hsu et al. 2020).

    References
    ----------
    .. [1] A. Howard, M. Sandler, G. Chu, L.-C. Chen, B. Chen, M. Tan, W. Wang, Y. Zhu, R. Pang,
       V. Vasudevan, Q. V. Le and H. Adam, "Searching for MobileNetV3", ICCV 2019, Table 2
       (MobileNetV3-Small).
    .. [2] M. Sandler, A. Howard, M. Zhu, A. Zhmoginov and L.-C. Chen, "MobileNetV2: inverted residuals and
       linear bottlenecks", CVPR 2018 (the inverted residual block).

    Examples
    --------
    >>> import torch
    >>> from hetbench.train.models import MobileNetV3Small, count_parameters
    >>> model = MobileNetV3Small(in_channels=3, num_classes=10, image_size=32).eval()
    >>> model.features(torch.zeros(1, 3, 32, 32)).shape
    torch.Size([1, 1024])
    """

    def __init__(self, in_channels: int, num_classes: int, image_size: int, norm: str = "group") -> None:
        super().__init__()
        stem_stride = 1 if image_size <= SMALL_INPUT_MAX_SIZE else 2
        stem = conv_norm_act(in_channels, STEM_CHANNELS, 3, stem_stride, norm, nn.Hardswish)
        layers: list[nn.Module] = [stem]
        layers += [InvertedResidual(cfg, norm, cfg.stride) for cfg in SMALL_BLOCKS]
        last_in = SMALL_BLOCKS[-1].out_channels
        layers.append(conv_norm_act(last_in, LAST_CONV_CHANNELS, 1, 1, norm, nn.Hardswish))
        self.body = nn.Sequential(*layers)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(LAST_CONV_CHANNELS, HIDDEN),
            nn.Hardswish(inplace=True),
            nn.Dropout(DROPOUT, inplace=True),
        )
        self.classifier = nn.Linear(HIDDEN, num_classes)
        # torchvision's initialisation
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.01)
                nn.init.zeros_(m.bias)
        init_norm_(self)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The 1024-d hidden representation (after hard-swish and dropout), shape ``(batch, 1024)``."""
        return self.head(self.body(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))
