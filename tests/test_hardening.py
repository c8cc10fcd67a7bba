"""Files from other machines, crafted to hurt: condbench and condbench-infer must answer each with
one line naming what is wrong and exit code 2 (bad input): never a crash, a hang, a huge
allocation or a half-written output. Every file is made here, byte by byte.
Usage: test_hardening.py CONDBENCH CONDBENCH_INFER."""
import json
import math
import os
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from fuzz_seeds import manifest_seeds
from tools import main, run  # tests/tools.py: the tests' shared helpers
from torch_save_craft import (archive, decoder_tensors, floats, model_tensors, p_dict, p_str, p_tensor, pickle_of,
                              state_dict_file, tensor_file, token_file)

CONDBENCH, INFER = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
SMALL_MODEL = model_tensors()  # in_features 2, hidden 2, 2 classes, 1 block: one threshold


class Case(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def assert_bad_input(self, result, *fragments):
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"expected one line, got {result.stderr!r}")
        for fragment in fragments:
            self.assertIn(fragment, lines[0])
        return lines[0]

    def infer_weights(self, data):
        return run(INFER, "--device=cpu", "--weights=" + self.write("w.pt", data), "--thresholds=0.5")

    def infer_input(self, data):
        return run(INFER, "--device=cpu", "--input=" + self.write("x.pt", data), "--thresholds=0.5,0.5,0.5")


class CraftedFilesAreRealFiles(Case):
    """The crafting helpers make files condbench reads: the refusals below are about the defect."""

    def test_crafted_state_dict_and_input_load(self):
        weights = self.write("w.pt", state_dict_file(SMALL_MODEL))
        inputs = self.write("x.pt", tensor_file([1.0, -1.0, 0.5, 2.0], [2, 2]))
        result = run(INFER, "--device=cpu", "--weights=" + weights, "--input=" + inputs, "--thresholds=0.5")
        self.assertEqual(result.returncode, 0, result.stderr)


