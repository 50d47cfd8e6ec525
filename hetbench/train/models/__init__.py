"""Model zoo of the reference trainer.

Every model is an ``nn.Module`` with ``features(x) -> z`` (the flat ``(batch, d)`` penultimate
representation), a ``classifier`` attribute (the final ``nn.Linear(d, num_classes)``) and
``forward(x) == classifier(features(x))``. Inputs are normalised float ``(B, C, H, W)`` square images of
side at least 8.

- ``digits-cnn``: a small CNN for tiny grayscale digits (:mod:`.digits`);
- ``lenet``: the LeNet-5-like CNN of Hsu et al. 2019/2020 (:mod:`.lenet`);
- ``resnet10`` / ``resnet18``: BasicBlock ResNets, He et al. 2016 (:mod:`.resnet`);
- ``mobilenetv3-small``: Howard et al. 2019 (:mod:`.mobilenetv3`).

``norm`` chooses the normalisation of the models that have one: ``group`` (GroupNorm, the default, after
Hsu et al. 2020), ``batch`` or ``none``.
"""

from __future__ import annotations

import inspect
from typing import Callable

from torch import nn

from hetbench.errors import HetbenchError
from hetbench.registry import Registry

from .digits import DigitsCNN
from .lenet import LeNet
from .mobilenetv3 import MobileNetV3Small
from .norm import NORMS, check_norm
from .profile import profile
from .resnet import ResNet, resnet10, resnet18

MODELS: Registry[Callable[..., nn.Module]] = Registry(
    "model",
    {
        "digits-cnn": DigitsCNN,
        "lenet": LeNet,
        "resnet10": resnet10,
        "resnet18": resnet18,
        "mobilenetv3-small": MobileNetV3Small,
    },
    option="`model`",
)
"""The model factories by their ``--model`` name; each takes ``in_channels``, ``num_classes``,
``image_size`` and, where the model has normalisation layers, ``norm``."""

MODEL_NAMES: tuple[str, ...] = MODELS.names()

MIN_IMAGE_SIZE = 8


def build_model(
    name: str, in_channels: int, num_classes: int, image_size: int, norm: str = "group"
) -> nn.Module:
    """A freshly initialised model ``name`` (one of :data:`MODELS`) for ``image_size`` square images.

    Initial weights come from torch's global generator: seed it (``torch.manual_seed``) for repeatable
    weights. Raises :class:`HetbenchError` for an unknown name or norm, or sizes out of range.

    Examples
    --------
    >>> import torch
    >>> from hetbench.train.models import build_model
    >>> _ = torch.manual_seed(0)
    >>> model = build_model("lenet", in_channels=1, num_classes=10, image_size=28)
    >>> model(torch.zeros(2, 1, 28, 28)).shape
    torch.Size([2, 10])
    """
    MODELS[name]  # an unknown name raises here, listing the valid ones, before the other checks
    check_norm(norm)
    if int(in_channels) < 1:
        raise HetbenchError(f"in_channels must be at least 1, got {in_channels}")
    if int(num_classes) < 1:
        raise HetbenchError(f"num_classes must be at least 1, got {num_classes}")
    if int(image_size) < MIN_IMAGE_SIZE:
        raise HetbenchError(f"image_size must be at least {MIN_IMAGE_SIZE}, got {image_size}")
    return MODELS.call(name, in_channels=int(in_channels), num_classes=int(num_classes), image_size=int(image_size),
                       norm=norm)


def default_model(image_size: int) -> str:
    """The model for ``image_size``: ``digits-cnn`` up to 16 px, ``lenet`` up to 48 px, else ``resnet10``."""
    if image_size <= 16:
        return "digits-cnn"
    if image_size <= 48:
        return "lenet"
    return "resnet10"


def models_with_norm() -> tuple[str, ...]:
    """The models that have normalisation layers (unless ``norm`` is ``none``): those whose factory takes
    ``norm``. ``digits-cnn`` and ``lenet`` have none whatever ``--norm`` says.

    Examples
    --------
    >>> models_with_norm()
    ('resnet10', 'resnet18', 'mobilenetv3-small')
    """
    return tuple(name for name in MODEL_NAMES if "norm" in inspect.signature(MODELS[name]).parameters)


def has_norm_layers(model_name: str, norm: str) -> bool:
    """Whether model ``model_name`` built with ``norm`` has normalisation layers (BatchNorm or GroupNorm), without
    building it (an unknown model or norm raises :class:`HetbenchError`).

    Examples
    --------
    >>> has_norm_layers("resnet10", "batch"), has_norm_layers("resnet10", "none"), has_norm_layers("lenet", "group")
    (True, False, False)
    """
    MODELS[model_name]
    return check_norm(norm) != "none" and model_name in models_with_norm()


def count_parameters(model: nn.Module) -> int:
    """Number of parameters (every tensor in ``model.parameters()``, trainable or not)."""
    return sum(p.numel() for p in model.parameters())


__all__ = [
    "MODELS",
    "MODEL_NAMES",
    "NORMS",
    "DigitsCNN",
    "LeNet",
    "MobileNetV3Small",
    "ResNet",
    "build_model",
    "count_parameters",
    "default_model",
    "has_norm_layers",
    "models_with_norm",
    "profile",
]
