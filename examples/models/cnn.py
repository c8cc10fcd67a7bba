"""A small CNN with side branches (BranchyNet-style) in condbench's model-file protocol
(docs/your-model.md): three convolutional blocks on 3 x 32 x 32 images, an exit after each (global
average pooling and a Linear), 10 classes."""
import torch
from torch import nn

CHANNELS, CLASSES = (16, 32, 64), 10


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))


def head(channels):
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, CLASSES))


class BranchyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        widths = (3,) + CHANNELS
        self.stages = nn.ModuleList(block(widths[k], widths[k + 1]) for k in range(len(CHANNELS)))
        self.exits = nn.ModuleList(head(c) for c in CHANNELS)
        self.final = nn.Sequential(nn.Flatten(), nn.Linear(CHANNELS[-1] * 4 * 4, CLASSES))


def model():
    torch.manual_seed(0)
    return BranchyCNN()


def example_input(batch):
    return torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(1))
