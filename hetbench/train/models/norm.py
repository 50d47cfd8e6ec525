"""Normalisation layers shared by the model zoo.

Federated benchmarks with non-IID clients replace BatchNorm by GroupNorm (Hsu, Qi and Brown, "Federated
Visual Classification with Real-World Data Distribution", ECCV 2020, sec. 6; Hsieh et al., "The Non-IID
Data Quagmire of Decentralized Machine Learning", ICML 2020): batch statistics of one client do not
describe the others, and GroupNorm keeps no running statistics to average.
"""

from __future__ import annotations

from torch import nn

from hetbench.errors import HetbenchError

NORMS: tuple[str, ...] = ("group", "batch", "none")
"""``group``: GroupNorm (default); ``batch``: BatchNorm2d; ``none``: no normalisation (convs get a bias)."""

_GROUP_CHOICES = (32, 16, 8, 4, 2, 1)


def check_norm(norm: str) -> str:
    """``norm`` if it is one of :data:`NORMS`, else a :class:`HetbenchError` naming the choices."""
    if norm not in NORMS:
        raise HetbenchError(f"unknown norm {norm!r}; choose one of: {', '.join(NORMS)}")
    return norm


def group_count(channels: int) -> int:
    """GroupNorm groups for ``channels``: the largest of 32, 16, 8, 4, 2, 1 that divides it."""
    return next(g for g in _GROUP_CHOICES if channels % g == 0)


def make_norm(norm: str, channels: int, *, bn_eps: float = 1e-5, bn_momentum: float = 0.1) -> nn.Module:
    """The normalisation layer after a convolution with ``channels`` outputs (``nn.Identity`` for ``none``).

    ``bn_eps`` / ``bn_momentum`` apply to BatchNorm only (MobileNetV3 uses 1e-3 / 0.01).
    """
    check_norm(norm)
    if norm == "group":
        return nn.GroupNorm(group_count(channels), channels)
    if norm == "batch":
        return nn.BatchNorm2d(channels, eps=bn_eps, momentum=bn_momentum)
    return nn.Identity()


def conv_bias(norm: str) -> bool:
    """Whether a convolution followed by ``make_norm(norm, ...)`` needs its own bias (only without a norm)."""
    return check_norm(norm) == "none"


def init_norm_(module: nn.Module) -> None:
    """Weights 1, biases 0 for every GroupNorm / BatchNorm in ``module`` (the usual initialisation)."""
    for m in module.modules():
        if isinstance(m, (nn.GroupNorm, nn.BatchNorm2d)) and m.affine:
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
