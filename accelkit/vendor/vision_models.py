"""``torchvision.models`` stand-ins for ``--synthetic-data`` when torchvision is not installed: ResNets.

Graphcore's popdist example builds ``torchvision.models.resnet18()``. These are the ResNet architectures of
He et al. 2015 (arXiv:1512.03385) as torchvision lays them out (the same module names: ``conv1``, ``bn1``,
``layer1``..``layer4``, ``fc``), with random weights; ``weights=``/``pretrained=`` asking for downloaded
weights is refused, since those are a download.
"""

from __future__ import annotations

from typing import Any

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
    kwargs.pop("progress", None)  # torchvision's download progress bar: nothing is downloaded
    if weights is not None or pretrained:
        from accelkit.vendor.notices import say as _say

        _say(f"torchvision.models.{name}({'weights=' + repr(weights) if weights is not None else 'pretrained=True'}) "
             "is built with RANDOM weights (the trained ones are a download); nothing downloaded")
    return ResNet(block, layers, **kwargs)


def resnet18(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet18", BasicBlock, [2, 2, 2, 2], weights, pretrained, **kwargs)


def resnet34(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet34", BasicBlock, [3, 4, 6, 3], weights, pretrained, **kwargs)


def resnet50(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnet50", Bottleneck, [3, 4, 6, 3], weights, pretrained, **kwargs)


def resnext50_32x4d(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnext50_32x4d", Bottleneck, [3, 4, 6, 3], weights, pretrained,
                  **{"groups": 32, "width_per_group": 4, **kwargs})


def resnext101_32x8d(weights: Any = None, pretrained: bool = False, **kwargs: Any) -> ResNet:
    return _build("resnext101_32x8d", Bottleneck, [3, 4, 23, 3], weights, pretrained,
                  **{"groups": 32, "width_per_group": 8, **kwargs})


__all__ = ["ResNet", "resnet18", "resnet34", "resnet50", "resnext101_32x8d", "resnext50_32x4d"]
