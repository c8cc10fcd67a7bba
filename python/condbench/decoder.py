"""The decoder family's Python twin (docs/design.md §8, docs/models.md "The decoder"): the PyTorch
module whose state_dict condbench reads, and greedy early-exit decoding without a cache, as the
semantics define it. condbench's strategies keep a key/value cache and propagate the states of the
tokens that leave; this recomputes every position through every layer at every step, each earlier
position frozen after the layers its token ran, so it checks them from outside.

    python -m condbench.decoder save W.pt [--seed N] [--vocab V ...]   # a seeded decoder's state_dict
"""
import argparse
import contextlib
import os
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, NoReturn, Sequence, cast, overload

import torch
from torch import nn
from torch.nn import functional as F

from .regular_file import not_replaceable
from .rules import RULES, broken_relation, broken_size, exit_fires, max_softmax, module_floats, over_memory_budget


class Attention(nn.Module):
    """A layer's attention: qkv, the queries, keys and values in one Linear, and out. A module of its
    own so that the checker knows both (its parameters are attn.qkv and attn.out, as condbench names
    them)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)


class Layer(nn.Module):
    """Pre-norm: h + out(attention(norm1(h))), then + fc2(gelu(fc1(norm2(.))))."""

    def __init__(self, d_model: int, ffn: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = Attention(d_model)
        self.fc1, self.fc2 = nn.Linear(d_model, ffn), nn.Linear(ffn, d_model)


if TYPE_CHECKING:
    class Layers(nn.ModuleList):
        """Decoder.layers as the checker sees it: an nn.ModuleList whose items are Layers (to torch's
        types, an nn.ModuleList holds nn.Modules)."""

        @overload
        def __getitem__(self, idx: slice) -> nn.ModuleList: ...
        @overload
        def __getitem__(self, idx: int) -> Layer: ...
        def __getitem__(self, idx: int | slice) -> "Layer | nn.ModuleList": ...
        def __iter__(self) -> Iterator[Layer]: ...


class Decoder(nn.Module):
    """Token embedding and learned positions, `layers` layers, one final norm and one LM head that
    every exit shares. The heads and the exits' places are not weights: condbench is told them."""

    def __init__(self, vocab: int, d_model: int, layers: int, ffn: int, context: int) -> None:
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(context, d_model)
        self.layers = cast("Layers", nn.ModuleList(Layer(d_model, ffn) for _ in range(layers)))
        self.norm, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab, bias=False)


