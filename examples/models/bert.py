"""A DeeBERT-style text classifier in condbench's model-file protocol (docs/your-model.md): a small
Hugging Face BERT (transformers' own BertEmbeddings and BertLayer, built from a BertConfig: nothing
is downloaded) with an off-ramp after every two encoder layers, taking token ids and an attention
mask. Each off-ramp is BERT's classification head (a pooler on the [CLS] token, then a Linear).

How a Hugging Face model is cut into the protocol's parts:
- stages[0] takes every input example_input() gives, in order (here the ids and the mask); every
  later stage takes only the stage before's output. What later layers need besides the hidden
  states (the mask) travels inside that output: a stage returns the hidden states with the mask
  appended as one more feature, and the next stage splits it off.
- A Hugging Face layer may return a tuple (the hidden states first, attentions after): a stage
  keeps the first element.
- An exit head takes a stage's whole output and returns logits [rows, classes]."""
import torch
from torch import nn
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertEmbeddings, BertLayer

CONFIG = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=6, num_attention_heads=4,
                    intermediate_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0, attn_implementation="eager")
LAYERS_PER_STAGE, CLASSES, TOKENS = 2, 4, 16


def hidden_of(layer_output):
    """A layer's hidden states, whether it returns them alone or first in a tuple."""
    return layer_output[0] if isinstance(layer_output, tuple) else layer_output


class Stage(nn.Module):
    """Two encoder layers. The first stage embeds (ids, mask); each later one takes the stage before's
    output, [rows, tokens, hidden + 1], the mask in its last feature."""

    def __init__(self, first):
        super().__init__()
        self.embeddings = BertEmbeddings(CONFIG) if first else None
        self.layers = nn.ModuleList(BertLayer(CONFIG) for _ in range(LAYERS_PER_STAGE))

    def forward(self, h, mask=None):
        if self.embeddings is not None:
            h = self.embeddings(input_ids=h)
        else:
            h, mask = h[..., :-1], h[..., -1]
        # BERT's additive mask: 0 where a token is attended to, the most negative float where it is padding
        additive = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
        for layer in self.layers:
            h = hidden_of(layer(h, attention_mask=additive))
        return torch.cat([h, mask[..., None].to(h.dtype)], dim=-1)


class OffRamp(nn.Module):
    """BERT's classification head on the [CLS] token: the pooler (Linear, tanh), then a Linear."""

    def __init__(self):
        super().__init__()
        self.pooler = nn.Linear(CONFIG.hidden_size, CONFIG.hidden_size)
        self.classifier = nn.Linear(CONFIG.hidden_size, CLASSES)

    def forward(self, h):
        return self.classifier(torch.tanh(self.pooler(h[:, 0, :-1])))


class DeeBert(nn.Module):
    def __init__(self):
        super().__init__()
        stages = CONFIG.num_hidden_layers // LAYERS_PER_STAGE
        self.stages = nn.ModuleList(Stage(first=k == 0) for k in range(stages))
        self.exits = nn.ModuleList(OffRamp() for _ in range(stages))
        self.final = OffRamp()


def model():
    torch.manual_seed(0)
    return DeeBert()


def example_input(batch):
    """Token ids and the attention mask of a padded batch: each row 4 to 16 tokens long, [CLS] first."""
    g = torch.Generator().manual_seed(batch)
    ids = torch.randint(1, CONFIG.vocab_size, (batch, TOKENS), generator=g)
    lengths = torch.randint(4, TOKENS + 1, (batch, 1), generator=g)
    mask = (torch.arange(TOKENS)[None, :] < lengths).long()
    ids[:, 0] = 101 % CONFIG.vocab_size  # [CLS]
    return ids * mask, mask  # padding is id 0, masked out
