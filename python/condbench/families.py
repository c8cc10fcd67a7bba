"""The early-exit models of docs/design.md §1 in PyTorch, the Python twins of condbench's built-in
families (src/families/): the MLP and the transformer encoder.

Parameter names are those of docs/design.md §1 (mlp: backbone.{i}, exit{k}, final; transformer:
layers.{i} of nn.TransformerEncoderLayer, exit{k}.norm|proj, final.norm|proj), so condbench's
exported state_dict loads unchanged. Both are condbench.model's view (blocks, block(k, h), head(k),
final, confidence(logits)), which is all a variant (condbench.variants) uses — and so is a model
file's module, through condbench.model's ModelFileView."""
from typing import Any, Mapping

import torch
from torch import nn

from .model import EarlyExitModel


class EarlyExitMLP(EarlyExitModel):
    """The question's MLP: block k = relu(backbone.k(h)), a Linear exit head after each."""

    final: nn.Linear

    def __init__(self, in_features: int, hidden: int, num_classes: int, blocks: int) -> None:
        super().__init__()
        self.blocks = blocks
        self.backbone = nn.ModuleList(
            [nn.Linear(in_features if i == 0 else hidden, hidden) for i in range(blocks)])
        for k in range(1, blocks + 1):
            setattr(self, f"exit{k}", nn.Linear(hidden, num_classes))
        self.final = nn.Linear(hidden, num_classes)
        self.num_classes, self.row_shape = num_classes, (in_features,)

    def block(self, k: int, h: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.backbone[k](h))


class EncoderHead(nn.Module):
    """A transformer exit head: LayerNorm then a Linear, on token 0 of each row."""

    def __init__(self, d_model: int, num_classes: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.proj = nn.Linear(d_model, num_classes)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.proj(self.norm(h[:, 0, :]))
        return logits


class EarlyExitEncoder(EarlyExitModel):
    """The transformer family: nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0,
    activation="gelu", batch_first=True, norm_first=True) per layer, an exit head after each.
    Input [rows, seq, d_model]."""

    final: EncoderHead

    def __init__(self, d_model: int, heads: int, ffn: int, seq: int, num_classes: int, blocks: int) -> None:
        super().__init__()
        self.blocks = blocks
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=True) for _ in range(blocks)])
        for k in range(1, blocks + 1):
            setattr(self, f"exit{k}", EncoderHead(d_model, num_classes))
        self.final = EncoderHead(d_model, num_classes)
        self.num_classes, self.row_shape = num_classes, (seq, d_model)

    def block(self, k: int, h: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layers[k](h)
        return out


# The model families condbench knows, by the name condbench's descriptors give them
# (src/families/): each class takes the family's sizes, num_classes and blocks as keywords.
FAMILIES: dict[str, type[EarlyExitModel]] = {"mlp": EarlyExitMLP, "transformer": EarlyExitEncoder}


def build_model(config: Mapping[str, Any]) -> EarlyExitModel:
    """The model a workload's config describes (condbench --export-workload's "config": its family,
    then every size by its axis name)."""
    family = FAMILIES.get(config.get("family", "mlp"))  # packages made before families said nothing
    if family is None:
        raise ValueError(f"unknown model family {config.get('family')!r} ({', '.join(FAMILIES)})")
    return family(**{k: v for k, v in config.items() if k != "family"})


def load_model(weights_path: str, config: Mapping[str, Any], device: str) -> EarlyExitModel:
    model = build_model(config)
    model.load_state_dict(torch.load(weights_path, map_location="cpu"), strict=True)
    return model.to(device).eval()