def layer_forward(layer: Layer, h: torch.Tensor, heads: int) -> torch.Tensor:
    """Layer `layer` on the states h [positions, d] of one sequence, causal."""
    n, d = h.shape
    q, k, v = layer.attn.qkv(layer.norm1(h)).chunk(3, -1)
    split: Callable[[torch.Tensor], torch.Tensor] = lambda t: t.view(n, heads, d // heads).transpose(0, 1)  # noqa: E731
    a = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
    x = h + layer.attn.out(a.transpose(0, 1).reshape(n, d))
    out: torch.Tensor = x + layer.fc2(F.gelu(layer.fc1(layer.norm2(x))))
    return out


def cached_rest(layer: Layer, h: torch.Tensor, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
    """Layer `layer` on one token's state h [1, d] after its query q [1, d] and its key and value are
    in the cache, whatever the cache's layout (keys and values [..., heads, positions, head_dim]):
    attention over the cache (`mask` over its positions where it holds unwritten ones), the output
    projection and the MLP, each residual. Every cached step (the peer's, the compiled ones) runs its
    layers through this; layer_forward, without a cache, stays the reference."""
    d = h.shape[-1]
    heads = keys.shape[-3]
    a = F.scaled_dot_product_attention(q.view(*keys.shape[:-2], 1, d // heads), keys, values, attn_mask=mask)
    x = h + layer.attn.out(a.reshape(1, d))
    out: torch.Tensor = x + layer.fc2(F.gelu(layer.fc1(layer.norm2(x))))
    return out


def left_kv(layer: Layer, h: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The key and value `layer` writes for a token that left with state h [1, d] (CALM's state
    propagation: only the key and value rows of the packed projection), each [heads, head_dim]."""
    d = h.shape[-1]
    kv = F.linear(layer.norm1(h), layer.attn.qkv.weight[d:], layer.attn.qkv.bias[d:])
    return kv[0, :d].view(heads, d // heads), kv[0, d:].view(heads, d // heads)


def exit_layers(layers: int, exit_every: int) -> list[int]:
    """The layer (1-based) after which each exit reads the state; the last is the final one."""
    return [e * exit_every for e in range(1, (layers - 1) // exit_every + 1)] + [layers]


@torch.no_grad()
def generate(model: Decoder, prompt: Sequence[int], steps: int, thresholds: Sequence[float], heads: int, exit_every: int,
             confidences: list[list[float]] | None = None) -> tuple[list[int], list[int], torch.Tensor]:
    """Greedy decoding of one row without a cache: (tokens, exit ids 1.., logits [steps, vocab]).
    A token leaves at the first exit whose largest softmax probability is above its threshold.
    `confidences`, a list, gets each step's list of the confidences of the exits it evaluated."""
    layers = len(model.layers)
    places = exit_layers(layers, exit_every)
    positions, depth = list(prompt[:-1]), [layers] * (len(prompt) - 1)
    token = prompt[-1]
    tokens: list[int] = []
    exits: list[int] = []
    all_logits: list[torch.Tensor] = []
    for _ in range(steps):
        positions.append(int(token))
        depth.append(layers)
        n = len(positions)
        h = model.embed(torch.tensor(positions)) + model.pos(torch.arange(n))
        chosen: tuple[int, torch.Tensor] | None = None
        seen: list[float] = []
        for l, layer in enumerate(model.layers):
            running = torch.tensor([l < d for d in depth])[:, None]
            h = torch.where(running, layer_forward(layer, h, heads), h)
            if chosen is None and l + 1 in places[:-1]:
                e = places.index(l + 1)
                logits = model.head(model.norm(h[-1]))
                seen.append(float(max_softmax(logits)))
                if exit_fires(max_softmax(logits), thresholds[e]):
                    chosen, depth[-1] = (e + 1, logits), l + 1
        if confidences is not None:
            confidences.append(seen)
        exit_id, logits = chosen or (len(places), model.head(model.norm(h[-1])))
        token = int(logits.argmax())
        tokens.append(token)
        exits.append(exit_id)
        all_logits.append(logits)
    return tokens, exits, torch.stack(all_logits)


class OneLineParser(argparse.ArgumentParser):
    """argparse, its refusals one line (usage is what --help prints) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"decoder: {message}\n")


def fail(message: str) -> NoReturn:
    print(f"decoder save: {message}", file=sys.stderr)
    sys.exit(2)


def save_whole(state_dict: Mapping[str, torch.Tensor], path: str) -> None:
    """torch.save to `path`, whole or not at all (condbench's output policy, include/condbench/
    output_file.h): written beside it under a name of its own, flushed to disk, renamed into place; a
    write that fails (a full disk, a file-size limit) or a stop (SIGTERM, SIGINT, SIGHUP) leaves the
    file that was there as it was, and no temporary."""
    what = not_replaceable(path)
    if what is not None:
        fail(f"'{path}' is {what}, which it never replaces")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        fail(f"'{path}': its folder '{folder}' does not exist")
    temp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}")

    def stopped(signum: int, frame: FrameType | None) -> NoReturn:
        raise SystemExit(128 + signum)

    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(stop, stopped)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past a file-size limit: a failed write (EFBIG), not death
    try:
        with open(temp, "wb") as f:
            torch.save(state_dict, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except (OSError, RuntimeError) as e:  # torch's zip writer says RuntimeError over the OSError of its write
        cause = e if isinstance(e, OSError) else e.__context__
        why = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(e).splitlines()[0][:200]
        fail(f"cannot write '{path}' ({why}); the file that was there is as it was")
    finally:
        with contextlib.suppress(OSError):
            os.remove(temp)


def main() -> None:
    parser = OneLineParser(prog="python -m condbench.decoder", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    save = sub.add_parser("save", help="a seeded decoder's state_dict")
    save.add_argument("path")
    save.add_argument("--seed", type=int, default=0)
    defaults = {size["size"]: size["default"] for size in RULES["config_sizes"]["decoder"]}  # C++'s DecoderConfig
    for size in ("vocab", "d_model", "layers", "ffn", "context"):
        save.add_argument("--" + size.replace("_", "-"), dest=size, type=int, default=defaults[size])
    # not in the file (a state_dict cannot say them): the sizes condbench is told when it runs it,
    # checked here against the others, so that what is saved is a decoder condbench runs
    for size in ("heads", "exit_every"):
        save.add_argument("--" + size.replace("_", "-"), dest=size, type=int, default=defaults[size],
                          help=f"checked, not saved (default {defaults[size]}; condbench-infer --{size.replace('_', '-')}=N)")
    args = parser.parse_args()
    sizes = {k: v for k, v in vars(args).items() if k in defaults}
    # C++'s limits and relations (rules.json), then its memory budget, before anything is made
    if broken := broken_size("decoder", sizes) or broken_relation("decoder", sizes):
        fail(broken)
    if not 0 <= args.seed < 2 ** 63:
        fail(f"--seed {args.seed}: not in 0..2^63-1")
    make: Callable[[], Decoder] = \
        lambda: Decoder(args.vocab, args.d_model, args.layers, args.ffn, args.context)  # noqa: E731
    if over := over_memory_budget("decoder", sizes, 0, module_floats(make)):
        fail(f"the decoder {' '.join(f'{k}={v}' for k, v in sizes.items())}: {over}")
    torch.manual_seed(args.seed)
    save_whole(make().state_dict(), args.path)


if __name__ == "__main__":
    main()
