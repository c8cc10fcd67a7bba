"""The question's early-exit MLP written in condbench's model-file protocol (docs/your-model.md):
32 inputs, three Linear + ReLU blocks of width 64, a Linear exit head after each, 10 classes — the
built-in mlp family's default model. Its parameters, renamed, are the built-in family's
(backbone.{k} -> stages.{k}.0, exit{k+1} -> exits.{k}, final -> final)."""
import torch
from torch import nn

IN_FEATURES, HIDDEN, CLASSES, BLOCKS = 32, 64, 10, 3


class EarlyExitMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList(
            nn.Sequential(nn.Linear(IN_FEATURES if k == 0 else HIDDEN, HIDDEN), nn.ReLU()) for k in range(BLOCKS))
        self.exits = nn.ModuleList(nn.Linear(HIDDEN, CLASSES) for _ in range(BLOCKS))
        self.final = nn.Linear(HIDDEN, CLASSES)


def model():
    torch.manual_seed(0)
    return EarlyExitMLP()


def example_input(batch):
    return torch.randn(batch, IN_FEATURES, generator=torch.Generator().manual_seed(1))