class TorchSaveReader(Case):
    def test_storage_record_not_a_multiple_of_the_element_size(self):
        for size in (1, 2, 3, 5):
            with self.subTest(size=size):
                data = archive(pickle_of(p_tensor("0", 1, 0, [1], [1])), {"0": b"\x01" * size})
                self.assert_bad_input(self.infer_input(data), "x.pt", "storage '0' has %d bytes, expected 4" % size)

    def test_empty_tensor_has_no_data_to_copy(self):
        data = archive(pickle_of(p_tensor("0", 0, 0, [0, 4], [4, 1])), {"0": b""})
        result = run(INFER, "--device=cpu", "--input=" + self.write("x.pt", data), "--in-features=4",
                     "--thresholds=0.5,0.5,0.5")
        self.assert_bad_input(result, "--input: the tensor has no rows")

    def test_long1_at_the_end_of_the_pickle(self):
        for pickle in (b"\x80\x02\x8a\x08", b"\x80\x02\x8a\x08\x01\x02", b"\x80\x02\x8a"):
            with self.subTest(pickle=pickle):
                self.assert_bad_input(self.infer_input(archive(pickle)), "the pickle ends early")

    def test_deeply_nested_marks_hit_the_nesting_limit(self):
        self.assert_bad_input(self.infer_input(archive(b"\x80\x02" + b"(" * 200000)), "limit: pickle nesting")

    def test_deeply_nested_lists_without_marks_are_freed_without_recursion(self):
        # ] pushes a list, a appends the top into the one below: 100000 lists, each inside the next
        pickle = b"\x80\x02" + b"]" * 100000 + b"a" * 99999 + b"."
        self.assert_bad_input(self.infer_input(archive(pickle)), "expected a tensor or a dict of tensors")

    def test_huge_stride_is_refused_before_any_view(self):
        data = archive(pickle_of(p_tensor("0", 4, 0, [2, 2], [2**40, 1])), {"0": floats([1, 2, 3, 4])})
        self.assert_bad_input(self.infer_input(data), "strides and offset must lie inside the storage")

    def test_offset_past_the_storage_is_refused(self):
        data = archive(pickle_of(p_tensor("0", 4, 3, [1, 2], [2, 1])), {"0": floats([1, 2, 3, 4])})
        self.assert_bad_input(self.infer_input(data), "strides and offset must lie inside the storage")

    def test_stride_zero_cannot_blow_up_a_tiny_storage(self):
        data = archive(pickle_of(p_tensor("0", 1, 0, [2**20, 2**20], [0, 0])), {"0": floats([1])})
        self.assert_bad_input(self.infer_input(data), "limit: tensor bytes")

    def test_storage_declared_larger_than_the_file(self):
        data = archive(pickle_of(p_tensor("0", 2**40, 0, [1], [1])), {"0": floats([1])})
        self.assert_bad_input(self.infer_input(data), "limit: tensor bytes")

    def test_deflated_pickle_cannot_expand_past_the_file(self):
        # 20 KB on disk, 20 MB of opcodes once inflated: one heap value per opcode before the limits
        data = archive(b"\x80\x02" + b"N" * (20 << 20), compress_pickle=True)
        self.assertLess(len(data), 100000)
        self.assert_bad_input(self.infer_input(data), "archive/data.pkl", "limit: record size")

    def test_opcode_limit(self):
        data = archive(b"\x80\x02" + b"N" * 1100000 + b".")
        self.assert_bad_input(self.infer_input(data), "limit: pickle opcodes")

    def test_zip_record_declaring_gigabytes_is_refused_before_it_is_read(self):
        data = bytearray(archive(pickle_of(p_tensor("0", 1, 0, [1], [1])), {"0": floats([1])}))
        # the central directory entry of data/0: set its uncompressed size to 2.4 GB
        name = b"archive/data/0"
        at = 0
        while True:
            at = data.index(b"PK\x01\x02", at)
            if data[at + 46:at + 46 + len(name)] == name:
                break
            at += 4
        struct.pack_into("<I", data, at + 24, 2400000000)
        self.assertLess(len(data), 1000)
        self.assert_bad_input(self.infer_input(bytes(data)), "archive/data/0", "limit: record size")

    def test_keys_and_shapes_are_checked_before_any_data_is_read(self):
        # a state_dict for another model whose storages are missing: refused for its keys, so the
        # reader never went looking for the data
        items = [("bogus.weight", p_tensor("0", 4, 0, [2, 2], [2, 1]))]
        data = archive(pickle_of(p_dict(items)), {})
        self.assert_bad_input(self.infer_weights(data), "no key of a model family's first block, 'backbone.0...' (mlp) "
                                                        "or 'layers.0...' (transformer)")
        wrong_shape = [(n, v, s) for n, v, s in SMALL_MODEL]
        items = [(n, p_tensor(str(i), len(v), 0, s, [1] * len(s))) for i, (n, v, s) in enumerate(wrong_shape)]
        items[2] = ("exit1.weight", p_tensor("2", 2, 0, [2, 1], [1, 1]))
        self.assert_bad_input(self.infer_weights(archive(pickle_of(p_dict(items)), {})),
                              "'exit1.weight' has shape [2, 1], expected [2, 2]")

    def test_nan_and_infinite_weights_are_refused(self):
        for bad in (float("nan"), float("inf"), float("-inf")):
            with self.subTest(value=bad):
                tensors = [(n, list(v), s) for n, v, s in SMALL_MODEL]
                tensors[2][1][0] = bad
                self.assert_bad_input(self.infer_weights(state_dict_file(tensors)),
                                      "'exit1.weight' holds NaN or infinite values")

    def test_nan_inputs_are_refused(self):
        data = tensor_file([1.0, float("nan"), 0.5, 2.0], [2, 2])
        result = run(INFER, "--device=cpu", "--weights=" + self.write("w.pt", state_dict_file(SMALL_MODEL)),
                     "--input=" + self.write("x.pt", data), "--thresholds=0.5")
        self.assert_bad_input(result, f"input '{self.dir}/x.pt': the tensor holds NaN or infinite values")

    def test_names_from_the_file_cannot_break_the_error_line(self):
        data = state_dict_file(SMALL_MODEL + [("evil\nsecond line\r\x1b[31m", [1.0], [1])])
        line = self.assert_bad_input(self.infer_weights(data), "unexpected key")
        self.assertIn("evil\\nsecond line", line)
        self.assertNotIn("\x1b", line)

    def test_float64_input_is_named_as_such(self):
        data = archive(pickle_of(p_tensor("0", 3, 0, [3], [1], "DoubleStorage")), {"0": struct.pack("<3d", 1, 2, 3)})
        self.assert_bad_input(self.infer_input(data), "Double [1, 3]")

    def test_unsupported_objects_are_named_not_run(self):
        pickle = pickle_of(b"cos\nsystem\n" + b"(" + p_str("touch pwned") + b"tR")
        self.assert_bad_input(self.infer_input(archive(pickle)), "objects of type os.system are not supported")
        self.assertFalse(os.path.exists("pwned"))


