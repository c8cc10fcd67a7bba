"""An early-exit ViT in condbench's model-file protocol (docs/your-model.md): a small Hugging Face
ViT (transformers' own ViTEmbeddings and ViTLayer, built from a ViTConfig: nothing is downloaded)
on 3 x 32 x 32 images in 8 x 8 patches, a classification head on the [CLS] token after every two
of its six encoder layers. The first stage embeds the patches; every later one takes the stage
before's hidden states. A Hugging Face layer may return a tuple: a stage keeps its first element."""
import torch
from torch import nn
from transformers import ViTConfig
from transformers.models.vit.modeling_vit import ViTEmbeddings, ViTLayer

CONFIG = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=6,
                   num_attention_heads=4, intermediate_size=128, hidden_dropout_prob=0.0,
                   attention_probs_dropout_prob=0.0, attn_implementation="eager")
LAYERS_PER_STAGE, CLASSES = 2, 10


def hidden_of(layer_output):
    """A layer's hidden states, whether it returns them alone or first in a tuple."""
    return layer_output[0] if isinstance(layer_output, tuple) else layer_output


class Stage(nn.Module):
    def __init__(self, first):
        super().__init__()
        self.embeddings = ViTEmbeddings(CONFIG) if first else None
        self.layers = nn.ModuleList(ViTLayer(CONFIG) for _ in range(LAYERS_PER_STAGE))

    def forward(self, h):
        if self.embeddings is not None:
            h = self.embeddings(h)  # [rows, 3, 32, 32] -> [rows, 1 + 16 patches, hidden]
        for layer in self.layers:
            h = hidden_of(layer(h))
        return h


class Head(nn.Module):
    """ViT's classifier: LayerNorm, then a Linear on the [CLS] token."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(CONFIG.hidden_size, eps=CONFIG.layer_norm_eps)
        self.classifier = nn.Linear(CONFIG.hidden_size, CLASSES)

    def forward(self, h):
        return self.classifier(self.norm(h[:, 0]))


class EarlyExitViT(nn.Module):
    def __init__(self):
        super().__init__()
        stages = CONFIG.num_hidden_layers // LAYERS_PER_STAGE
        self.stages = nn.ModuleList(Stage(first=k == 0) for k in range(stages))
        self.exits = nn.ModuleList(Head() for _ in range(stages))
        self.final = Head()


def model():
    torch.manual_seed(0)
    return EarlyExitViT()


def example_input(batch):
    return torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(batch))
