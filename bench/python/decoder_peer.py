"""The Python peer's decoder (docs/design.md §8): per-token early exit written as PyTorch users
write it, at batch 1, on the weights, prompts and thresholds `condbench --export-workload` wrote,
with a key/value cache the way generation loops keep one:

  py_eager_if  the HF style: after each exit layer, `if confidence.item() > t:` leaves, and the
               layers it skipped get the token's keys and values from its state there (CALM's
               state propagation); one host read per exit reached.
  py_masked    every layer and every exit's head, the token's state frozen with torch.where once it
               left (the deeper layers then write keys and values projected from it); no host read.

Each variant is first checked against decoder.generate, the module's own decoding without a cache,
on every sequence it will time: a variant that differs is not timed, and says where. peer.py times
the cases: one iteration is one generated token, a new sequence's prefill outside the timed region.
"""
import os
import time

import torch
from torch.nn import functional as F

import decoder

SUMMARIES = {
    "py_eager_if": "per token, the host reads each exit's confidence (.item()) and breaks; skipped layers propagate",
    "py_masked": "per token, every layer and head; the token's state frozen with torch.where once it left",
}


def cached_layer(layer, h, keys, values, position, heads):
    """Layer `layer` on one token's state h [1, d] at `position`: its key and value written into the
    cache [1, heads, context, head_dim], attention over positions 0..position."""
    d = h.shape[-1]
    q, k, v = layer.attn.qkv(layer.norm1(h)).chunk(3, -1)
    keys[:, :, position] = k.view(1, heads, d // heads)
    values[:, :, position] = v.view(1, heads, d // heads)
    a = F.scaled_dot_product_attention(q.view(1, heads, 1, d // heads), keys[:, :, :position + 1],
                                       values[:, :, :position + 1])
    x = h + layer.attn.out(a.reshape(1, d))
    return x + layer.fc2(F.gelu(layer.fc1(layer.norm2(x))))


def propagate(layer, h, keys, values, position, heads):
    """Only the key and value `layer` would write for state h: a token that left."""
    d = h.shape[-1]
    kv = F.linear(layer.norm1(h), layer.attn.qkv.weight[d:], layer.attn.qkv.bias[d:])
    keys[:, :, position] = kv[:, :d].view(1, heads, d // heads)
    values[:, :, position] = kv[:, d:].view(1, heads, d // heads)


def eager_if_step(model, token, position, cache, thresholds, heads, places):
    h = model.embed(token) + model.pos.weight[position]
    for l, layer in enumerate(model.layers):
        h = cached_layer(layer, h, *cache[l], position, heads)
        if l + 1 in places[:-1]:
            e = places.index(l + 1)
            logits = model.head(model.norm(h))
            if torch.softmax(logits, -1).max().item() > thresholds[e]:  # the host reads the decision
                for m in range(l + 1, len(model.layers)):
                    propagate(model.layers[m], h, *cache[m], position, heads)
                return logits.argmax(-1), e + 1
    return model.head(model.norm(h)).argmax(-1), len(places)


def masked_step(model, token, position, cache, thresholds, heads, places):
    h = model.embed(token) + model.pos.weight[position]
    left = torch.zeros(1, dtype=torch.bool, device=h.device)
    exit_id = torch.full((1,), len(places), dtype=torch.int32, device=h.device)
    chosen = None
    for l, layer in enumerate(model.layers):
        h = torch.where(left[:, None], h, cached_layer(layer, h, *cache[l], position, heads))
        if l + 1 in places[:-1]:
            e = places.index(l + 1)
            logits = model.head(model.norm(h))
            fire = (torch.softmax(logits, -1).amax(-1) > thresholds[e]) & ~left
            chosen = logits if chosen is None else torch.where(fire[:, None], logits, chosen)
            exit_id = torch.where(fire, e + 1, exit_id)
            left = left | fire
    final = model.head(model.norm(h))
    chosen = final if chosen is None else torch.where(left[:, None], chosen, final)
    return chosen.argmax(-1), exit_id


STEPS = {"py_eager_if": eager_if_step, "py_masked": masked_step}


class Generator:
    """One variant generating at batch 1 through a workload's prompt sequences, one token a call."""

    def __init__(self, model, prompts, step, thresholds, config, device):
        self.model, self.prompts, self.step, self.thresholds = model, prompts, step, thresholds
        self.heads, self.generate = config["heads"], config["generate"]
        self.places = decoder.exit_layers(config["layers"], config["exit_every"])
        shape = (1, self.heads, config["context"], config["d_model"] // self.heads)
        self.cache = [(torch.zeros(shape, device=device), torch.zeros(shape, device=device))
                      for _ in model.layers]
        self.sequence, self.made = -1, self.generate

    def start(self):
        """The next sequence: its prompt's first tokens through every layer (the prefill)."""
        self.sequence = (self.sequence + 1) % len(self.prompts)
        prompt = self.prompts[self.sequence]
        for position in range(len(prompt) - 1):
            h = self.model.embed(prompt[position:position + 1]) + self.model.pos.weight[position]
            for l, layer in enumerate(self.model.layers):
                h = cached_layer(layer, h, *self.cache[l], position, self.heads)
        self.token, self.made = prompt[-1:], 0

    def next(self):
        """One generated token: (token, exit id)."""
        token, exit_id = self.step(self.model, self.token, len(self.prompts[0]) - 1 + self.made, self.cache,
                                   self.thresholds, self.heads, self.places)
        self.token, self.made = token, self.made + 1
        return token, exit_id

    def timed(self, n, sync):
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


@torch.no_grad()
def cases(directory, meta, device, wanted_variants, wanted_scenarios, sync):
    """The decoder's cases for peer.py (each times itself: case["loop"](n)), and notes on what did not run."""
    config = meta["config"]
    model = decoder.Decoder(config["vocab"], config["d_model"], config["layers"], config["ffn"], config["context"])
    model.load_state_dict(torch.load(os.path.join(directory, "weights.pt")))
    model = model.to(device).eval()
    prompts = torch.load(os.path.join(directory, "prompts.pt")).to(device)
    found, notes = [], []
    for name, step in STEPS.items():
        if wanted_variants and name not in wanted_variants:
            continue
        for scenario, values in meta["thresholds"].items():
            if wanted_scenarios and scenario not in wanted_scenarios:
                continue
            thresholds = [float(t) for t in values]
            generator = Generator(model, prompts, step, thresholds, config, device)
            # Correct before it is fast: every sequence against the module's own cache-free decoding.
            exits, why = [], None
            for s in range(len(prompts)):
                generator.start()
                made = [generator.next() for _ in range(config["generate"])]
                tokens = [int(t) for t, _ in made]
                ids = [int(e) for _, e in made]
                ref_tokens, ref_exits, _ = decoder.generate(model.cpu(), prompts[s].tolist(), config["generate"],
                                                            thresholds, config["heads"], config["exit_every"])
                model.to(device)
                if (tokens, ids) != (ref_tokens, ref_exits):
                    t = next(i for i in range(len(ids)) if (tokens[i], ids[i]) != (ref_tokens[i], ref_exits[i]))
                    why = (f"differs from the module's cache-free decoding on sequence {s} at token {t}: "
                           f"token {tokens[t]} at exit {ids[t]}, the module's {ref_tokens[t]} at exit {ref_exits[t]}")
                    break
                exits += ids
            if why:
                notes.append(f"{name}: {scenario} on the decoder not run ({why})")
                continue
            kind, _, value = scenario.partition(":")
            places = decoder.exit_layers(config["layers"], config["exit_every"])
            host_reads = (lambda e, n=len(places): min(e, n - 1)) if name == "py_eager_if" else (lambda e: 0)
            found.append({"loop": (lambda n, g=generator: g.timed(n, sync)), "exits": exits,
                          "host_syncs": host_reads, "blocks": len(places) - 1, "name": (kind, value), "variant": name})
    return found, notes
