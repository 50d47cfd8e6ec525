"""The LeNet-5-like CNN of Hsu, Qi and Brown, "Measuring the Effects of Non-Identical Data Distribution
for Federated Visual Classification" (arXiv:1909.06335, 2019) and "Federated Visual Classification with
Real-World Data Distribution" (ECCV 2020): "two 5x5, 64-channel convolution layers, each precedes a 2x2
max-pooling layer, followed by two fully-connected layers with 384 and 192 channels respectively and
finally a softmax linear classifier" (the TensorFlow CIFAR-10 tutorial model, without its local response
normalisation). It has no normalisation layers, so the ``norm`` choice does not apply.
"""

from __future__ import annotations

import torch
from torch import nn


class LeNet(nn.Module):
    """conv5x5(C->64) ReLU pool2, conv5x5(64->64) ReLU pool2, FC 384 ReLU, FC 192 ReLU, classifier.

    The convolutions use padding 2 ("same"), so an ``s x s`` image flattens to ``64 * (s//4)**2``
    (4096 for 32x32). :meth:`features` is the 192-d output after its ReLU. ``--model lenet``; the default
    for images of 17 to 48 px.

    Parameters
    ----------
    in_channels, num_classes, image_size : int
        Image channels, classes and the side of the square images (at least 8).

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Measuring the effects of non-identical data distribution for
       federated visual classification", arXiv:1909.06335, 2019 (the CIFAR-10 model).
    .. [2] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 6.5.

    Examples
    --------
    >>> import torch
    >>> from hetbench.train.models import LeNet, count_parameters
    >>> model = LeNet(in_channels=3, num_classes=10, image_size=32)
    >>> count_parameters(model), model.features(torch.zeros(2, 3, 32, 32)).shape
    (1756426, torch.Size([2, 192]))
    """

    def __init__(self, in_channels: int, num_classes: int, image_size: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(in_channels, 64, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        side = image_size // 2 // 2
        self.fc = nn.Sequential(
            nn.Linear(64 * side * side, 384),
            nn.ReLU(inplace=True),
            nn.Linear(384, 192),
            nn.ReLU(inplace=True),
        )
        self.classifier = nn.Linear(192, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The 192-d penultimate representation, shape ``(batch, 192)``."""
        return self.fc(self.encoder(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))
