"""``torchvision.models`` stand-ins for ``--synthetic-data`` when torchvision is not installed: ResNets,
MobileNetV2, SqueezeNet and GoogLeNet.

Graphcore's popdist example builds ``torchvision.models.resnet18()``; Groq's proof points load MobileNetV2,
SqueezeNet 1.0 and GoogLeNet through ``torch.hub.load('pytorch/vision:v0.10.0', ...)``. These are the ResNet architectures of
He et al. 2015 (arXiv:1512.03385), MobileNetV2 of Sandler et al. 2018 (arXiv:1801.04381) and SqueezeNet of
Iandola et al. 2016 (arXiv:1602.07360) as torchvision lays them out (the same module names: ``conv1``, ``bn1``,
``layer1``..``layer4``, ``fc``; ``features``, ``classifier``), with random weights; ``weights=``/``pretrained=``
asking for downloaded weights builds the same model with random weights and says so.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import Tensor, nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        out = width * self.expansion
        self.downsample = (nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
                           if stride != 1 or cin != out else None)

    def forward(self, x: Tensor) -> Tensor:
        y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int = 1, groups: int = 1, width_per_group: int = 64) -> None:
        super().__init__()
        out = planes * self.expansion
        width = int(planes * width_per_group / 64) * groups  # ResNeXt: wider, grouped 3x3 convolutions
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
                           if stride != 1 or cin != out else None)

    def forward(self, x: Tensor) -> Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn3(self.conv3(self.relu(self.bn2(self.conv2(y)))))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    def __init__(self, block: Any, layers: list[int], num_classes: int = 1000, **block_kwargs: Any) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = 64, []
        for i, (width, n) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
            blocks = []
            for j in range(n):
                blocks.append(block(cin, width, 2 if i and not j else 1, **block_kwargs))
                cin = width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def _build(name: str, block: Any, layers: list[int], weights: Any, pretrained: bool, **kwargs: Any) -> ResNet:
    _random_weights(name, weights, pretrained, kwargs)
    return ResNet(block, layers, **kwargs)


def resnet18(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet18", BasicBlock, [2, 2, 2, 2], weights, pretrained, **kwargs)


def resnet34(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet34", BasicBlock, [3, 4, 6, 3], weights, pretrained, **kwargs)


def resnet50(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet50", Bottleneck, [3, 4, 6, 3], weights, pretrained, **kwargs)


def resnet101(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet101", Bottleneck, [3, 4, 23, 3], weights, pretrained, **kwargs)


def resnet152(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet152", Bottleneck, [3, 8, 36, 3], weights, pretrained, **kwargs)


def resnext50_32x4d(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnext50_32x4d", Bottleneck, [3, 4, 6, 3], weights, pretrained,
                  **{"groups": 32, "width_per_group": 4, **kwargs})


def resnext101_32x8d(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnext101_32x8d", Bottleneck, [3, 4, 23, 3], weights, pretrained,
                  **{"groups": 32, "width_per_group": 8, **kwargs})


def _random_weights(name: str, weights: Any, pretrained: bool, kwargs: dict[str, Any]) -> None:
    kwargs.pop("progress", None)  # torchvision's download progress bar: nothing is downloaded
    if weights is not None or pretrained:
        from accelkit.vendor.notices import say as _say

        _say(f"torchvision.models.{name}({'weights=' + repr(weights) if weights is not None else 'pretrained=True'}) "
             "is built with RANDOM weights (the trained ones are a download); nothing downloaded")


def _make_divisible(v: float, divisor: int) -> int:
    """torchvision's channel rounding: to a multiple of ``divisor``, never more than 10% below ``v``."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class _ConvBNReLU6(nn.Sequential):
    def __init__(self, inp: int, out: int, kernel_size: int = 3, stride: int = 1, groups: int = 1) -> None:
        super().__init__(nn.Conv2d(inp, out, kernel_size, stride, (kernel_size - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(out), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = [_ConvBNReLU6(inp, hidden, kernel_size=1)] if expand_ratio != 1 else []
        layers += [_ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, round_nearest: int = 8,
                 dropout: float = 0.2) -> None:
        super().__init__()
        channels = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features: list[nn.Module] = [_ConvBNReLU6(3, channels, stride=2)]
        for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                           (6, 160, 3, 2), (6, 320, 1, 1)):
            out = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(channels, out, s if i == 0 else 1, t))
                channels = out
        features.append(_ConvBNReLU6(channels, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class Fire(nn.Module):
    def __init__(self, inplanes: int, squeeze: int, expand1x1: int, expand3x3: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(inplanes, squeeze, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes

        def pool() -> nn.Module:
            return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)

        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True), pool(),
                Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(),
                Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                pool(), Fire(512, 64, 256, 256))
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True), pool(),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(), Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128), pool(), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
        else:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Conv2d(512, num_classes, kernel_size=1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x: Tensor) -> Tensor:
        return torch.flatten(self.classifier(self.features(x)), 1)


