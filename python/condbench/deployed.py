"""What condbench deploys, as PyTorch modules: the forwards the aoti engine's packages are compiled
from, which the Python peer also times as its variants. It sits below both: the peer
(condbench.variants, condbench.decoder_peer) and the compiler (condbench.inductor, condbench.aoti,
condbench.model_file) import it, and neither imports the other (tests/python/test_package.py, Layers).

  the whole model   should_exit (the exit test), NestedCond and ExportableCond (the question's
                    nested torch.cond), masked_forward; DeployedCond and DeployedMasked, what the
                    aoti engine's cond and masked packages return (docs/design.md §2).
  a decoder token   the fixed-size cache (write, fixed_layer, fixed_propagate), one token's nested
                    torch.cond and its masking over it (cond_step_tensors, masked_step_tensors,
                    masked_token), and DecodeStep, the step the decoder's aoti packages are compiled
                    from.
  Inductor options  COND_LAYOUT_WORKAROUND and how options are printed (options_text)."""
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import torch
from torch import nn

from . import decoder
from .rules import exit_fires, max_softmax

if TYPE_CHECKING:
    from .model import EarlyExitModel

# What a variant and a deployed module take as thresholds, one per exit before the final head: a
# tensor (traceable: one compile serves every scenario) or a Python list (read on the host).
Thresholds = torch.Tensor | Sequence[float]


# --- the whole model -------------------------------------------------------------------------------

def should_exit(logits: torch.Tensor, threshold: torch.Tensor | float,
                confidence: Callable[[torch.Tensor], torch.Tensor] = max_softmax) -> torch.Tensor:
    """docs/design.md §1: whether an exit with these logits leaves at this threshold (the rule is
    C++'s, condbench.rules); the score is the model's confidence(logits), the largest softmax
    probability unless a model file says otherwise."""
    return exit_fires(confidence(logits), threshold)


