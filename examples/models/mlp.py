"""The question's early-exit MLP written in condbench's model-file protocol (docs/your-model.md):
32 inputs, three Linear + ReLU blocks of width 64, a Linear exit head after each, 10 classes — the
built-in mlp family's default model. Its parameters, renamed, are the built-in family's
(backbone.{k} -> stages.{k}.0, exit{k+1} -> exits.{k}, final -> final).

    .venv/bin/python examples/models/mlp.py OUT.pt

saves this model's weights under the built-in family's names, for condbench --weights=OUT.pt: the
same model through the built-in family and through the model file, side by side."""
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


def builtin_state_dict(module):
    """The module's state_dict under the built-in mlp family's names."""
    def name(key):
        parts = key.split(".")  # stages.K.0.weight, exits.K.weight, final.weight
        if parts[0] == "stages":
            return f"backbone.{parts[1]}.{parts[3]}"
        if parts[0] == "exits":
            return f"exit{int(parts[1]) + 1}.{parts[2]}"
        return key

    return {name(key): value for key, value in module.state_dict().items()}


if __name__ == "__main__":
    import sys

    torch.save(builtin_state_dict(model()), sys.argv[1])
