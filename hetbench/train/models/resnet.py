"""BasicBlock ResNets: He, Zhang, Ren and Sun, "Deep Residual Learning for Image Recognition" (CVPR 2016).

ResNet-18 has stage depths ``[2, 2, 2, 2]`` (Table 1); ResNet-10 is its ``[1, 1, 1, 1]`` variant, common
in federated benchmarks. Widths are 64, 128, 256, 512. Images up to 64 px get the CIFAR stem of the paper's
sec. 4.2 (one 3x3 stride-1 convolution, no max-pool); larger images get the ImageNet stem (7x7 stride-2
convolution and 3x3 stride-2 max-pool). With ``norm="batch"`` at 224 px the layers, initialisation and
parameter count (11,689,512 for 1000 classes) are torchvision's ``resnet18``; ``norm="group"`` swaps each
BatchNorm for GroupNorm (Hsu et al., ECCV 2020).
"""

from __future__ import annotations

import torch
from torch import nn

from .norm import conv_bias, init_norm_, make_norm

CIFAR_STEM_MAX_SIZE = 64
"""Largest image side that gets the CIFAR stem (3x3 stride 1, no max-pool)."""

WIDTHS: tuple[int, ...] = (64, 128, 256, 512)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut; a 1x1 projection when the shape changes (option B)."""

    def __init__(self, in_planes: int, planes: int, stride: int, norm: str) -> None:
        super().__init__()
        bias = conv_bias(norm)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=bias)
        self.norm1 = make_norm(norm, planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=bias)
        self.norm2 = make_norm(norm, planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=bias), make_norm(norm, planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return self.relu(out + self.downsample(x))


class ResNet(nn.Module):
    """A BasicBlock ResNet; :meth:`features` is the global-average-pooled 512-d vector.

    Parameters
    ----------
    depths : tuple of int
        BasicBlocks per stage (widths 64, 128, 256, 512): ``(2, 2, 2, 2)`` is ResNet-18.
    in_channels, num_classes, image_size : int
        Image channels, classes and the side of the square images (at least 8); up to 64 px the CIFAR stem, above it the ImageNet stem.
    norm : {"group", "batch", "none"}, default "group"
        Normalisation after every convolution (GroupNorm after Hsu et al. 2020).

    References
    ----------
    .. [1] K. He, X. Zhang, S. Ren and J. Sun, "Deep residual learning for image recognition", CVPR 2016,
       Table 1 (stage depths) and sec. 4.2 (the CIFAR stem).
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 6 (GroupNorm instead of BatchNorm).

    Examples
    --------
    >>> from hetbench.train.models import ResNet, count_parameters
    >>> count_parameters(ResNet((1, 1, 1, 1), in_channels=3, num_classes=10, image_size=32))
    4903242
    """

    def __init__(
        self,
        depths: tuple[int, ...],
        in_channels: int,
        num_classes: int,
        image_size: int,
        norm: str = "group",
    ) -> None:
        super().__init__()
        bias = conv_bias(norm)
        if image_size <= CIFAR_STEM_MAX_SIZE:
            self.stem = nn.Sequential(
                nn.Conv2d(in_channels, WIDTHS[0], 3, stride=1, padding=1, bias=bias),
                make_norm(norm, WIDTHS[0]),
                nn.ReLU(inplace=True),
            )
        else:
            self.stem = nn.Sequential(
                nn.Conv2d(in_channels, WIDTHS[0], 7, stride=2, padding=3, bias=bias),
                make_norm(norm, WIDTHS[0]),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, stride=2, padding=1),
            )
        stages: list[nn.Module] = []
        in_planes = WIDTHS[0]
        for i, (planes, depth) in enumerate(zip(WIDTHS, depths)):
            blocks = []
            for j in range(depth):
                stride = 2 if (i > 0 and j == 0) else 1
                blocks.append(BasicBlock(in_planes, planes, stride, norm))
                in_planes = planes
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.classifier = nn.Linear(in_planes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        init_norm_(self)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The global-average-pooled 512-d representation, shape ``(batch, 512)``."""
        return self.pool(self.stages(self.stem(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def resnet10(in_channels: int, num_classes: int, image_size: int, norm: str = "group") -> ResNet:
    """ResNet-10: one BasicBlock per stage (``--model resnet10``; the default above 48 px).

    Parameters
    ----------
    in_channels, num_classes, image_size, norm
        As for :class:`ResNet` (``norm`` defaults to ``"group"``).

    References
    ----------
    .. [1] He et al. 2016 (see :class:`ResNet`): the 18-layer network of Table 1 with one block per stage.

    Examples
    --------
    >>> import torch
    >>> from hetbench.train.models import resnet10
    >>> resnet10(in_channels=1, num_classes=4, image_size=8)(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 4])
    """
    return ResNet((1, 1, 1, 1), in_channels, num_classes, image_size, norm)


def resnet18(in_channels: int, num_classes: int, image_size: int, norm: str = "group") -> ResNet:
    """ResNet-18 (He et al. 2016, Table 1): two BasicBlocks per stage (``--model resnet18``).

    Parameters
    ----------
    in_channels, num_classes, image_size, norm
        As for :class:`ResNet` (``norm`` defaults to ``"group"``).

    References
    ----------
    .. [1] He et al. 2016 (see :class:`ResNet`), Table 1, the 18-layer column.

    Examples
    --------
    >>> from hetbench.train.models import count_parameters, resnet18
    >>> count_parameters(resnet18(in_channels=3, num_classes=1000, image_size=224, norm="batch"))  # torchvision's
    11689512
    """
    return ResNet((2, 2, 2, 2), in_channels, num_classes, image_size, norm)