class BasicConv2d(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        return nn.functional.relu(self.bn(self.conv(x)), inplace=True)


class Inception(nn.Module):
    def __init__(self, in_channels: int, ch1x1: int, ch3x3red: int, ch3x3: int, ch5x5red: int, ch5x5: int,
                 pool_proj: int) -> None:
        super().__init__()
        self.branch1 = BasicConv2d(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(BasicConv2d(in_channels, ch3x3red, kernel_size=1),
                                     BasicConv2d(ch3x3red, ch3x3, kernel_size=3, padding=1))
        # torchvision's "5x5" branch is a 3x3 convolution (kept so its trained weights load): the same here
        self.branch3 = nn.Sequential(BasicConv2d(in_channels, ch5x5red, kernel_size=1),
                                     BasicConv2d(ch5x5red, ch5x5, kernel_size=3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                                     BasicConv2d(in_channels, pool_proj, kernel_size=1))

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class InceptionAux(nn.Module):
    def __init__(self, in_channels: int, num_classes: int, dropout: float = 0.7) -> None:
        super().__init__()
        self.conv = BasicConv2d(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = torch.flatten(self.conv(nn.functional.adaptive_avg_pool2d(x, (4, 4))), 1)
        return self.fc2(self.dropout(nn.functional.relu(self.fc1(x), inplace=True)))


class GoogLeNetOutputs(NamedTuple):
    logits: Tensor
    aux_logits2: Tensor | None
    aux_logits1: Tensor | None


class GoogLeNet(nn.Module):
    """Szegedy et al. 2014 (arXiv:1409.4842) as torchvision lays it out: a training step with ``aux_logits``
    returns ``GoogLeNetOutputs(logits, aux_logits2, aux_logits1)``, evaluation the logits."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True, transform_input: bool = False,
                 init_weights: Any = None, dropout: float = 0.2, dropout_aux: float = 0.7) -> None:
        super().__init__()
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.conv1 = BasicConv2d(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = BasicConv2d(64, 64, kernel_size=1)
        self.conv3 = BasicConv2d(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception3a = Inception(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = Inception(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception4a = Inception(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = Inception(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = Inception(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = Inception(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = Inception(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
        self.inception5a = Inception(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = Inception(832, 384, 192, 384, 48, 128, 128)
        self.aux1 = InceptionAux(512, num_classes, dropout_aux) if aux_logits else None
        self.aux2 = InceptionAux(528, num_classes, dropout_aux) if aux_logits else None
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)

    def _transform_input(self, x: Tensor) -> Tensor:
        if not self.transform_input:  # pretrained weights expect ImageNet-normalised input rescaled to [-1, 1]
            return x
        return torch.cat([torch.unsqueeze(x[:, c], 1) * (std / 0.5) + (mean - 0.5) / 0.5
                          for c, (mean, std) in enumerate(((0.485, 0.229), (0.456, 0.224), (0.406, 0.225)))], 1)

    def forward(self, x: Tensor) -> Any:
        x = self.maxpool1(self.conv1(self._transform_input(x)))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.inception4a(self.maxpool3(self.inception3b(self.inception3a(x))))
        aux1 = self.aux1(x) if self.aux1 is not None and self.training else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if self.aux2 is not None and self.training else None
        x = self.inception5b(self.inception5a(self.maxpool4(self.inception4e(x))))
        x = self.fc(self.dropout(torch.flatten(self.avgpool(x), 1)))
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x


def googlenet(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> GoogLeNet:
    """As torchvision builds it: with trained weights asked for, no auxiliary heads and ``transform_input=True``
    (the trained model's own settings), here with random weights."""
    trained = weights is not None or pretrained
    _random_weights("googlenet", weights, pretrained, kwargs)
    if trained:
        kwargs.setdefault("transform_input", True)
        kwargs.setdefault("aux_logits", False)
    return GoogLeNet(**kwargs)


def mobilenet_v2(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> MobileNetV2:
    _random_weights("mobilenet_v2", weights, pretrained, kwargs)
    return MobileNetV2(**kwargs)


def squeezenet1_0(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> SqueezeNet:
    _random_weights("squeezenet1_0", weights, pretrained, kwargs)
    return SqueezeNet("1_0", **kwargs)


def squeezenet1_1(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> SqueezeNet:
    _random_weights("squeezenet1_1", weights, pretrained, kwargs)
    return SqueezeNet("1_1", **kwargs)


__all__ = ["GoogLeNet", "GoogLeNetOutputs", "MobileNetV2", "ResNet", "SqueezeNet", "googlenet", "mobilenet_v2", "resnet18", "resnet34", "resnet50",
           "resnet101", "resnet152", "resnext101_32x8d", "resnext50_32x4d", "squeezenet1_0", "squeezenet1_1"]