class Flags(Case):
    def test_tiny_thresholds_are_numbers(self):
        result = run(INFER, "--device=cpu", "--batch=2", "--thresholds=1e-50,0,0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_bad_input(run(INFER, "--device=cpu", "--thresholds=1e50,0,0"), "out of range [0, 1]")

    def test_benchmark_out_given_twice(self):
        a, b = os.path.join(self.dir, "a.json"), os.path.join(self.dir, "b.json")
        result = run(CONDBENCH, "--benchmark_out=" + a, "--benchmark_out=" + b, "--benchmark_list_tests")
        self.assert_bad_input(result, "--benchmark_out: given twice")
        self.assertEqual(os.listdir(self.dir), [])

    def test_benchmark_out_naming_a_directory_is_refused_before_the_run(self):
        result = run(CONDBENCH, "--device=cpu", "--benchmark_out=" + self.dir, "--benchmark_filter=none")
        self.assert_bad_input(result, "is a folder, not a regular file")
        self.assertEqual(os.listdir(self.dir), [])


class Signals(Case):
    def test_ctrl_c_during_a_run_removes_the_temporary_result(self):
        out = os.path.join(self.dir, "run.json")
        proc = subprocess.Popen([CONDBENCH, "--device=cpu", "--hidden=16", "--benchmark_min_time=30",
                                 "--benchmark_out=" + out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while not os.listdir(self.dir) and proc.poll() is None:
            time.sleep(0.02)  # polling for the temporary to appear; nothing is asserted about time
        self.assertEqual(len(os.listdir(self.dir)), 1)
        self.assertIn(".tmp-", os.listdir(self.dir)[0])
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, -signal.SIGINT)
        self.assertEqual(os.listdir(self.dir), [])


class ExportWorkload(Case):
    def test_impossible_path_is_one_line_not_an_abort(self):
        blocker = self.write("file", b"x")
        result = run(CONDBENCH, "--device=cpu", "--hidden=16", "--export-workload=" + os.path.join(blocker, "sub"))
        self.assert_bad_input(result, f"--export-workload: '{blocker}/sub': '{blocker}' is not a folder")

    def test_a_file_that_cannot_be_renamed_into_place_is_kept_and_named(self):
        out = os.path.join(self.dir, "export")
        os.makedirs(os.path.join(out, "mlp-in_features32-hidden16-c10-b3", "workload.json", "in-the-way"))
        result = run(CONDBENCH, "--device=cpu", "--hidden=16", "--export-workload=" + out)
        line = self.assert_bad_input(result, "workload.json", "it is kept in")
        kept = line.split("it is kept in '")[1].rstrip("'")
        self.assertEqual(sorted(os.listdir(kept)), ["pool.pt", "weights.pt", "workload.json"])  # the export, whole
        self.assertNotIn("wrote", result.stdout)


def state_dict_file64(tensors):
    """state_dict_file, in float64 (DoubleStorage)."""
    items, records = [], {}
    for i, (name, values, sizes) in enumerate(tensors):
        strides = [math.prod(sizes[j + 1:]) for j in range(len(sizes))]
        items.append((name, p_tensor(str(i), len(values), 0, sizes, strides, "DoubleStorage")))
        records[str(i)] = struct.pack("<%dd" % len(values), *values)
    return archive(pickle_of(p_dict(items)), records)


TINY = ["--device=cpu", "--hidden=16", "--batch=1", "--scenario=exit:1", "--strategy=fused",
        "--benchmark_min_time=0.01", "--benchmark_repetitions=2"]


class Outputs(Case):
    """The output policy (condbench/output_file.h): every output checked before the run; nothing that
    existed is changed when one is refused."""

    def snapshot(self):
        """What is in the folder: each entry's kind and, for a regular file, its bytes."""
        out = {}
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            st = os.lstat(path)
            out[name] = (stat.S_IFMT(st.st_mode), os.readlink(path) if os.path.islink(path) else
                         open(path, "rb").read() if stat.S_ISREG(st.st_mode) else None)
        return out

    def assert_refused_untouched(self, args, *fragments):
        before = self.snapshot()
        line = self.assert_bad_input(run(CONDBENCH, *args), *fragments)
        self.assertEqual(self.snapshot(), before, line)
        return line

    def specials(self):
        """A FIFO, a symbolic link to a precious file, a device node where this user may make one
        (never a path under /dev): name -> what the refusal calls it."""
        precious = self.write("precious.json", b"precious")
        os.mkfifo(os.path.join(self.dir, "fifo"))
        os.symlink(precious, os.path.join(self.dir, "link"))
        made = {"fifo": "is a FIFO", "link": "is a symbolic link"}
        try:
            os.mknod(os.path.join(self.dir, "null"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
            made["null"] = "is a device"
        except PermissionError:
            pass  # not root: the FIFO and the link stand for the rest
        return made

    def test_no_output_replaces_a_device_fifo_or_link(self):
        for name, kind in self.specials().items():
            target = os.path.join(self.dir, name)
            for flag in ("--benchmark_out", "--checkpoint-out", "--trace"):
                with self.subTest(flag=flag, target=name):
                    self.assert_refused_untouched([*TINY, f"{flag}={target}"], f"{flag}: '{target}' {kind}")

    def test_two_outputs_naming_one_file_are_refused_before_the_run(self):
        out = self.write("out.json", b"precious")
        os.link(out, os.path.join(self.dir, "hardlink.json"))
        for a, b in (("--benchmark_out", "--trace"), ("--benchmark_out", "--checkpoint-out"),
                     ("--checkpoint-out", "--trace")):
            for other in (out, os.path.join(self.dir, "hardlink.json"), os.path.join(self.dir, ".", "out.json")):
                with self.subTest(a=a, b=b, other=other):
                    self.assert_refused_untouched([*TINY, f"{a}={out}", f"{b}={other}"], f"{a} and {b} name the same file")
        # one that does not exist yet, named twice
        fresh = os.path.join(self.dir, "fresh.json")
        self.assert_refused_untouched([*TINY, f"--benchmark_out={fresh}", f"--checkpoint-out={fresh}"], "the same file")

    def test_no_output_overwrites_the_weights(self):
        weights = self.write("w.pt", state_dict_file(model_tensors(in_features=32, hidden=16, classes=10, blocks=3)))
        for flag in ("--benchmark_out", "--checkpoint-out", "--trace"):
            with self.subTest(flag=flag):
                self.assert_refused_untouched(["--device=cpu", f"--weights={weights}", f"{flag}={weights}"],
                                              f"{flag}: '{weights}' is the input of --weights")
        export = os.path.join(self.dir, "export")
        os.mkdir(export)
        inside = os.path.join(export, "w.pt")
        os.link(weights, inside)
        self.assert_refused_untouched(["--device=cpu", f"--weights={inside}", f"--export-workload={export}"],
                                      f"--export-workload: '{export}' holds the input of --weights")

    def test_an_output_in_a_missing_folder_or_onto_a_folder_is_refused_before_the_run(self):
        missing = os.path.join(self.dir, "no", "out.json")
        for flag in ("--benchmark_out", "--checkpoint-out", "--trace"):
            with self.subTest(flag=flag):
                self.assert_refused_untouched([*TINY, f"{flag}={missing}"], f"{flag}: '{missing}': its folder",
                                              "does not exist")
                self.assert_refused_untouched([*TINY, f"{flag}={self.dir}"], "is a folder, not a regular file")
                self.assert_refused_untouched([*TINY, f"{flag}="], f"{flag}: needs a")

    def test_the_temporary_of_each_writer_is_its_own(self):
        # --benchmark_out and --checkpoint-out side by side: both written, no temporary left
        out, checkpoint = os.path.join(self.dir, "out.json"), os.path.join(self.dir, "checkpoint.json")
        result = run(CONDBENCH, *TINY, f"--benchmark_out={out}", f"--checkpoint-out={checkpoint}")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ["checkpoint.json", "out.json"])


class FullDisk(Case):
    """A disk that fills during the run: a small tmpfs (mounted where this user may, as CI's root can;
    skipped with the reason elsewhere). A checkpoint that cannot be written never stops the run; a
    --benchmark_out that cannot be written says where the results are; neither leaves a temporary."""
    RUN = ["--device=cpu", "--strategy=fused", "--hidden=64", "--batch=1,2,4,8", "--scenario=exit:1,exit:2,exit:3,exit:4",
           "--benchmark_repetitions=2", "--benchmark_min_time=0.001"]  # a final JSON of about 150 KB

    def mount(self, kib):
        full = os.path.join(self.dir, f"full{kib}")
        os.mkdir(full)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", full],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            self.skipTest("cannot mount a small tmpfs here: " + (mounted.stderr.strip() or "mount refused"))
        self.mounts.append(full)
        return full

    def setUp(self):
        super().setUp()
        self.mounts = []

    def tearDown(self):
        for full in self.mounts:
            subprocess.run(["umount", full], capture_output=True)
        super().tearDown()

    def iterations(self, path):
        with open(path) as f:
            return len([b for b in json.load(f)["benchmarks"] if b["run_type"] == "iteration"])

    def errors(self, result):
        return [line for line in result.stderr.splitlines() if "warning" not in line]

    def test_a_checkpoint_that_fills_the_disk_stops_checkpointing_not_the_run(self):
        full = self.mount(160)  # the checkpoint and its next temporary stop fitting about halfway
        out, checkpoint = os.path.join(self.dir, "out.json"), os.path.join(full, "ck.json")
        result = run(CONDBENCH, *self.RUN, "--benchmark_out=" + out, "--checkpoint-out=" + checkpoint)
        self.assertEqual(result.returncode, 1, result.stderr)
        said = self.errors(result)
        self.assertEqual(len(said), 2, result.stderr)
        self.assertRegex(said[0], r"^condbench: --checkpoint-out: cannot write '.*ck\.json' \(No space left on device\); "
                                  r"it holds the first \d+ repetitions; no more checkpoints, the run goes on$")
        kept = self.iterations(checkpoint)
        self.assertIn(f"it holds the first {kept} of the run's {self.iterations(out)} repetitions, "
                      "--benchmark_out all of them", said[1])
        self.assertGreater(kept, 0)
        self.assertLess(kept, self.iterations(out))
        self.assertEqual(self.iterations(out), 2 * len({n for n in run(CONDBENCH, *self.RUN, "--benchmark_list_tests")
                                                        .stdout.split()}))
        self.assertEqual(os.listdir(full), ["ck.json"])  # no temporary left

    def test_a_checkpoint_that_never_fits_says_it_holds_nothing_of_the_run(self):
        full = self.mount(4)  # not even the first checkpoint fits
        out, checkpoint = os.path.join(self.dir, "out.json"), os.path.join(full, "ck.json")
        result = run(CONDBENCH, *self.RUN, "--benchmark_out=" + out, "--checkpoint-out=" + checkpoint)
        self.assertEqual(result.returncode, 1, result.stderr)
        said = self.errors(result)
        self.assertIn("it holds nothing of this run; no more checkpoints, the run goes on", said[0])
        self.assertIn("it holds nothing of this run, --benchmark_out all of them", said[1])
        self.assertEqual(os.listdir(full), [])
        self.assertGreater(self.iterations(out), 0)

    def test_a_result_file_that_cannot_be_written_says_where_the_results_are(self):
        full = self.mount(64)  # smaller than the result file
        out, checkpoint = os.path.join(full, "out.json"), os.path.join(self.dir, "ck.json")
        result = run(CONDBENCH, *self.RUN, "--benchmark_out=" + out, "--checkpoint-out=" + checkpoint)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(self.errors(result), [
            f"condbench: --benchmark_out: cannot write '{out}' (No space left on device): this run's results are "
            f"in the checkpoint '{checkpoint}'"])
        self.assertEqual(os.listdir(full), [])  # neither the target nor its temporary
        self.assertGreater(self.iterations(checkpoint), 0)
        lost = run(CONDBENCH, *self.RUN, "--benchmark_out=" + out)
        self.assertEqual(lost.returncode, 2, lost.stderr)
        self.assertEqual(self.errors(lost), [
            f"condbench: --benchmark_out: cannot write '{out}' (No space left on device): this run's results are lost"])
        self.assertEqual(os.listdir(full), [])

    def test_a_trace_that_cannot_be_written_fails_the_run(self):
        if not os.path.exists(os.path.join(os.path.dirname(CONDBENCH), "condbench-trace.so")):
            self.skipTest("this build has no NVTX trace library")
        full = self.mount(4)  # one page: the trace's thousands of ranges do not fit
        trace, out = os.path.join(full, "t.json"), os.path.join(self.dir, "out.json")
        result = run(CONDBENCH, *self.RUN, "--nvtx=iter", "--trace=" + trace, "--benchmark_out=" + out)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(self.errors(result), [f"condbench-trace: cannot write {os.path.abspath(trace)} "
                                               "(No space left on device)"])
        self.assertEqual(os.listdir(full), [])
        self.assertGreater(self.iterations(out), 0)  # the results themselves are written

    def test_an_export_that_fills_the_disk_is_one_line_and_leaves_nothing(self):
        full = self.mount(64)  # the weights fit, the pool does not
        export = os.path.join(full, "w")
        result = run(CONDBENCH, "--device=cpu", "--strategy=fused", "--hidden=64", "--scenario=exit:1",
                     "--export-workload=" + export)
        line = self.assert_bad_input(result, "--export-workload: cannot write '" + export + "/", "(No space left on device)")
        self.assertNotIn(".tmp", line)  # the file as it was to be named
        self.assertEqual(os.listdir(full), [])  # the folder it created, and the model's built beside it, gone whole
        # into a folder that was there: the folder stays, as it was
        os.mkdir(export)
        result = run(CONDBENCH, "--device=cpu", "--strategy=fused", "--hidden=64", "--scenario=exit:1",
                     "--export-workload=" + export)
        self.assert_bad_input(result, "--export-workload: cannot write '" + export + "/", "(No space left on device)")
        self.assertEqual((os.listdir(full), os.listdir(export)), (["w"], []))


class ModelFileCompile(Case):
    """A model file's compile is the user's code running: bounded by --compile-timeout, and ended
    whole (its process group) at the limit or when condbench is stopped — never left behind."""

    def slow_model_file(self, kind="slow", then="time.sleep(300)"):
        # Loading it runs its code: a child of its own, then `then` (a long sleep), the marker in
        # both command lines so the test can look for what is left.
        marker = f"condbench-{kind}-" + os.path.basename(self.dir)
        path = os.path.join(self.dir, marker + ".py")
        with open(path, "w") as f:
            f.write("import subprocess, sys, time\n"
                    f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'])\n"
                    f"{then}\n")
        return path, marker

    def left(self, marker):
        ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
        return [line for line in ps.splitlines() if marker in line and "ps -eo" not in line]

    def wait_gone(self, marker, seconds=10):
        deadline = time.monotonic() + seconds
        while self.left(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        return self.left(marker)

    def test_a_compile_past_its_limit_is_ended_whole(self):
        path, marker = self.slow_model_file()
        for tool, extra in ((CONDBENCH, ()), (INFER, ("--thresholds=0.5",))):
            with self.subTest(tool=os.path.basename(tool)):
                started = time.monotonic()
                result = run(tool, f"--model-file={path}", "--device=cpu", "--compile-timeout=3", *extra)
                self.assertLess(time.monotonic() - started, 30)
                self.assert_bad_input(result, f"--model-file: {path}: model_file.py compile took longer than "
                                              "--compile-timeout=3 s and was stopped")
                self.assertEqual(self.wait_gone(marker), [])

    def test_a_long_compile_says_so_every_30_s_on_any_stderr(self):
        # stderr a pipe, not a terminal: the progress line all the same, then the limit
        path, marker = self.slow_model_file()
        result = run(CONDBENCH, f"--model-file={path}", "--device=cpu", "--compile-timeout=33")
        lines = result.stderr.strip().splitlines()
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(lines[0], f"condbench: compiling {path}: 30 s so far (--compile-timeout=33)")
        self.assertIn("model_file.py compile took longer than --compile-timeout=33 s and was stopped", lines[-1])
        self.assertEqual(len(lines), 2, result.stderr)
        self.assertEqual(self.wait_gone(marker), [])

    def test_a_stopped_condbench_ends_its_compile(self):
        path, marker = self.slow_model_file()
        # SIGKILL leaves condbench no time to end the compile: the compile ends itself (its parent-death
        # signal) and what the user's code started with it
        for tool, sig in [(tool, sig) for tool in (CONDBENCH, INFER)
                          for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)] + [(CONDBENCH, signal.SIGKILL)]:
            with self.subTest(tool=os.path.basename(tool), signal=sig.name):
                child = subprocess.Popen([tool, f"--model-file={path}", "--device=cpu"] +
                                         (["--thresholds=0.5"] if tool == INFER else []),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                deadline = time.monotonic() + 30
                while not [line for line in self.left(marker) if "time.sleep" in line] and time.monotonic() < deadline:
                    # until the user's own child runs
                    time.sleep(0.2)
                child.send_signal(sig)
                child.communicate(timeout=30)
                self.assertEqual(child.returncode, -sig)  # it died of the signal, as without a compile
                self.assertEqual(self.wait_gone(marker), [])

    def test_what_the_users_code_left_running_ends_with_its_compile(self):
        # The file starts a child (which holds the compile's stdout and stderr) and then fails: the
        # refusal comes back at once, not at the limit, and the child is gone with it.
        path, marker = self.slow_model_file("left", then="raise SystemExit(3)")
        started = time.monotonic()
        result = run(CONDBENCH, f"--model-file={path}", "--device=cpu", "--compile-timeout=120")
        self.assertLess(time.monotonic() - started, 60)
        self.assert_bad_input(result, "does not load (SystemExit: 3)")
        self.assertEqual(self.wait_gone(marker, seconds=5), [])

    def test_the_limit_is_whole_seconds_and_only_with_a_model_file(self):
        for given in ("0", "-1", "1.5", "x", "86401"):
            with self.subTest(given=given):
                self.assert_bad_input(run(CONDBENCH, "--model-file=x.py", f"--compile-timeout={given}"),
                                      "--compile-timeout")
        self.assert_bad_input(run(CONDBENCH, "--compile-timeout=5"), "--compile-timeout: only with --model-file")
        self.assert_bad_input(run(INFER, "--compile-timeout=5", "--thresholds=0.5"),
                              "--compile-timeout: only with --model-file")


class Values(Case):
    def test_weights_beyond_float32_are_refused_with_the_file_and_the_key(self):
        tensors = [(n, list(v), s) for n, v, s in SMALL_MODEL]
        tensors[0][1][1] = 1e300  # finite in float64, inf in float32
        path = self.write("w64.pt", state_dict_file64(tensors))
        self.assert_bad_input(run(INFER, "--device=cpu", f"--weights={path}", "--thresholds=0.5"),
                              f"weights '{path}': 'backbone.0.weight' holds 1e+300, beyond float32's range")
        data = archive(pickle_of(p_tensor("0", 4, 0, [2, 2], [2, 1], "DoubleStorage")),
                       {"0": struct.pack("<4d", 1, -1e300, 0.5, 2)})
        result = run(INFER, "--device=cpu", "--weights=" + self.write("w.pt", state_dict_file(SMALL_MODEL)),
                     "--input=" + self.write("x64.pt", data), "--thresholds=0.5")
        self.assert_bad_input(result, f"input '{self.dir}/x64.pt': the tensor holds -1e+300, beyond float32's range")

    def test_an_inference_that_overflows_says_so_with_the_strategy(self):
        # float32 weights of 3e38: finite, but the first Linear overflows to inf and the logits to NaN
        result = run(INFER, "--device=cpu", "--weights=" + self.write("w.pt", state_dict_file(
            model_tensors(value=3e38))), "--batch=2", "--thresholds=0.5")
        line = self.assert_bad_input(result, "the logits are not finite: the weights or the input overflow float32")
        self.assertRegex(line, r"^condbench-infer: cpu/\w+/\w+: ")
        self.assertEqual(result.stdout, "")


class KeysAndLists(Case):
    def transformer_keys(self, *names):
        sizes = {"layers.0.self_attn.in_proj_weight": [12, 4], "layers.0.linear1.weight": [8, 4],
                 "final.proj.weight": [2, 4], "layers.2.self_attn.in_proj_weight": [12, 4]}
        return state_dict_file([(n, [0.5] * math.prod(sizes[n]), sizes[n]) for n in names])

    def test_transformer_key_errors_name_a_transformer_key_and_the_file(self):
        path = self.write("t.pt", self.transformer_keys("layers.0.linear1.weight", "final.proj.weight"))
        self.assert_bad_input(run(INFER, "--device=cpu", f"--weights={path}", "--thresholds=0.5"),
                              f"weights '{path}': missing key 'layers.0.self_attn.in_proj_weight'")
        path = self.write("gap.pt", self.transformer_keys("layers.0.self_attn.in_proj_weight", "layers.0.linear1.weight",
                                                          "final.proj.weight", "layers.2.self_attn.in_proj_weight"))
        self.assert_bad_input(run(INFER, "--device=cpu", f"--weights={path}", "--thresholds=0.5"),
                              "missing key 'layers.1.self_attn.in_proj_weight' before "
                              "'layers.2.self_attn.in_proj_weight'")

    def test_a_value_given_twice_or_a_list_too_long_is_refused(self):
        self.assert_bad_input(run(CONDBENCH, "--device=cpu", "--batch=1,1", "--list"), "--batch: 1 is given twice")
        self.assert_bad_input(run(CONDBENCH, "--device=cpu", "--batch=1,01", "--list"), "--batch: 1 is given twice")
        self.assert_bad_input(run(CONDBENCH, "--device=cpu", "--strategy=fused,fused", "--list"),
                              "--strategy: 'fused' is given twice")
        many = ",".join(str(b) for b in range(1, 5001))
        self.assert_bad_input(run(CONDBENCH, "--device=cpu", f"--batch={many}", "--benchmark_list_tests"),
                              "--batch: more than 256 values")
        # a flag nobody knows, in every mode: not ignored by --list or --export-workload
        for mode in ("--list", "--export-workload=" + os.path.join(tempfile.gettempdir(), "never-written"),
                     "--benchmark_list_tests"):
            with self.subTest(mode=mode):
                self.assert_bad_input(run(CONDBENCH, "--device=cpu", "--stratgy=fused", mode),
                                      "--stratgy=fused: not a flag of condbench or of Google Benchmark")

    def test_google_benchmarks_flags_get_one_line(self):
        for args, fragment in [(["--benchmark_repetitions=99999999999"], "--benchmark_repetitions"),
                               (["--benchmark_repetitions=0"], "--benchmark_repetitions: 0 is out of range"),
                               (["--benchmark_min_time="], "--benchmark_min_time: needs a value"),
                               (["--benchmark_min_time=10x"], "an iteration count"),
                               (["--benchmark_min_time=-1"], "not a number of seconds"),
                               (["--benchmark_format=xml"], "--benchmark_format: 'xml' is not one of"),
                               (["--benchmark_format=JSON"], "--benchmark_format: 'JSON' is not one of"),
                               (["--benchmark_time_unit=MS"], "--benchmark_time_unit: 'MS' is not one of"),
                               (["--answer-budget=5", "--benchmark_format=json"], "--answer-budget: the display"),
                               (["--answer-budget=5", "--benchmark_enable_random_interleaving=false"],
                                "--answer-budget: its rounds are interleaved"),
                               (["--answer-budget=5", "--benchmark_report_aggregates_only=true"],
                                "--answer-budget: the verdicts need every repetition"),
                               (["--benchmark_enable_random_interleaving=maybe"], "is not one of"),
                               (["--benchmark_filter="], "--benchmark_filter: needs a value"),
                               (["--benchmark_repetitions"], "needs a value"),
                               # a flag given twice, Google Benchmark's too: not the last one winning
                               (["--benchmark_repetitions=3"], "--benchmark_repetitions: given twice"),
                               (["--benchmark_filter=a", "--benchmark_filter=b"], "--benchmark_filter: given twice"),
                               (["--benchmark_out_format=json", "--benchmark_out_format=csv"],
                                "--benchmark_out_format: given twice"),
                               (["--v=abc"], "--v: 'abc' is not an integer")]:
            with self.subTest(args=args):
                self.assert_bad_input(run(CONDBENCH, *TINY, *args), fragment)
        # a newline in a value is shown, not the end of the line
        self.assert_bad_input(run(CONDBENCH, "--device=cpu", "--strategy=fu\nsed", "--list"),
                              "--strategy: unknown strategy 'fu\\nsed' (known: ")
        # 1.8's "0.01s" is read as 1.7's 0.01
        out = os.path.join(self.dir, "out.json")
        result = run(CONDBENCH, *TINY[:-2], "--benchmark_min_time=0.01s", "--benchmark_repetitions=2",
                     f"--benchmark_out={out}")
        self.assertEqual(result.returncode, 0, result.stderr)


def limited(*command, gib=6, timeout=120):
    """run() under `ulimit -v` (`gib` GiB of address space): an allocation past it fails at once, as on
    a machine that size, instead of taking the test machine's memory. Not under AddressSanitizer (the
    asan test preset sets ASAN_OPTIONS), which reserves terabytes of shadow address space at start:
    there the refusal before anything is made is checked without the cap."""
    if "ASAN_OPTIONS" in os.environ:
        return run(*command, timeout=timeout)
    return run("/bin/sh", "-c", f'ulimit -v {gib << 20} && exec "$@"', "limited", *command, timeout=timeout)


class Bounded(Case):
    """#59: no flag or file of a few megabytes asks for more memory than the budget (one line naming
    the product and the budget, exit 2, before anything is made), hangs, or is dropped in silence."""

    def test_a_decoders_cache_over_the_budget_is_refused_before_it_is_made(self):
        # condbench-infer asked for 69 GB: 21 s and exit 1 "out of memory" under an 8 GB cap
        for tool, args in [(INFER, ["--model=decoder", "--batch=65536", "--thresholds=0.5,0.5,0.5"]),
                           (CONDBENCH, ["--model=decoder", "--batch=65536", "--benchmark_list_tests"])]:
            with self.subTest(tool=os.path.basename(tool)):
                line = self.assert_bad_input(limited(tool, "--device=cpu", *args),
                                             "over condbench's memory budget of 8 GiB (docs/input.md): the key/value "
                                             "cache 65536 rows x 8 layers x 64 context x 256 d_model x 4 floats = 128 GiB")
                self.assertIn("--batch", line)

    def test_small_files_asking_for_a_huge_cache_are_refused(self):
        # 0.8 MB of files: a state_dict of context 16384 and a prompt of 65536 rows
        weights = self.write("w.pt", state_dict_file(decoder_tensors(vocab=4, d_model=4, layers=3, ffn=1,
                                                                     context=16384)))
        prompt = self.write("p.pt", token_file(65536, 1))
        self.assertLess(os.path.getsize(weights) + os.path.getsize(prompt), 1 << 20)
        self.assert_bad_input(limited(INFER, "--device=cpu", "--model=decoder", f"--weights={weights}",
                                      f"--prompt={prompt}", "--decoder=heads=1", "--generate=1", "--thresholds=0.5"),
                              "--prompt of 65536 rows", "over condbench's memory budget", "the key/value cache")

    def test_a_families_working_memory_over_the_budget_is_refused(self):
        for tool, extra in [(INFER, ["--thresholds=0.5"]), (CONDBENCH, ["--benchmark_list_tests"])]:
            with self.subTest(tool=os.path.basename(tool)):
                self.assert_bad_input(limited(tool, "--device=cpu", "--hidden=65536", "--blocks=1", "--batch=65536",
                                              *extra),
                                      "over condbench's memory budget", "the activations 65536 rows x 65536 hidden")

    def test_a_fifo_given_as_a_file_is_refused_not_waited_on(self):
        fifo = os.path.join(self.dir, "fifo.pt")
        os.mkfifo(fifo)
        for args in (["--weights=" + fifo, "--thresholds=0.5"], ["--input=" + fifo, "--thresholds=0.5,0.5,0.5"],
                     ["--model=decoder", "--weights=" + fifo, "--thresholds=0.5,0.5,0.5"],
                     ["--model=decoder", "--prompt=" + fifo, "--thresholds=0.5,0.5,0.5"]):
            with self.subTest(args=args):
                self.assert_bad_input(run(INFER, "--device=cpu", *args, timeout=60),
                                      f"'{fifo}': not a regular file (a FIFO)")

    def test_flags_that_would_be_dropped_are_refused(self):
        weights = self.write("w.pt", state_dict_file(decoder_tensors()))
        prompt = self.write("p.pt", token_file(2, 3))
        out = os.path.join(self.dir, "out.json")
        for tool, args, said in [
                (INFER, ["--model=decoder", f"--weights={weights}", "--decoder=vocab=9,heads=1"],
                 "--decoder: vocab: the weights give it (--weights); drop it"),
                (INFER, ["--model=decoder", f"--prompt={prompt}", "--decoder=prompt=5"],
                 "--decoder: prompt: --prompt gives the prompt's tokens per row; drop one"),
                (INFER, ["--model=decoder", "--generate=3", "--decoder=generate=5"],
                 "--decoder: generate: given by --generate too; drop one"),
                (INFER, ["--model=decoder", "--decoder=vocab=16,vocab=32"], "--decoder: vocab is given twice"),
                (INFER, ["--model=decoder", f"--weights={weights}", "--vocab=9", "--heads=1"],
                 "--vocab: the weights give it (--weights); drop it"),
                (INFER, ["--model=decoder", "--vocab=16", "--decoder=vocab=32"],
                 "--vocab: --decoder=vocab gives it too; drop one"),
                (CONDBENCH, ["--export-workload=" + os.path.join(self.dir, "x"), f"--benchmark_out={out}"],
                 "--export-workload: runs nothing, so --benchmark_out would write nothing"),
                (CONDBENCH, ["--export-workload=" + os.path.join(self.dir, "x"), f"--checkpoint-out={out}"],
                 "--export-workload: runs nothing, so --checkpoint-out would write nothing"),
                (CONDBENCH, ["--export-workload=" + os.path.join(self.dir, "x"), f"--trace={out}"],
                 "--export-workload: runs nothing, so --trace would write nothing")]:
            with self.subTest(args=args):
                self.assert_bad_input(run(tool, "--device=cpu", *args, "--thresholds=0.5,0.5,0.5")
                                      if tool == INFER else run(tool, "--device=cpu", "--hidden=16", *args), said)
        self.assertEqual(sorted(os.listdir(self.dir)), ["p.pt", "w.pt"])

    def test_messages_name_the_real_cause(self):
        # a layer missing between others is that layer's key, not "exit_every must be below layers"
        gap = self.write("gap.pt", state_dict_file(decoder_tensors(layers=4, skip={"layers.1.attn.qkv.weight"})))
        self.assert_bad_input(run(INFER, "--device=cpu", "--model=decoder", f"--weights={gap}", "--decoder=heads=1",
                                  "--thresholds=0.5"), "missing key 'layers.1.attn.qkv.weight'")
        # a decoder's weights given to condbench --weights: said so, not read as a transformer's
        whole = self.write("d.pt", state_dict_file(decoder_tensors()))
        for tool, extra in [(CONDBENCH, ["--benchmark_list_tests"]), (INFER, ["--thresholds=0.5"])]:
            with self.subTest(tool=os.path.basename(tool)):
                self.assert_bad_input(run(tool, "--device=cpu", f"--weights={whole}", *extra),
                                      "holds a decoder's state_dict", "--model=decoder")
        # every decoder strategy selected skipped: why, and how to make it run
        line = self.assert_bad_input(run(INFER, "--device=cpu", "--model=decoder", "--strategy=cond", "--batch=1",
                                         "--thresholds=0.5,0.5,0.5",
                                         env={"CONDBENCH_AOTI_DIR": os.path.join(self.dir, "no-packages")}),
                                     "no decoder strategy selected can run this: cpu/aoti/cond: no AOTInductor package")
        self.assertIn("python -m condbench.aoti", line)


class ModelFileAnswer(Case):
    """#59 item 3: the compiled folder comes back on condbench's own descriptor, checked against the
    file given; what the user's code prints on stdout never passes for it. A stand-in for
    model_file.py (CONDBENCH_PYTHON) answers as told, so nothing is compiled."""

    def stand_in(self, script):
        path = self.write("python", b"#!/bin/sh\n" + script.encode())
        os.chmod(path, 0o755)
        return {"CONDBENCH_PYTHON": path}

    def test_a_folder_printed_on_stdout_is_not_the_answer(self):
        model = self.write("m.py", b"")
        env = self.stand_in(f"echo {self.dir}/elsewhere\nexit 0\n")
        self.assert_bad_input(run(INFER, "--device=cpu", f"--model-file={model}", "--thresholds=0.5", env=env),
                              "model_file.py compile ended without naming a folder on descriptor 3")

    def test_a_folder_of_another_file_is_refused(self):
        model = self.write("m.py", b"")
        folder = os.path.join(self.dir, "0123456789abcdef-cpu")
        os.makedirs(folder)
        manifest = json.loads(next(manifest_seeds()))  # one as model_file.py writes it
        manifest["source"] = "/elsewhere/m.py"
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        env = self.stand_in(f"echo {folder} >&3\n")
        self.assert_bad_input(run(INFER, "--device=cpu", f"--model-file={model}", "--thresholds=0.5", env=env),
                              f"model_file.py answered {folder}, which was not compiled from it (its manifest names "
                              "/elsewhere/m.py)")


if __name__ == "__main__":
    main()
