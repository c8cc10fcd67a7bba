"""Crafted torch.save files, made byte by byte (no torch needed): the pickle opcodes a state_dict
uses, and the zip layout torch.save writes. The hardening tests and the fuzz seed generator use it."""
import io
import math
import struct
import zipfile


def p_int(v):
    if -2**31 <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    return b"\x8a\x08" + struct.pack("<q", v)  # LONG1, 8 bytes


def p_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_tuple(items):
    return b"(" + b"".join(items) + b"t"


def p_global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def p_storage(key, numel, storage_type="FloatStorage"):
    return p_tuple([p_str("storage"), p_global("torch", storage_type), p_str(key), p_str("cpu"), p_int(numel)]) + b"Q"


def p_tensor(key, numel, offset, sizes, strides, storage_type="FloatStorage"):
    return (p_global("torch._utils", "_rebuild_tensor_v2") +
            p_tuple([p_storage(key, numel, storage_type), p_int(offset), p_tuple([p_int(s) for s in sizes]),
                     p_tuple([p_int(s) for s in strides])]) + b"R")


def p_dict(items):
    """An OrderedDict, as model.state_dict() pickles."""
    body = p_global("collections", "OrderedDict") + b")R"
    if items:
        body += b"(" + b"".join(p_str(k) + v for k, v in items) + b"u"
    return body


def pickle_of(body):
    return b"\x80\x02" + body + b"."


def archive(pickle, records=None, compress_pickle=False):
    """The zip torch.save writes: archive/data.pkl, byteorder, version, data/<key> records."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl"), pickle,
                   compress_type=zipfile.ZIP_DEFLATED if compress_pickle else zipfile.ZIP_STORED)
        z.writestr("archive/byteorder", b"little")
        for key, data in (records or {}).items():
            z.writestr("archive/data/" + key, data)
        z.writestr("archive/version", b"3\n")
    return out.getvalue()


def floats(values):
    return struct.pack("<%df" % len(values), *values)


def tensor_file(values, sizes=None):
    """A float tensor file: torch.save(torch.tensor(values).reshape(sizes))."""
    sizes = sizes or [len(values)]
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    return archive(pickle_of(p_tensor("0", len(values), 0, sizes, strides)), {"0": floats(values)})


def state_dict_file(tensors):
    """A state_dict file from [(name, values, sizes)], each tensor with its own storage."""
    items, records = [], {}
    for i, (name, values, sizes) in enumerate(tensors):
        strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
        items.append((name, p_tensor(str(i), len(values), 0, sizes, strides)))
        records[str(i)] = floats(values)
    return archive(pickle_of(p_dict(items)), records)


def model_tensors(in_features=2, hidden=2, classes=2, blocks=1, value=0.5):
    """The parameters of condbench's early-exit model, every weight `value`."""
    out = []
    def linear(name, n_in, n_out):
        out.append((name + ".weight", [value] * (n_in * n_out), [n_out, n_in]))
        out.append((name + ".bias", [value] * n_out, [n_out]))
    for i in range(blocks):
        linear(f"backbone.{i}", in_features if i == 0 else hidden, hidden)
    for k in range(1, blocks + 1):
        linear(f"exit{k}", hidden, classes)
    linear("final", hidden, classes)
    return out


def decoder_tensors(vocab=5, d_model=4, layers=2, ffn=6, context=8, value=0.1, skip=()):
    """The parameters of condbench's decoder (docs/models.md, "The decoder"), every value `value`,
    the keys in `skip` left out."""
    out = []

    def tensor(name, shape):
        if name not in skip:
            out.append((name, [value] * math.prod(shape), shape))

    tensor("embed.weight", [vocab, d_model])
    tensor("pos.weight", [context, d_model])
    for i in range(layers):
        for name, shape in (("norm1.weight", [d_model]), ("norm1.bias", [d_model]),
                            ("attn.qkv.weight", [3 * d_model, d_model]), ("attn.qkv.bias", [3 * d_model]),
                            ("attn.out.weight", [d_model, d_model]), ("attn.out.bias", [d_model]),
                            ("norm2.weight", [d_model]), ("norm2.bias", [d_model]),
                            ("fc1.weight", [ffn, d_model]), ("fc1.bias", [ffn]),
                            ("fc2.weight", [d_model, ffn]), ("fc2.bias", [d_model])):
            tensor(f"layers.{i}.{name}", shape)
    tensor("norm.weight", [d_model])
    tensor("norm.bias", [d_model])
    tensor("head.weight", [vocab, d_model])
    return out


def token_file(rows, tokens, value=0):
    """Prompts: torch.save(torch.full((rows, tokens), value, dtype=torch.long))."""
    n = rows * tokens
    return archive(pickle_of(p_tensor("0", n, 0, [rows, tokens], [tokens, 1], "LongStorage")),
                   {"0": struct.pack("<%dq" % n, *([value] * n))})
