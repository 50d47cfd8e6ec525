"""A small CNN for tiny grayscale digits (8x8 scikit-learn / UCI "Optical Recognition of Handwritten
Digits"; also MNIST-sized inputs): two 3x3 convolutions and a 2x2 max-pool as in the Keras MNIST example,
the convolutional front of LeCun et al., "Gradient-Based Learning Applied to Document Recognition"
(Proc. IEEE 1998) scaled down. It has no normalisation layers, so the ``norm`` choice does not apply.
"""

from __future__ import annotations

import torch
from torch import nn

POOLED_SIDE = 4
"""The feature map is average-pooled to at most ``4 x 4`` before the FC layer, so the model stays small
for any image size (identity for 8x8 inputs, whose map is already 4x4 after the max-pool)."""


class DigitsCNN(nn.Module):
    """conv3x3(C->32) ReLU, conv3x3(32->64) ReLU, maxpool2, pool to <=4x4, FC 128 ReLU, classifier.

    :meth:`features` is the 128-d output after its ReLU. ``--model digits-cnn``; the default for images up
    to 16 px.

    Parameters
    ----------
    in_channels, num_classes, image_size : int
        Image channels, classes and the side of the square images (at least 8); the map is pooled to at most 4 x 4, so any size works.

    References
    ----------
    .. [1] Y. LeCun, L. Bottou, Y. Bengio and P. Haffner, "Gradient-based learning applied to document
       recognition", Proc. IEEE 86(11), 1998 (the convolutional front, scaled down as in the Keras MNIST
       example).

    Examples
    --------
    >>> import torch
    >>> from hetbench.train.models import DigitsCNN, count_parameters
    >>> model = DigitsCNN(in_channels=1, num_classes=10, image_size=8)
    >>> count_parameters(model), model(torch.zeros(2, 1, 8, 8)).shape
    (151306, torch.Size([2, 10]))
    """

    def __init__(self, in_channels: int, num_classes: int, image_size: int) -> None:
        super().__init__()
        side = min(POOLED_SIDE, image_size // 2)
        self.encoder = nn.Sequential(
            nn.Conv2d(in_channels, 32, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d(side),
            nn.Flatten(),
        )
        self.fc = nn.Sequential(nn.Linear(64 * side * side, 128), nn.ReLU(inplace=True))
        self.classifier = nn.Linear(128, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The 128-d penultimate representation, shape ``(batch, 128)``."""
        return self.fc(self.encoder(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))
