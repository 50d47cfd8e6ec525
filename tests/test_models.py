"""The trainer's model zoo: shapes, the features/classifier contract, parameter counts, norms, profile()."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hetbench.errors import HetbenchError
from hetbench.train.models import MODEL_NAMES, build_model, count_parameters, default_model, profile
from hetbench.train.models.norm import group_count
from hetbench.train.models.profile import profile_layers



@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """These models are tiny: one intra-op thread is as fast and does not spin against a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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


# lenet at 32x32x3, 10 classes, by hand: (MACs, parameters) per layer
LENET_CONV1 = (32 * 32 * 64 * 3 * 25, 3 * 64 * 25 + 64)
LENET_CONV2 = (16 * 16 * 64 * 64 * 25, 64 * 64 * 25 + 64)
LENET_FC1 = (4096 * 384, 4096 * 384 + 384)
LENET_FC2 = (384 * 192, 384 * 192 + 192)
LENET_CLS = (192 * 10, 192 * 10 + 10)
LENET = (LENET_CONV1, LENET_CONV2, LENET_FC1, LENET_FC2, LENET_CLS)


def test_profile_lenet_by_hand() -> None:
    model = build_model("lenet", 3, 10, 32)
    expected = {"parameters": sum(p for _, p in LENET), "macs": sum(m for m, _ in LENET)}
    assert expected == {"parameters": 1_756_426, "macs": 32_778_112}
    assert profile(model, 3, 32) == expected
    assert profile(model, 3, 32, live_only=True) == expected  # nothing pruned: live == full


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_unpruned_live_counts_equal_full_counts(name: str) -> None:
    model = build_model(name, 3, 10, 16)
    model.train()
    full = profile(model, 3, 16)
    assert full["parameters"] == count_parameters(model)
    assert profile(model, 3, 16, live_only=True) == full
    assert model.training  # the mode is restored


def test_profile_pruned_lenet() -> None:
    model = build_model("lenet", 3, 10, 32)
    conv1 = model.encoder[0]
    with torch.no_grad():
        conv1.weight[::2] = 0  # DapperFL-style structured pruning: half the output channels
        conv1.bias[::2] = 0
    costs, _ = profile_layers(model, 3, 32, live_only=True)
    assert [c.name for c in costs] == ["encoder.0", "encoder.3", "fc.0", "fc.2", "classifier"]
    assert costs[0].macs == LENET_CONV1[0] / 2 and costs[0].cout_live == 32
    assert costs[1].macs == LENET_CONV2[0] / 2 and costs[1].cin_live == 32
    assert [c.macs for c in costs[2:]] == [m for m, _ in LENET[2:]]
    conv1_params = 3 * 64 * 25 / 2 + 32
    conv2_params = 64 * 64 * 25 / 2 + 64
    assert profile(model, 3, 32, live_only=True) == {
        "macs": LENET_CONV1[0] // 2 + LENET_CONV2[0] // 2 + sum(m for m, _ in LENET[2:]),
        "parameters": int(conv1_params + conv2_params + sum(p for _, p in LENET[2:])),
    }
    assert profile(model, 3, 32) == {"parameters": 1_756_426, "macs": 32_778_112}  # full count unchanged


def test_profile_pruned_depthwise() -> None:
    model = build_model("mobilenetv3-small", 3, 10, 32, norm="group")
    block = model.body[2]  # bneck 16 -> 72 (expand) -> 24, no SE
    expand_conv, expand_norm = block.block[0][0], block.block[0][1]
    depthwise = block.block[1][0]
    assert depthwise.groups == depthwise.in_channels == 72
    before = {c.name: c for c in profile_layers(model, 3, 32, live_only=True)[0]}
    with torch.no_grad():
        expand_conv.weight[:36] = 0
        expand_norm.weight[:36] = 0
        expand_norm.bias[:36] = 0
    after = {c.name: c for c in profile_layers(model, 3, 32, live_only=True)[0]}
    dw = "body.2.block.1.0"
    assert after[dw].cout_live == 36
    assert after[dw].macs == before[dw].macs / 2
    assert after[dw].parameters == before[dw].parameters / 2
    project = "body.2.block.2.0"
    assert after[project].cin_live == 36 and after[project].macs == before[project].macs / 2
