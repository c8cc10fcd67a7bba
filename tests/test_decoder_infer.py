"""condbench-infer --model=decoder (docs/design.md §8) on a state_dict saved from the documented
PyTorch module (python/condbench/decoder.py's Decoder): every decoder strategy generates the tokens, exit
ids and logits of that module's own decoding without a cache, at batch 1 and 5, with a mix of exits
and with every token sent to exit 1; and bad input is one line naming the problem, exit code 2.

Usage: test_decoder_infer.py CONDBENCH_INFER [unittest arguments]"""
import json
import os
import sys
import tempfile
import unittest

INFER = sys.argv[1]
del sys.argv[1]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from tools import run  # noqa: E402

try:
    import torch
    from condbench import decoder
except ImportError:
    torch = None

HEADS, EXIT_EVERY, STEPS = 2, 2, 6
SIZES = dict(vocab=41, d_model=24, layers=5, ffn=40, context=16)


@unittest.skipIf(torch is None, "needs torch (scripts/setup's .venv)")
class AgainstTheModule(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        torch.manual_seed(3)
        cls.model = decoder.Decoder(**SIZES).eval()
        cls.weights = os.path.join(cls.dir.name, "w.pt")
        torch.save(cls.model.state_dict(), cls.weights)
        cls.prompts = torch.randint(0, SIZES["vocab"], (5, 4))
        cls.prompt_file = os.path.join(cls.dir.name, "p.pt")
        torch.save(cls.prompts, cls.prompt_file)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def infer(self, *extra, prompt=None):
        return run(INFER, "--model=decoder", "--weights=" + self.weights, f"--heads={HEADS}", f"--exit-every={EXIT_EVERY}",
                   "--prompt=" + (prompt or self.prompt_file), f"--generate={STEPS}", "--device=cpu", *extra)

    def thresholds_between(self):
        """Thresholds in the widest gap of the middle half of the module's confidences at each exit,
        so that tokens leave at every exit and no decision hangs on the last bit."""
        places = decoder.exit_layers(SIZES["layers"], EXIT_EVERY)[:-1]
        conf = [[] for _ in places]
        never = [1.0] * len(places)
        for row in self.prompts.tolist():
            with torch.no_grad():
                tokens, _, _ = decoder.generate(self.model, row, STEPS, never, HEADS, EXIT_EVERY)
                seq = row + tokens[:-1]
                for n in range(len(row), len(seq) + 1):
                    h = self.model.embed(torch.tensor(seq[:n])) + self.model.pos(torch.arange(n))
                    for l, layer in enumerate(self.model.layers):
                        h = decoder.layer_forward(layer, h, HEADS)
                        if l + 1 in places:
                            logits = self.model.head(self.model.norm(h[-1]))
                            conf[places.index(l + 1)].append(float(torch.softmax(logits, -1).max()))
        thresholds = []
        for c in conf:
            c.sort()
            middle = c[len(c) // 4: 3 * len(c) // 4 + 1]
            gap = max(range(len(middle) - 1), key=lambda i: middle[i + 1] - middle[i])
            thresholds.append((middle[gap] + middle[gap + 1]) / 2)
        return thresholds

    def check(self, thresholds):
        result = self.infer("--thresholds=" + ",".join(f"{t:.9g}" for t in thresholds))
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertTrue(out["agree"])
        names = [s["strategy"] for s in out["strategies"]]
        self.assertEqual(sorted(names), ["eager_host", "fused", "masked"])
        seen = set()
        for r, row in enumerate(self.prompts.tolist()):
            tokens, exits, logits = decoder.generate(self.model, row, STEPS, [float(t) for t in thresholds], HEADS,
                                                     EXIT_EVERY)
            seen.update(exits)
            for s in out["strategies"]:
                with self.subTest(strategy=s["strategy"], row=r):
                    self.assertEqual(s["tokens"][r], tokens)
                    self.assertEqual(s["exit_ids"][r], exits)
                    got = torch.tensor(s["logits"][r])
                    scale = max(1.0, float(logits.abs().max()))
                    self.assertLess(float((got - logits).abs().max()), 1e-4 * scale)
        return seen

    def test_a_mix_of_exits(self):
        seen = self.check(self.thresholds_between())
        self.assertGreaterEqual(len(seen), 2, "the thresholds sent every token to one exit")

    def test_every_token_at_exit_1(self):
        self.assertEqual(self.check([0.0, 1.0]), {1})

    def test_batch_1(self):
        one = os.path.join(self.dir.name, "one.pt")
        torch.save(self.prompts[:1].clone(), one)
        result = self.infer("--thresholds=1,1", prompt=one)
        self.assertEqual(result.returncode, 0, result.stderr)
        tokens, exits, _ = decoder.generate(self.model, self.prompts[0].tolist(), STEPS, [1, 1], HEADS, EXIT_EVERY)
        for s in json.loads(result.stdout)["strategies"]:
            self.assertEqual(s["tokens"], [tokens])
            self.assertEqual(s["exit_ids"], [[3] * STEPS])

    def test_the_model_flag_picks_the_decoders_mode_by_its_name(self):
        # --model decoder, two words, as --model=decoder: the decoder's prompts and tokens; each answer
        # of integers where they are ids
        result = run(INFER, "--model", "decoder", "--weights=" + self.weights, f"--heads={HEADS}",
                     f"--exit-every={EXIT_EVERY}", "--prompt=" + self.prompt_file, f"--generate={STEPS}",
                     "--device=cpu", "--thresholds=1,1", "--strategy=eager_host")
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertEqual(sorted(out), ["agree", "model", "rows", "strategies", "thresholds"])
        self.assertTrue(out["model"].startswith("model=decoder vocab=41 d_model=24 "), out["model"])
        answer = out["strategies"][0]
        self.assertEqual(sorted(answer), ["device", "engine", "exit_ids", "logits", "strategy", "tokens"])
        for key in ("tokens", "exit_ids"):
            self.assertTrue(all(type(v) is int for row in answer[key] for v in row), key)
        self.assertEqual(answer["exit_ids"], [[3] * STEPS] * len(self.prompts))
        # a family no one registered: the families' refusal, which names the decoder among them
        self.refused(run(INFER, "--model=nosuch", "--thresholds=0.5", "--device=cpu"), "nosuch", "decoder")

    def refused(self, result, *words):
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertEqual(result.stdout, "")
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        for word in words:
            self.assertIn(word, lines[0])

    def test_bad_input_is_one_line(self):
        other = os.path.join(self.dir.name, "other.pt")
        state = self.model.state_dict()
        state["layers.1.fc1.weight"] = torch.zeros(7, SIZES["d_model"])
        torch.save(state, other)
        self.refused(run(INFER, "--model=decoder", "--weights=" + other, "--thresholds=0.5,0.5", "--device=cpu"),
                     "layers.1.fc1.weight")
        long_prompt = os.path.join(self.dir.name, "long.pt")
        torch.save(torch.zeros(1, SIZES["context"] + 1, dtype=torch.long), long_prompt)
        self.refused(self.infer("--thresholds=0.5,0.5", prompt=long_prompt), "--prompt", "context")
        outside = os.path.join(self.dir.name, "outside.pt")
        torch.save(torch.full((2, 3), SIZES["vocab"], dtype=torch.long), outside)
        self.refused(self.infer("--thresholds=0.5,0.5", prompt=outside), "--prompt", "vocabulary")
        floats = os.path.join(self.dir.name, "floats.pt")
        torch.save(torch.zeros(2, 3), floats)
        self.refused(self.infer("--thresholds=0.5,0.5", prompt=floats), "--prompt", "int64")
        self.refused(self.infer("--thresholds=0.5"), "--thresholds", "expected 2")
        self.refused(run(INFER, "--model=decoder", "--weights=" + self.weights, "--decoder=heads=2",
                         "--prompt=" + self.prompt_file, "--generate=14", "--thresholds=0.5,0.5"),
                     "--generate", "context")
        self.refused(run(INFER, "--model=decoder", "--weights=" + self.weights, "--decoder=heads=5",
                         "--prompt=" + self.prompt_file, "--thresholds=0.5,0.5", "--generate=2"), "heads")
        self.refused(run(INFER, "--model=decoder", "--decoder=depth=3", "--thresholds=0.5"), "--decoder", "depth")


if __name__ == "__main__":
    unittest.main()