class NestedCond(nn.Module):
    """The question's forward_early_exit: cond(should_exit(logits_k, t_k), result, continue, operands),
    nested once per exit; the innermost else branch returns the final head. Thresholds come as a
    tensor, so compiled versions serve every scenario without recompiling.

    What the question's code had to change for torch.cond to accept it (docs/peer.md, "The question's
    code, made to work"; tests/test_python_peer.py checks each): the branches return tensors only
    (the exit id as a 0-d tensor, not a Python int in a dict), and none returns one of its inputs
    as is (logits.clone(): torch.cond refuses aliasing)."""

    def __init__(self, model: "EarlyExitModel") -> None:
        super().__init__()
        self.model = model

    def host_syncs(self, exit_id: int) -> int:
        # Eager torch.cond, and inductor's lowering of it, decide on the host at each cond reached.
        return min(exit_id, self.model.blocks)

    def stage(self, k: int, h: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.model
        h = m.block(k, h)
        logits = m.head(k)(h)

        def result(h: torch.Tensor, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return logits.clone(), torch.full((), k + 1, dtype=torch.int64, device=logits.device)

        if k + 1 < m.blocks:
            def continue_fn(h: torch.Tensor, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                return self.stage(k + 1, h, thresholds)
        else:
            def continue_fn(h: torch.Tensor, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                return m.final(h), torch.full((), m.blocks + 1, dtype=torch.int64, device=logits.device)

        chosen: tuple[torch.Tensor, torch.Tensor] = torch.cond(should_exit(logits, thresholds[k], m.confidence),
                                                               result, continue_fn, (h, logits))
        return chosen

    @torch.no_grad()
    def forward(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.stage(0, x, thresholds)


class ExportableCond(NestedCond):
    """NestedCond as torch.export accepts it: the same forward without @torch.no_grad() (export
    fails on torch.cond inside a no_grad region: AttributeError '...' object has no attribute
    'true_graph_0'); freeze the parameters instead (requires_grad_(False)) before exporting."""

    def forward(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.stage(0, x, thresholds)


def masked_forward(m: "EarlyExitModel", x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every block and head for every row, each row's result picked with torch.where (the first exit
    that fires wins): (logits [rows, C], exit id int32 [rows]), nothing read on the host."""
    h = x
    heads: list[torch.Tensor] = []
    fires: list[torch.Tensor] = []
    for k in range(m.blocks):
        h = m.block(k, h)
        heads.append(m.head(k)(h))
        fires.append(should_exit(heads[-1], thresholds[k], m.confidence))
    logits = m.final(h)
    exit_id = torch.full(fires[0].shape, m.blocks + 1, dtype=torch.int32, device=x.device)
    for k in reversed(range(m.blocks)):
        logits = torch.where(fires[k].unsqueeze(-1), heads[k], logits)
        exit_id = torch.where(fires[k], torch.full_like(exit_id, k + 1), exit_id)
    return logits, exit_id


class DeployedCond(ExportableCond):
    """ExportableCond returning what condbench's strategies return (docs/design.md §2): (exit id
    int32 [1], logits [1, C]). What condbench.aoti exports and compiles with
    AOTInductor for strategy cond in engine aoti. One row: torch.cond needs a scalar predicate."""

    def forward(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, exit_id = self.stage(0, x, thresholds)
        return exit_id.to(torch.int32).reshape(1), logits


class DeployedMasked(nn.Module):
    """masked_forward returning (exit id int32 [rows], logits [rows, C]), any number of rows: what
    condbench.aoti compiles for strategy masked in engine aoti."""

    def __init__(self, model: "EarlyExitModel") -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, thresholds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, exit_id = masked_forward(self.model, x, thresholds)
        return exit_id, logits


# Inductor's lowering of torch.cond (torch <= 2.15 at least) hands a branch a convolution's output stored
# channels_last, which the branch reads as NCHW: on a model with convolutions AOTInductor and
# torch.compile(cpp_wrapper=True) compute wrong results, torch.compile stops at a stride assert. Compiled
# without layout optimization it is right (docs/upstream-cond-layout.md, the reproducer in upstream/).
# The one place condbench.inductor's path (which falls back to it for a model file's cond; the built-in
# families' modules have no convolution) and the peer's workaround variant take it from.
COND_LAYOUT_WORKAROUND: dict[str, object] = {"layout_optimization": False}
WORKAROUND_DOC = "docs/upstream-cond-layout.md"


def options_text(options: Mapping[str, object]) -> str:
    """Inductor options as the manifest, the context and the report print them: "layout_optimization=False"."""
    return ", ".join(f"{k}={v}" for k, v in options.items())


# --- a decoder token -------------------------------------------------------------------------------

def masked_token(model: decoder.Decoder, h: torch.Tensor, run_layer: Callable[[int, torch.Tensor], torch.Tensor],
                 thresholds: Thresholds, places: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Masking from the state h entering layer 0: every layer (run_layer(l, h) -> the state after
    it, its keys and values written) and every exit's head; a token that left keeps its state with
    torch.where. (token, exit id, the chosen logits)."""
    left = torch.zeros(1, dtype=torch.bool, device=h.device)
    exit_id = torch.full((1,), len(places), dtype=torch.int32, device=h.device)
    chosen: torch.Tensor | None = None
    for l in range(len(model.layers)):
        h = torch.where(left[:, None], h, run_layer(l, h))
        if l + 1 in places[:-1]:
            e = places.index(l + 1)
            logits = model.head(model.norm(h))
            fire = exit_fires(max_softmax(logits), thresholds[e]) & ~left
            chosen = logits if chosen is None else torch.where(fire[:, None], logits, chosen)
            exit_id = torch.where(fire, e + 1, exit_id)
            left = left | fire
    final = model.head(model.norm(h))
    chosen = final if chosen is None else torch.where(left[:, None], chosen, final)
    return chosen.argmax(-1), exit_id, chosen


# The fixed-size forms: the cache of layer l is (keys, values) [heads, context, head_dim], a token's
# position a one-hot row `at` [context] and the positions it attends to `seen` [context] (0..position),
# every write a torch.where that returns a new buffer. Shapes never change, so one trace serves every
# position, and a torch.cond branch gets the cache as an operand and returns it.


def write(buffer: torch.Tensor, at: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
    """buffer [heads, context, head_dim] with `row` [heads, head_dim] at the one-hot position `at`."""
    return torch.where(at[None, :, None], row[:, None, :], buffer)


def fixed_layer(layer: decoder.Layer, h: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, at: torch.Tensor,
                seen: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    d = h.shape[-1]
    q, k, v = layer.attn.qkv(layer.norm1(h)).chunk(3, -1)
    keys, values = write(keys, at, k.view(heads, d // heads)), write(values, at, v.view(heads, d // heads))
    return decoder.cached_rest(layer, h, q, keys, values, seen[None, None, :]), keys, values


def fixed_propagate(layer: decoder.Layer, h: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, at: torch.Tensor,
                    heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    k, v = decoder.left_kv(layer, h, heads)
    return write(keys, at, k), write(values, at, v)


def cond_step_tensors(model: decoder.Decoder, heads: int, places: Sequence[int], token: torch.Tensor, at: torch.Tensor,
                      seen: torch.Tensor, thresholds: torch.Tensor, *cache: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """One token through nested torch.cond: (next token [1], exit id int32 [1], its logits [1, vocab],
    the new cache as a flat tuple keys_0, values_0, keys_1, ...). Each level runs its exit's layers, then
    cond(confidence > its threshold, leave, go on), both branches returning the deeper layers' cache."""
    h = model.embed(token) + (at.to(model.pos.weight.dtype) @ model.pos.weight)[None, :]

    def from_exit(e: int, h: torch.Tensor, cache: Sequence[torch.Tensor], first: int) -> tuple[torch.Tensor, ...]:
        cache = list(cache)
        for l in range(first, places[e]):
            h, cache[2 * (l - first)], cache[2 * (l - first) + 1] = fixed_layer(
                model.layers[l], h, cache[2 * (l - first)], cache[2 * (l - first) + 1], at, seen, heads)
        logits = model.head(model.norm(h))
        if e == len(places) - 1:
            return (logits.argmax(-1), torch.full((1,), e + 1, dtype=torch.int32, device=h.device), logits, *cache)
        done, deeper = places[e] - first, cache[2 * (places[e] - first):]

        def leave(h: torch.Tensor, logits: torch.Tensor, *deeper: torch.Tensor) -> tuple[torch.Tensor, ...]:
            out: list[torch.Tensor] = []
            for m, l in enumerate(range(places[e], len(model.layers))):
                out += fixed_propagate(model.layers[l], h, deeper[2 * m], deeper[2 * m + 1], at, heads)
            # logits.clone(): torch.cond refuses a branch output that is one of its inputs
            return (logits.argmax(-1), torch.full((1,), e + 1, dtype=torch.int32, device=h.device), logits.clone(),
                    *out)

        def go_on(h: torch.Tensor, logits: torch.Tensor, *deeper: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return from_exit(e + 1, h, deeper, places[e])

        token, exit_id, chosen, *deeper = torch.cond(exit_fires(max_softmax(logits)[0], thresholds[e]), leave, go_on,
                                             (h, logits, *deeper))
        return (token, exit_id, chosen, *cache[:2 * done], *deeper)

    return from_exit(0, h, cache, 0)


def masked_step_tensors(model: decoder.Decoder, heads: int, places: Sequence[int], token: torch.Tensor,
                        at: torch.Tensor, seen: torch.Tensor, thresholds: torch.Tensor,
                        *cache: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """masked_step over the fixed-size cache: every layer and head, no host read."""
    h = model.embed(token) + (at.to(model.pos.weight.dtype) @ model.pos.weight)[None, :]
    buffers = list(cache)  # rewritten layer by layer

    def run_layer(l: int, h: torch.Tensor) -> torch.Tensor:
        h, buffers[2 * l], buffers[2 * l + 1] = fixed_layer(model.layers[l], h, buffers[2 * l], buffers[2 * l + 1], at,
                                                            seen, heads)
        return h

    return (*masked_token(model, h, run_layer, thresholds, places), *buffers)


# A decode step's body (cond_step_tensors, masked_step_tensors): (model, heads, places, token, at, seen,
# thresholds, *cache) -> (token, exit id, logits, *cache)
StepBody = Callable[..., tuple[torch.Tensor, ...]]
# DecodeStep's inputs: token, at, seen, thresholds and the cache
StepInputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]


class DecodeStep(nn.Module):
    """One decode step at batch 1 over the fixed-size cache as AOTInductor deploys it (condbench's
    engine aoti for the decoder, strategies/decoder/aoti/; condbench.aoti exports it):
    forward(token int64 [1], at bool [context], seen bool [context], thresholds float [exits - 1],
    cache: (keys_0, values_0, keys_1, ...) each [heads, context, head_dim]) returns (token, exit id
    int32 [1], logits [1, vocab], keys_0, values_0, ...). Its parameters are the decoder's state_dict
    under "model.", so condbench replaces the placeholders with its own weights."""
    BODIES: dict[str, StepBody] = {"cond": cond_step_tensors, "masked": masked_step_tensors}

    def __init__(self, model: decoder.Decoder, config: Mapping[str, Any], body: StepBody) -> None:
        super().__init__()
        self.model, self.config, self.body = model, config, body
        self.places = decoder.exit_layers(config["layers"], config["exit_every"])

    @classmethod
    def of(cls, config: Mapping[str, Any], module_name: str, device: str) -> "DecodeStep":
        model = decoder.Decoder(config["vocab"], config["d_model"], config["layers"], config["ffn"], config["context"])
        for p in model.parameters():
            p.requires_grad_(False)  # torch.export of torch.cond: frozen parameters, no no_grad region
        return cls(model.to(device).eval(), config, cls.BODIES[module_name])

    def example_inputs(self) -> StepInputs:
        c, device = self.config, self.model.pos.weight.device
        positions = torch.arange(c["context"], device=device)
        shape = (c["heads"], c["context"], c["d_model"] // c["heads"])
        cache = tuple(torch.zeros(shape, device=device) for _ in range(2 * c["layers"]))
        return (torch.zeros(1, dtype=torch.long, device=device), positions == 0, positions <= 0,
                torch.zeros(len(self.places) - 1, device=device), cache)

    def sample_inputs(self, position: int, threshold: float) -> StepInputs:
        """A token mid-sequence, for condbench.inductor's check of a compiled step: a random token at
        `position` over a cache of random keys and values, every threshold `threshold` (0: the token
        leaves at the first exit, 1: at none, so that the check is clear of ties)."""
        c, device = self.config, self.model.pos.weight.device
        g = torch.Generator().manual_seed(position)
        *_, thresholds, cache = self.example_inputs()
        positions = torch.arange(c["context"], device=device)
        return (torch.randint(c["vocab"], (1,), generator=g).to(device), positions == position, positions <= position,
                torch.full_like(thresholds, threshold),
                tuple((0.5 * torch.randn(t.shape, generator=g)).to(device) for t in cache))

    def forward(self, token: torch.Tensor, at: torch.Tensor, seen: torch.Tensor, thresholds: torch.Tensor,
                cache: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        return self.body(self.model, self.config["heads"], self.places, token, at, seen, thresholds, *cache)
