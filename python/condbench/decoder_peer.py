"""The Python peer's decoder (docs/design.md §8): per-token early exit written as PyTorch users
write it, at batch 1, on the weights, prompts and thresholds `condbench --export-workload` wrote,
with a key/value cache the way generation loops keep one:

  py_eager_if  the HF style: after each exit layer, `if confidence.item() > t:` leaves, and the
               layers it skipped get the token's keys and values from its state there (CALM's
               state propagation); one host read per exit reached.
  py_masked    every layer and every exit's head, the token's state frozen with torch.where once it
               left (the deeper layers then write keys and values projected from it); no host read.
  py_cond      per token, nested torch.cond: at each exit, cond(confidence > t, propagate and leave,
               the next layers); the cache is an operand of every branch, written functionally at a
               one-hot position over fixed-size buffers (torch.cond refuses mutated inputs).
  py_cond_compile, py_masked_compile
               py_cond's step and masking's, both over the same fixed-size cache, under
               torch.compile (thresholds and position are tensors: one compile serves every token
               and scenario).
  py_masked_static_ro
               what Hugging Face users run: a static cache (fixed-size buffers at fixed addresses,
               written in place at the position, marked static for dynamo) and the masked step under
               torch.compile(mode="reduce-overhead"), CUDA graphs replayed per token. On a CPU it
               runs only when named.

Each variant is first checked against decoder.generate, the module's own decoding without a cache,
on every sequence it will time: a variant that differs is not timed, and says where. peer.py times
the cases: one iteration is one generated token, a new sequence's prefill outside the timed region.
"""
import functools
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

import torch

from . import decoder, names, variants
from .variants import Case, Variant
from .deployed import StepBody, cond_step_tensors, masked_step_tensors, masked_token
from .rules import exit_fires, logits_agree, max_softmax

if TYPE_CHECKING:
    from .workload import Workload

# The cache a Generator keeps: (keys, values) per layer, each [1, heads, context, head_dim]
Cache = list[tuple[torch.Tensor, torch.Tensor]]
# A Generator's step: (model, token, position, cache, thresholds, heads, exit places) -> (token, exit id,
# the logits it was chosen from), the cache written
Step = Callable[[decoder.Decoder, torch.Tensor, int, Cache, Sequence[float], int, Sequence[int]],
                tuple[torch.Tensor, "torch.Tensor | int", torch.Tensor]]


