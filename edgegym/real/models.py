"""Compact ResNet-18- and MobileNetV2-style networks in plain torch (no torchvision).

Both keep the structure of the originals (ResNet-18: a stem and four stages of two basic
blocks; MobileNetV2: a stem, inverted-residual blocks with expansion and depthwise
convolutions, a 1x1 head) with fewer channels, sized for small inputs such as 8x8 digits.
``parameter_groups`` lists the layers from input to output so that a retraining configuration
can retrain only the last fraction of them (``layers_retrained``) and freeze the rest.
"""

from __future__ import annotations

import torch
from torch import nn


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 convolutions with batch norm and a residual connection."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNetSmall(nn.Module):
    """ResNet-18 layout (2-2-2-2 basic blocks) with ``width`` base channels.

    Args:
        num_classes: Output classes.
        width: Channels of the first stage (doubled at each of the later three).
        in_channels: Input channels.
    """

    def __init__(self, num_classes: int = 10, width: int = 8, in_channels: int = 1) -> None:
        super().__init__()
        w = [width, 2 * width, 4 * width, 8 * width]
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, w[0], 3, 1, 1, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU()
        )
        stages = []
        c_in = w[0]
        for i, c in enumerate(w):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(c_in, c, stride), BasicBlock(c, c)))
            c_in = c
        self.stages = nn.ModuleList(stages)
        self.fc = nn.Linear(w[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    def parameter_groups(self) -> list[nn.Module]:
        """Layers from input to output (stem, 8 blocks, classifier)."""
        blocks = [b for stage in self.stages for b in stage]
        return [self.stem, *blocks, self.fc]


class InvertedResidual(nn.Module):
    """MobileNetV2 block: 1x1 expansion, 3x3 depthwise, linear 1x1 projection."""

    def __init__(self, c_in: int, c_out: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = c_in * expand
        self.residual = stride == 1 and c_in == c_out
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(c_in, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        ]
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.block(x)
        return x + out if self.residual else out


class MobileNetV2Small(nn.Module):
    """MobileNetV2 layout (expansion t, channels c, repeats n, stride s) scaled down.

    Args:
        num_classes: Output classes.
        width: Channels of the stem.
        in_channels: Input channels.
    """

    #: (expansion, channels multiple of width, repeats, stride) per stage.
    SETTINGS = ((1, 1, 1, 1), (6, 2, 2, 1), (6, 3, 2, 2), (6, 4, 2, 2))

    def __init__(self, num_classes: int = 10, width: int = 8, in_channels: int = 1) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, 2 * width, 3, 1, 1, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU6(),
        )
        blocks: list[nn.Module] = []
        c_in = 2 * width
        for t, mult, n, s in self.SETTINGS:
            for i in range(n):
                blocks.append(InvertedResidual(c_in, mult * width, s if i == 0 else 1, t))
                c_in = mult * width
        self.blocks = nn.ModuleList(blocks)
        head = 8 * width
        self.head = nn.Sequential(nn.Conv2d(c_in, head, 1, bias=False), nn.BatchNorm2d(head))
        self.fc = nn.Linear(head, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        x = nn.functional.relu6(self.head(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    def parameter_groups(self) -> list[nn.Module]:
        """Layers from input to output (stem, 7 blocks, head, classifier)."""
        return [self.stem, *self.blocks, self.head, self.fc]


#: Architectures by name; scenario model names map onto them by family (see :func:`build`).
ARCHITECTURES = {"resnet18": ResNetSmall, "mobilenetv2": MobileNetV2Small}


def architecture_for(model_name: str) -> str:
    """The compact architecture standing in for a scenario's model (MobileNet or ResNet)."""
    return "mobilenetv2" if "mobilenet" in model_name.lower() else "resnet18"


def build(arch: str, num_classes: int = 10, width: int = 8, seed: int = 0) -> nn.Module:
    """Build a network with seeded initial weights.

    Args:
        arch: ``"resnet18"`` or ``"mobilenetv2"`` (other model names map by
            :func:`architecture_for`).
        num_classes: Output classes.
        width: Base channel count.
        seed: Seed of the initial weights.
    """
    cls = ARCHITECTURES.get(arch) or ARCHITECTURES[architecture_for(arch)]
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return cls(num_classes=num_classes, width=width)
    finally:
        torch.random.set_rng_state(gen_state)


def set_trainable(model: nn.Module, layers_retrained: float) -> int:
    """Freeze all but the last ``layers_retrained`` fraction of the layers (at least one).

    Returns:
        The number of layers left trainable.
    """
    groups = model.parameter_groups()
    n = max(1, round(layers_retrained * len(groups)))
    for i, group in enumerate(groups):
        for p in group.parameters():
            p.requires_grad_(i >= len(groups) - n)
    return n
