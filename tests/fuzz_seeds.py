"""Writes the fuzzers' seed corpora, which are also their regression corpus: well-formed files
(crafted byte by byte, and saved by torch where it is importable) and each crafted file that once
crashed, hung or exhausted a tool. Usage: fuzz_seeds.py OUT_DIR REPORT_FIXTURES_DIR."""
import hashlib
import json
import os
import struct
import sys

from torch_save_craft import (archive, decoder_tensors, floats, model_tensors, p_dict, p_tensor, pickle_of,
                              state_dict_file, tensor_file, token_file)


def save(directory, data):
    os.makedirs(directory, exist_ok=True)
    data = data.encode() if isinstance(data, str) else data
    with open(os.path.join(directory, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def torch_save_seeds():
    yield state_dict_file(model_tensors())
    yield state_dict_file(model_tensors(in_features=3, hidden=4, classes=2, blocks=2))
    yield tensor_file([1.0, -1.0, 0.5, 2.0], [2, 2])
    yield archive(pickle_of(p_tensor("0", 0, 0, [0, 4], [4, 1])), {"0": b""})       # empty tensor
    yield archive(pickle_of(p_tensor("0", 1, 0, [1], [1])), {"0": b"\x01" * 3})   # record not a multiple
    yield archive(b"\x80\x02\x8a\x08")                                             # LONG1 at the end
    yield archive(b"\x80\x02" + b"(" * 5000)                                       # nested marks
    yield archive(b"\x80\x02" + b"]" * 5000 + b"a" * 4999 + b".")                  # nested lists
    yield archive(pickle_of(p_tensor("0", 4, 0, [2, 2], [2**40, 1])), {"0": floats([1, 2, 3, 4])})  # huge stride
    yield archive(pickle_of(p_tensor("0", 1, 0, [2**20, 2**20], [0, 0])), {"0": floats([1])})      # stride 0
    yield archive(pickle_of(p_dict([("bogus", p_tensor("0", 4, 0, [2, 2], [2, 1]))])), {})      # missing data
    yield archive(b"\x80\x02" + b"N" * 100000, compress_pickle=True)               # deflated pickle
    big = bytearray(archive(pickle_of(p_tensor("0", 1, 0, [1], [1])), {"0": floats([1])}))
    at = big.rfind(b"PK\x01\x02")
    struct.pack_into("<I", big, at + 24, 2400000000)                               # a record declaring 2.4 GB
    yield bytes(big)
    try:
        import io
        import torch
    except ImportError:
        return
    for value in (torch.nn.Linear(3, 2).state_dict(), torch.arange(6.0).reshape(2, 3),
                  torch.arange(6.0, dtype=torch.float64)[1:5], torch.zeros(2, 2, dtype=torch.half),
                  torch.empty(0, 4), {"a": torch.ones(2), "b": torch.ones(2)[1:]}):
        buffer = io.BytesIO()
        torch.save(value, buffer)
        yield buffer.getvalue()


def result_file_seeds(fixtures):
    with open(os.path.join(fixtures, "small.json")) as f:
        text = f.read()
    yield text
    data = json.loads(text)
    yield json.dumps(data, indent=None)
    yield text.replace('"threads": "2"', '"threads": ' + "[" * 1000 + "]" * 1000, 1)   # deep context
    for old, new in (("batch:1/", "batch:abc/"), ("batch:1/", "batch:99999999999999999999/"),
                     ("mix:early/", "exit:abc/"), ('"real_time": 10.0', '"real_time": "fast"'),
                     ('"real_time": 10.0', '"real_time": NaN'), ('"time_unit": "us"', '"time_unit": "fortnight"')):
        yield text.replace(old, new, 2)
    named = json.loads(text)
    for b in named["benchmarks"]:
        b["name"] = b["run_name"] = b.get("run_name", b["name"]).replace("fused", "fused'\"$(x)`y`|<s>")
    yield json.dumps(named)
    # small files mutate fastest: the context and one benchmark of each kind
    first = {}
    for b in data["benchmarks"]:
        first.setdefault((b.get("run_type"), b["name"].split("/")[0], b.get("error_occurred", False)), b)
    yield json.dumps({"context": data["context"], "benchmarks": list(first.values())})
    yield json.dumps({"context": data["context"], "benchmarks": data["benchmarks"][:4]})
    # which families are timed per token (condbench_per_token), read for a name's model: two, none,
    # and empty entries; of benchmarks of the decoder and of another family
    tokens = json.loads(json.dumps(data["benchmarks"][:4]))
    for i, b in enumerate(tokens):
        model = "/model:decoder/vocab:64/" if i < 2 else "/model:ssm/state:16/"
        b["name"] = b["run_name"] = b.get("run_name", b["name"]).replace("/hidden:64/", model)
    for value in ("decoder,ssm", "", ",decoder,"):
        yield json.dumps({"context": {**data["context"], "condbench_per_token": value}, "benchmarks": tokens})


def manifest_seeds():
    """A model file's manifest.json as model_file.py compile writes it (two stages, rows of 3 x 8 x 8,
    a confidence() of its own, a cond compiled with the workaround), and shapes at the reader's edges."""
    def part(name, row_in, row_out, package):
        return {"name": name, "input": ["rows", *row_in], "output": ["rows", *row_out], "flops_per_row": 1536,
                "bytes": 4096.0, "package": package}
    good = {"format": 7, "torch": "2.15.0", "device": "cpu", "file": "cnn.py", "digest": "0123456789abcdef",
            "stages": 2, "classes": 10, "confidence": "confidence()",
            "input": {"dtype": "float32", "inputs": [{"row": ["rows", 3, 8, 8], "below": None}], "pool": None},
            "parts": [part("stages[0]", [3, 8, 8], [16, 4, 4], "stage0.pt2"),
                      part("exits[0]", [16, 4, 4], [10], "exit0.pt2"), part("stages[1]", [16, 4, 4], [32], "stage1.pt2"),
                      part("exits[1]", [32], [10], "exit1.pt2"), part("final", [32], [10], "final.pt2")],
            "confidence_package": "confidence.pt2",
            "whole_model": {"cond": {"package": "cond.pt2", "workaround": "layout_optimization=False",
                                     "default": "the compiled cond module differs from the module on row 4"},
                            "masked": {"unavailable": "torch.export cannot export it"}},
            "reference": "reference.pt", "source": "/home/u/cnn.py", "weights": None, "compile_s": {"stage0.pt2": 11.2},
            "files": {"stage0.pt2": "00" * 32}, "reads": []}
    yield json.dumps(good, indent=1)
    yield json.dumps(good)
    wide = json.loads(json.dumps(good))
    wide["parts"][0]["input"] = wide["input"]["inputs"][0]["row"] = ["rows", 1 << 22]
    yield json.dumps(wide)
    ids = json.loads(json.dumps(good))  # token ids and a mask, packed
    ids["input"] = {"dtype": "int64", "inputs": [{"row": ["rows", 96], "below": 30522},
                                                  {"row": ["rows", 96], "below": 2}], "pool": "pool.pt"}
    ids["parts"][0]["input"] = ["rows", 192]
    yield json.dumps(ids)
    deep = json.loads(json.dumps(good))
    deep["parts"][0]["input"] = ["rows", 2, 2, 2, 2, 2, 2, 2]
    yield json.dumps(deep)
    yield json.dumps({**good, "stages": 256})


def decoder_seeds():
    """The decoder's state_dicts and prompts (condbench-infer --model=decoder --weights, --prompt): a
    small decoder and its near misses (a layer missing between others, a shape that does not fit),
    prompts within and beyond a default decoder's context and vocabulary."""
    yield state_dict_file(decoder_tensors())
    yield state_dict_file(decoder_tensors(layers=3, skip={f"layers.1.{k}" for k in ("attn.qkv.weight", "fc1.weight")}))
    yield state_dict_file([(n, v, [s[0] + 1, *s[1:]] if n == "pos.weight" else s) for n, v, s in decoder_tensors()])
    yield state_dict_file(decoder_tensors(context=16384, d_model=1, vocab=2, ffn=1))  # a long context, a small file
    yield token_file(2, 3)
    yield token_file(1, 65)          # longer than the default context of 64
    yield token_file(2, 2, 512)      # outside the default vocabulary of 512
    yield tensor_file([1.0, 2.0], [1, 2])


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip() if __doc__ else "usage: fuzz_seeds.py OUT_DIR FIXTURES_DIR")
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    out, fixtures = sys.argv[1], sys.argv[2]
    for data in torch_save_seeds():
        save(os.path.join(out, "torch_save"), data)
    for data in result_file_seeds(fixtures):
        save(os.path.join(out, "result_file"), data)
    for data in manifest_seeds():
        save(os.path.join(out, "manifest"), data)
    for data in decoder_seeds():
        save(os.path.join(out, "decoder"), data)


if __name__ == "__main__":
    main()