def cached_layer(layer: decoder.Layer, h: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, position: int,
                 heads: int) -> torch.Tensor:
    """Layer `layer` on one token's state h [1, d] at `position`: its key and value written into the
    cache [1, heads, context, head_dim], attention over positions 0..position."""
    d = h.shape[-1]
    q, k, v = layer.attn.qkv(layer.norm1(h)).chunk(3, -1)
    keys[:, :, position] = k.view(1, heads, d // heads)
    values[:, :, position] = v.view(1, heads, d // heads)
    return decoder.cached_rest(layer, h, q, keys[:, :, :position + 1], values[:, :, :position + 1])


def propagate(layer: decoder.Layer, h: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, position: int,
              heads: int) -> None:
    """Only the key and value `layer` would write for state h: a token that left."""
    keys[0, :, position], values[0, :, position] = decoder.left_kv(layer, h, heads)


def eager_if_step(model: decoder.Decoder, token: torch.Tensor, position: int, cache: Cache, thresholds: Sequence[float],
                  heads: int, places: Sequence[int]) -> tuple[torch.Tensor, int, torch.Tensor]:
    h = model.embed(token) + model.pos.weight[position]
    for l, layer in enumerate(model.layers):
        h = cached_layer(layer, h, *cache[l], position, heads)
        if l + 1 in places[:-1]:
            e = places.index(l + 1)
            logits = model.head(model.norm(h))
            if exit_fires(max_softmax(logits).item(), thresholds[e]):  # the host reads the decision
                for m in range(l + 1, len(model.layers)):
                    propagate(model.layers[m], h, *cache[m], position, heads)
                return logits.argmax(-1), e + 1, logits
    logits = model.head(model.norm(h))
    return logits.argmax(-1), len(places), logits


def masked_step(model: decoder.Decoder, token: torch.Tensor, position: int, cache: Cache, thresholds: Sequence[float],
                heads: int, places: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    h = model.embed(token) + model.pos.weight[position]
    return masked_token(model, h, lambda l, h: cached_layer(model.layers[l], h, *cache[l], position, heads), thresholds,
                  places)


def static_layer(layer: decoder.Layer, h: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                 position: torch.Tensor, seen: torch.Tensor, heads: int) -> torch.Tensor:
    """cached_layer over a static cache: keys and values [1, heads, context, head_dim] written in place
    at `position` (a one-element long tensor) with index_copy_, attention over the positions `seen`;
    the buffers never move, so a CUDA graph replays over them."""
    d = h.shape[-1]
    q, k, v = layer.attn.qkv(layer.norm1(h)).chunk(3, -1)
    keys.index_copy_(2, position, k.view(1, heads, 1, d // heads))
    values.index_copy_(2, position, v.view(1, heads, 1, d // heads))
    return decoder.cached_rest(layer, h, q, keys, values, seen[None, None, None, :])


def static_masked_step_tensors(model: decoder.Decoder, heads: int, places: Sequence[int], token: torch.Tensor,
                               position: torch.Tensor, seen: torch.Tensor, thresholds: torch.Tensor,
                               *cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """masked_step over the static cache (keys_0, values_0, keys_1, ...), written in place."""
    h = model.embed(token) + model.pos.weight.index_select(0, position)
    return masked_token(model, h, lambda l, h: static_layer(model.layers[l], h, cache[2 * l], cache[2 * l + 1], position,
                                                      seen, heads), thresholds, places)


# By thresholds and device: the thresholds as a tensor, and each position's (at, seen): where the
# step writes (the position, or a one-hot row) and the positions it reads.
StepTable = tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]
StepTables = dict[tuple[tuple[float, ...], torch.device], StepTable]


def step_table(tables: StepTables, thresholds: Sequence[float], device: torch.device, context: int,
               at: Callable[[torch.Tensor, int], torch.Tensor]) -> StepTable:
    """`tables`' entry for the thresholds and device, made at its first step (outside the timed region)."""
    key = (tuple(thresholds), device)
    if key not in tables:
        positions = torch.arange(context, device=device)
        tables[key] = (torch.tensor(thresholds, device=device),
                       [(at(positions, p), positions <= p) for p in range(context)])
    return tables[key]


class StaticStep:
    """A Generator step over its own cache as a static cache: the buffers marked static for dynamo
    (torch._dynamo.mark_static_address, as Hugging Face's StaticCache does) and the step compiled
    with mode="reduce-overhead", each token a new cudagraph-trees step. One compile per cache."""

    fns: "dict[int, Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]]"  # by the cache's first buffer
    tables: StepTables  # at: the position

    def __init__(self) -> None:
        variants.allow_recompiles()
        self.fns, self.tables = {}, {}

    def __call__(self, model: decoder.Decoder, token: torch.Tensor, position: int, cache: Cache,
                 thresholds: Sequence[float], heads: int,
                 places: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        flat = [b for pair in cache for b in pair]
        key = id(cache[0][0])
        if key not in self.fns:
            for b in flat:
                torch._dynamo.mark_static_address(b)
            self.fns[key] = torch.compile(functools.partial(static_masked_step_tensors, model, heads, places),
                                          mode=variants.REDUCE_OVERHEAD, dynamic=False)
        limits, rows = step_table(self.tables, thresholds, flat[0].device, flat[0].shape[2],
                                  lambda positions, p: positions[p:p + 1].clone())
        at, seen = rows[position]
        # the last token's outputs are read: a new step (torch's cudagraph_mark_step_begin has no types)
        torch.compiler.cudagraph_mark_step_begin()  # type: ignore[no-untyped-call]
        token, exit_id, logits = self.fns[key](token, at, seen, limits, *flat)
        return token.clone(), exit_id.clone(), logits.clone()


class FixedStep:
    """A Generator step over the fixed-size cache: the list `cache` of (keys [1, heads, context, hd],
    values) is replaced, layer by layer, by the buffers the step returns. The one-hot positions and
    the thresholds as a tensor are made once, outside the timed region."""

    fn: "Callable[..., tuple[torch.Tensor, ...]] | None"  # the step, made at the first call
    tables: StepTables  # at: a one-hot row

    def __init__(self, body: StepBody, compiled: bool) -> None:
        self.body, self.compiled = body, compiled
        variants.allow_recompiles()
        self.fn, self.tables = None, {}

    def __call__(self, model: decoder.Decoder, token: torch.Tensor, position: int, cache: Cache,
                 thresholds: Sequence[float], heads: int,
                 places: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.fn is None:
            fn = functools.partial(self.body, model, heads, places)
            self.fn = torch.compile(fn, dynamic=False) if self.compiled else fn
        limits, rows = step_table(self.tables, thresholds, cache[0][0].device, cache[0][0].shape[2],
                                  lambda positions, p: positions == p)
        at, seen = rows[position]
        flat = [b[0] for pair in cache for b in pair]
        token, exit_id, logits, *flat = self.fn(token, at, seen, limits, *flat)
        cache[:] = [(flat[2 * l][None], flat[2 * l + 1][None]) for l in range(len(cache))]
        return token, exit_id, logits


VARIANTS = {
    "py_eager_if": Variant("per token, the host reads each exit's confidence (.item()) and breaks; skipped layers "
                           "propagate", lambda: eager_if_step, host_decides=True),
    "py_masked": Variant("per token, every layer and head; the token's state frozen with torch.where once it left",
                         lambda: masked_step),
    "py_cond": Variant("per token, nested torch.cond in eager mode, the cache an operand of every branch: each exit "
                       "decided on the host", lambda: FixedStep(cond_step_tensors, compiled=False), host_decides=True),
    "py_cond_compile": Variant("py_cond's step under torch.compile",
                               lambda: FixedStep(cond_step_tensors, compiled=True), host_decides=True),
    "py_masked_compile": Variant("masking over fixed-size cache buffers (a one-hot position) under torch.compile",
                                 lambda: FixedStep(masked_step_tensors, compiled=True)),
    "py_masked_static_ro": Variant(
        'masking over a static cache written in place, under torch.compile(mode="reduce-overhead"): Hugging '
        "Face's static-cache decoding, CUDA graphs replayed per token", StaticStep, default_devices=("cuda",)),
}
SUMMARIES = {name: v.summary for name, v in VARIANTS.items()}


class Generator:
    """One variant generating at batch 1 through a workload's prompt sequences, one token a call."""

    def __init__(self, model: decoder.Decoder, prompts: torch.Tensor, step: Step, thresholds: list[float],
                 config: Mapping[str, Any], device: str) -> None:
        self.model, self.prompts, self.step, self.thresholds = model, prompts, step, thresholds
        self.heads, self.generate = config["heads"], config["generate"]
        self.places = decoder.exit_layers(config["layers"], config["exit_every"])
        shape = (1, self.heads, config["context"], config["d_model"] // self.heads)
        self.cache = [(torch.zeros(shape, device=device), torch.zeros(shape, device=device))
                      for _ in model.layers]
        self.sequence, self.made = -1, self.generate

    def start(self) -> None:
        """The next sequence: its prompt's first tokens through every layer (the prefill)."""
        self.sequence = (self.sequence + 1) % len(self.prompts)
        prompt = self.prompts[self.sequence]
        for position in range(len(prompt) - 1):
            h = self.model.embed(prompt[position:position + 1]) + self.model.pos.weight[position]
            for l, layer in enumerate(self.model.layers):
                h = cached_layer(layer, h, *self.cache[l], position, self.heads)
        self.token, self.made = prompt[-1:], 0

    def next(self) -> tuple[torch.Tensor, "torch.Tensor | int", torch.Tensor]:
        """One generated token: (token, exit id, the logits it was chosen from)."""
        token, exit_id, logits = self.step(self.model, self.token, len(self.prompts[0]) - 1 + self.made,
                                           self.cache, self.thresholds, self.heads, self.places)
        self.token, self.made = token, self.made + 1
        return token, exit_id, logits

    @torch.no_grad()  # as the module's users generate: no autograd record of the weights' use
    def timed(self, n: int, sync: bool) -> float:
        """Seconds of n generated tokens; a sequence's prefill is not counted."""
        total = 0.0
        for _ in range(n):
            if self.made == self.generate:
                self.start()
            start = time.perf_counter()
            self.next()
            if sync:
                torch.cuda.synchronize()
            total += time.perf_counter() - start
        return total


def near_tie(t: int, token: int, exit_id: int, ref_token: int, ref_exit: int, ref_logits: torch.Tensor,
             ref_confidences: Sequence[Sequence[float]], thresholds: Sequence[float], margin: float) -> bool:
    """Whether step t parts from the module's decoding at a near tie (condbench's tie margin, which
    the workload carries): the exit where one left and the other did not has a confidence within
    the margin of its threshold, or, at the same exit, the token taken is within the margin
    (relative to the step's largest logit, at least 1) of the module's top logit."""
    if exit_id != ref_exit:
        at = min(exit_id, ref_exit)
        seen = ref_confidences[t]
        return at <= len(seen) and abs(seen[at - 1] - thresholds[at - 1]) < margin
    scale = max(1.0, float(ref_logits[t].abs().max()))
    return token != ref_token and float(ref_logits[t][ref_token] - ref_logits[t][token]) <= margin * scale


def load(w: "Workload") -> tuple[decoder.Decoder, torch.Tensor]:
    """The workload's decoder with its weights, and its prompts (int64 [rows, prompt], token ids of its
    vocabulary), on the CPU. Raises ValueError (or what torch raises) where a file is not that."""
    config = w.config
    model = decoder.Decoder(config["vocab"], config["d_model"], config["layers"], config["ffn"], config["context"])
    model.load_state_dict(torch.load(w.path("weights.pt"), weights_only=True))
    prompts = torch.load(w.path("prompts.pt"), weights_only=True)
    if not (isinstance(prompts, torch.Tensor) and prompts.dtype == torch.int64 and prompts.dim() == 2 and
            prompts.shape[0] >= 1 and prompts.shape[1] == config["prompt"] and
            bool(((prompts >= 0) & (prompts < config["vocab"])).all())):
        raise ValueError(f"prompts.pt is not int64 [rows, {config['prompt']}] of token ids below {config['vocab']}")
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise ValueError("weights.pt holds values that are not finite")
    return model.eval(), prompts


@torch.no_grad()
def cases(w: "Workload", model: decoder.Decoder, prompts: torch.Tensor, device: str, wanted_variants: Sequence[str],
          wanted_scenarios: Sequence[str], sync: bool) -> tuple[list[Case], list[str]]:
    """The decoder's cases of the workload `w` (a condbench.workload.Workload) for peer.py, on its
    model and prompts (load), each loop n generated tokens, and notes on what did not run."""
    config = w.config
    found: list[Case] = []
    notes: list[str] = []
    agreement = cast(Mapping[str, float], w.agreement)  # a decoder's workload carries its rule (workload.problem)
    for name, variant in VARIANTS.items():
        if (wanted_variants and name not in wanted_variants) or (not wanted_variants and
                                                                 device not in variant.default_devices):
            continue
        step = variant.make()
        for scenario, values in w.thresholds.items():
            if wanted_scenarios and scenario not in wanted_scenarios:
                continue
            thresholds = [float(t) for t in values]
            tolerance = float(agreement["relative_tolerance"])
            margin = float(agreement.get("tie_margin", 0.0))  # (older exports: none)
            generator = Generator(model, prompts, step, thresholds, config, device)
            # Correct before it is fast: every sequence against the module's own cache-free decoding,
            # up to a near tie where the two may part (the rest of that sequence then follows
            # other tokens: not compared, and counted).
            exits: list[int] = []
            why: str | None = None
            ties = 0
            for s in range(len(prompts)):
                generator.start()
                made = [generator.next() for _ in range(config["generate"])]
                tokens = [int(t) for t, _, _ in made]
                ids = [int(e) for _, e, _ in made]
                ref_confidences: list[list[float]] = []
                ref_tokens, ref_exits, ref_logits = decoder.generate(model.cpu(), prompts[s].tolist(),
                                                                     config["generate"], thresholds, config["heads"],
                                                                     config["exit_every"], ref_confidences)
                model.to(device)
                for t, (_, _, logits) in enumerate(made):
                    if (tokens[t], ids[t]) != (ref_tokens[t], ref_exits[t]):
                        if near_tie(t, tokens[t], ids[t], ref_tokens[t], ref_exits[t], ref_logits, ref_confidences,
                                    thresholds, margin):
                            ties += 1
                            break
                        why = (f"token {tokens[t]} at exit {ids[t]}, the module's {ref_tokens[t]} at exit "
                               f"{ref_exits[t]}")
                    elif not logits_agree(logits.reshape(-1), ref_logits[t], tolerance):
                        why = f"logits off by {float((logits.reshape(-1).cpu() - ref_logits[t]).abs().max()):.3g}"
                    if why:
                        why = f"differs from the module's cache-free decoding on sequence {s} at token {t}: {why}"
                        break
                if why:
                    break
                exits += ids
            if why:
                notes.append(f"{name}: {scenario} on the decoder not run ({why})")
                continue
            if ties:
                notes.append(f"{name}: {scenario} on the decoder parted from the module at {ties} near tie(s), "
                             "checked up to each")
            kind, _, value = scenario.partition(":")
            places = decoder.exit_layers(config["layers"], config["exit_every"])
            # (exit id) -> host reads; "...": mypy infers no lambda with a default argument against a signature
            host_reads: Callable[..., int] = (lambda e, n=len(places): min(e, n - 1)) if variant.host_decides \
                else (lambda e: 0)
            found.append(Case(names.build(["early_exit", device, "python", name],
                                          [(kind, value), ("batch", 1), *w.name_axes]),
                              loop=functools.partial(generator.timed, sync=sync), exits=tuple(exits),
                              blocks=len(places) - 1, host_syncs=host_reads, whole_walk=True))
    return found, notes
