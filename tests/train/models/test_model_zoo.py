"""The trainer's model zoo: shapes, the features/classifier contract, parameter counts, norms, the registry."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hetbench.errors import HetbenchError
from hetbench.registry import Registry
from hetbench.train.models import MODEL_NAMES, MODELS, build_model, count_parameters, default_model
from hetbench.train.models.norm import group_count

pytestmark = pytest.mark.usefixtures("one_thread")


# (name, in_channels, image_size) for the forward / backward checks
SHAPES = [
    ("digits-cnn", 1, 8),
    ("digits-cnn", 1, 28),
    ("lenet", 1, 28),
    ("lenet", 3, 32),
    ("resnet10", 3, 32),
    ("resnet10", 1, 8),
    ("resnet10", 3, 65),  # ImageNet stem, odd size
    ("resnet18", 3, 32),
    ("mobilenetv3-small", 3, 32),
    ("mobilenetv3-small", 1, 8),
    ("mobilenetv3-small", 3, 65),
]
FEATURE_DIMS = {"digits-cnn": 128, "lenet": 192, "resnet10": 512, "resnet18": 512, "mobilenetv3-small": 1024}


@pytest.mark.parametrize("name,channels,size", SHAPES)
def test_forward_backward_and_contract(name: str, channels: int, size: int) -> None:
    torch.manual_seed(0)
    model = build_model(name, channels, 7, size)
    x = torch.randn(2, channels, size, size)
    model.train()
    logits = model(x)
    assert logits.shape == (2, 7)
    logits.logsumexp(dim=1).sum().backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)

    model.eval()
    with torch.no_grad():
        z = model.features(x)
        assert z.shape == (2, FEATURE_DIMS[name])
        assert isinstance(model.classifier, nn.Linear)
        assert (model.classifier.in_features, model.classifier.out_features) == (FEATURE_DIMS[name], 7)
        torch.testing.assert_close(model(x), model.classifier(z))


def test_every_name_builds() -> None:
    assert MODEL_NAMES == ("digits-cnn", "lenet", "resnet10", "resnet18", "mobilenetv3-small")
    for name in MODEL_NAMES:
        for norm in ("group", "batch", "none"):
            assert count_parameters(build_model(name, 3, 10, 16, norm=norm)) > 0


def test_torchvision_parameter_counts() -> None:
    assert count_parameters(build_model("resnet18", 3, 1000, 224, norm="batch")) == 11_689_512
    assert count_parameters(build_model("mobilenetv3-small", 3, 1000, 224, norm="batch")) == 2_542_856


def test_stems_do_not_change_parameter_counts_of_mobilenet() -> None:
    small = build_model("mobilenetv3-small", 3, 1000, 32, norm="batch")
    assert count_parameters(small) == 2_542_856  # stride-1 stem, same layers


def test_hand_counted_small_models() -> None:
    # lenet at 32x32x3: conv 3*64*25+64, conv 64*64*25+64, fc 4096*384+384, fc 384*192+192, cls 192*10+10
    assert count_parameters(build_model("lenet", 3, 10, 32)) == 4864 + 102_464 + 1_573_248 + 73_920 + 1930
    # digits-cnn at 8x8x1: conv 9*32+32, conv 32*64*9+64, fc 64*4*4*128+128, cls 128*10+10
    assert count_parameters(build_model("digits-cnn", 1, 10, 8)) == 320 + 18_496 + 131_200 + 1290
    # norm does not apply to models without normalisation layers
    assert count_parameters(build_model("lenet", 3, 10, 32, norm="batch")) == count_parameters(
        build_model("lenet", 3, 10, 32, norm="none")
    )


@pytest.mark.parametrize("name", ["resnet10", "resnet18", "mobilenetv3-small"])
def test_group_norm_is_used(name: str) -> None:
    model = build_model(name, 3, 10, 32, norm="group")
    kinds = {type(m) for m in model.modules()}
    assert nn.GroupNorm in kinds
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    for m in model.modules():
        if isinstance(m, nn.GroupNorm):
            assert m.num_groups == group_count(m.num_channels)
    batch = build_model(name, 3, 10, 32, norm="batch")
    assert any(isinstance(m, nn.BatchNorm2d) for m in batch.modules())
    assert not any(isinstance(m, nn.GroupNorm) for m in batch.modules())
    none = build_model(name, 3, 10, 32, norm="none")
    assert not any(isinstance(m, (nn.GroupNorm, nn.BatchNorm2d)) for m in none.modules())


def test_group_count() -> None:
    assert [group_count(c) for c in (64, 72, 88, 144, 576, 24, 3, 1)] == [32, 8, 8, 16, 32, 8, 1, 1]


def test_bad_input_raises() -> None:
    with pytest.raises(HetbenchError, match="resnet18"):
        build_model("vgg16", 3, 10, 32)
    with pytest.raises(HetbenchError, match="group"):
        build_model("resnet10", 3, 10, 32, norm="layer")
    with pytest.raises(HetbenchError):
        build_model("lenet", 3, 10, 7)
    with pytest.raises(HetbenchError):
        build_model("lenet", 0, 10, 32)


def test_default_model() -> None:
    assert [default_model(s) for s in (8, 16, 17, 32, 48, 49, 224)] == [
        "digits-cnn", "digits-cnn", "lenet", "lenet", "lenet", "resnet10", "resnet10"
    ]


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_same_seed_same_weights(name: str) -> None:
    def weights(seed: int) -> dict[str, torch.Tensor]:
        torch.manual_seed(seed)
        return build_model(name, 3, 10, 32).state_dict()

    a, b, c = weights(3), weights(3), weights(4)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)


def test_models_are_a_registry_that_names_the_option_and_the_choices() -> None:
    assert isinstance(MODELS, Registry) and MODELS.names() == MODEL_NAMES
    with pytest.raises(HetbenchError) as err:
        build_model("vgg16", 3, 10, 32)
    assert str(err.value) == (
        "unknown model 'vgg16' for model; choose one of: digits-cnn, lenet, resnet10, resnet18, mobilenetv3-small"
    )
