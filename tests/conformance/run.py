#!/usr/bin/python3
"""ONNX backend node-test conformance for plait: every test through plait-compile + plait-run.

  /usr/bin/python3 tests/conformance/run.py --build BUILD [--filter REGEX] [-j N]
      [--expect-min-pass N] [--known-failures FILE] [--summary FILE] [--markdown FILE]

Tests come from Debian's libonnx-testdata (node, pytorch-converted, pytorch-operator): each test
folder holds model.onnx and test_data_set_*/{input,output}_*.pb. input_i.pb binds the i-th graph
input that is not an initializer; output_i.pb is compared with the i-th graph output, which
plait-run writes as <output name with [^A-Za-z0-9_.-] replaced by '_'>.npy.

A test is
  passed       every output of every data set matches (shape, dtype, values within tolerance);
  unsupported  plait-compile exits 1 with "unsupported" in its message;
  failed       anything else (a compile or run error, a crash, a timeout, a wrong result).
When plait-compile says an input "must be a compile-time constant; bind it with --const-input
NAME=FILE", the runner binds NAME to the data set's .pb and compiles again (a few times at most).

Prints one line per failure, then the closing line `N passed, M failed, K unsupported`.
Exits 1 when a test fails that is not listed in the known-failures file, or when fewer than
--expect-min-pass tests pass. A per-op summary is written as JSON (default BUILD/conformance_summary.json).
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA_ROOT = "/usr/share/libonnx-testdata/data"
DEFAULT_SUITES = ("node", "pytorch-converted", "pytorch-operator")
MAX_CONST_RETRIES = 8

# Comparison tolerances by element type: (rtol, atol). Integers, bools and strings are exact.
# float32 as the brief fixes it; float64 tight enough to notice a float32 computation
# (float32 rounding alone is ~6e-8 relative); float16/bfloat16 about one unit in the last place.
TOLERANCES = {
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float64): (1e-9, 1e-12),
    np.dtype(np.float16): (1e-3, 1e-4),
    "bfloat16": (1e-2, 1e-3),
}

# plait-compile's hint: "... must be a compile-time constant; bind it with --const-input NAME=FILE"
# (or "bind them with --const-input A=FILE --const-input B=FILE").
CONST_INPUT_RE = re.compile(r"--const-input\s+'?([^=\s']+)=FILE")
UNSUPPORTED_RE = re.compile(r"unsupported", re.IGNORECASE)

# Ops that mostly move shapes around; a multi-node test is attributed to another op if it has one.
PLUMBING_OPS = {"Constant", "Identity", "Shape", "Unsqueeze", "Squeeze", "Reshape", "Cast",
                "Concat", "Transpose", "Flatten", "Gather", "ConstantOfShape"}


class TestCase:
    def __init__(self, suite, path):
        self.suite = suite
        self.path = path
        self.name = os.path.basename(path)
        self.op = None        # the op the test is about (for the per-op summary)
        self.ops = []         # every op type in the graph
        self.status = None    # "passed" | "failed" | "unsupported"
        self.reason = ""
        self.known = None     # reason from the known-failures file, if listed
        self.seconds = 0.0


# --------------------------------------------------------------------------- discovery

def op_label(node):
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return "%s.%s" % (node.domain, node.op_type)


def attribute_op(test, model, sibling_ops):
    """Picks the op a test is about: the single node, the op the test is named after, or the op of
    the non-expanded sibling for '*_expanded' tests (which run the op's function body)."""
    labels = [op_label(n) for n in model.graph.node]
    test.ops = sorted(set(labels))
    if test.name.endswith("_expanded"):
        base = sibling_ops.get(test.name[:-len("_expanded")])
        if base:
            return base + " (expanded)"
    if len(set(labels)) == 1:
        return labels[0]
    squashed = test.name[len("test_"):].replace("_", "").lower()
    named = [l for l in set(labels) if l.split(".")[-1].lower() in squashed]
    if named:
        return max(named, key=lambda l: (len(l), l))
    for l in labels:
        if l not in PLUMBING_OPS:
            return l
    return labels[0] if labels else "(empty graph)"


def discover(data_root, suites, name_filter):
    tests = []
    for suite in suites:
        for path in sorted(glob.glob(os.path.join(data_root, suite, "*"))):
            if os.path.exists(os.path.join(path, "model.onnx")):
                tests.append(TestCase(suite, path))
    models = {t.name: onnx.load(os.path.join(t.path, "model.onnx"), load_external_data=False)
              for t in tests}
    single = {t.name: op_label(models[t.name].graph.node[0]) for t in tests
              if len({op_label(n) for n in models[t.name].graph.node}) == 1}
    for t in tests:
        t.op = attribute_op(t, models[t.name], single)
    if name_filter:
        rx = re.compile(name_filter)
        tests = [t for t in tests if rx.search(t.name) or rx.search(t.suite + "/" + t.name)]
    return tests


def load_known_failures(path):
    known = {}
    if not path or not os.path.exists(path):
        return known
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, reason = line.partition(" ")
                known[name] = reason.strip() or "(no reason given)"
    return known


# --------------------------------------------------------------------------- tensors

def graph_io(model):
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    return inputs, list(model.graph.output)


def elem_type(value_info):
    t = value_info.type
    return t.tensor_type.elem_type if t.WhichOneof("value") == "tensor_type" else None


def read_pb_tensor(path):
    """The ndarray in a TensorProto .pb (bfloat16 comes back as its uint16 bits)."""
    return numpy_helper.to_array(onnx.load_tensor(path))


def input_file_for(path, value_info, workdir, index):
    """plait-run takes .npy or .pb. Tensors NumPy can hold are handed over as .npy (the well-trodden
    path); bfloat16, strings and non-tensor values go as .pb."""
    et = elem_type(value_info)
    if et is None or et == onnx.TensorProto.STRING:
        return path
    tensor = onnx.load_tensor(path)
    if et == onnx.TensorProto.BFLOAT16:
        if tensor.data_type == onnx.TensorProto.BFLOAT16:
            return path
        # onnx 1.12's test data stores bfloat16 inputs as UINT16 tensors of the raw bits;
        # hand plait the value the graph declares: a BFLOAT16 tensor with the same bits.
        bits = numpy_helper.to_array(tensor).astype("<u2")
        fixed = onnx.TensorProto(data_type=onnx.TensorProto.BFLOAT16, dims=bits.shape,
                                 name=tensor.name, raw_data=bits.tobytes())
        pb = os.path.join(workdir, "input_%d.pb" % index)
        with open(pb, "wb") as f:
            f.write(fixed.SerializeToString())
        return pb
    array = numpy_helper.to_array(tensor)
    if array.dtype == object:
        return path
    npy = os.path.join(workdir, "input_%d.npy" % index)
    np.save(npy, array)
    return npy


def bf16_bits_to_f32(a):
    return (a.astype(np.uint32) << 16).view(np.float32)


def compare(name, got, want, out_elem_type):
    """Returns None when `got` matches `want`, else a short reason."""
    if got.shape != want.shape:
        return "output '%s': shape %s, expected %s" % (name, list(got.shape), list(want.shape))
    if out_elem_type == onnx.TensorProto.BFLOAT16:
        # numpy has no bfloat16: the test data holds the raw bits as uint16, and plait-run
        # writes bfloat16 outputs widened to float32 (raw uint16 bits are accepted too).
        if got.dtype in (np.dtype(np.uint16), np.dtype("V2")):
            got = bf16_bits_to_f32(got.view(np.uint16))
        elif got.dtype != np.dtype(np.float32):
            return "output '%s': dtype %s, expected bfloat16 (as float32 or uint16 bits)" % (
                name, got.dtype)
        want = bf16_bits_to_f32(want.view(np.uint16))
        rtol, atol = TOLERANCES["bfloat16"]
    else:
        if got.dtype != want.dtype:
            return "output '%s': dtype %s, expected %s" % (name, got.dtype, want.dtype)
        if want.dtype not in TOLERANCES:
            if not np.array_equal(got, want):
                bad = int(np.sum(got != want)) if got.shape == want.shape else -1
                return "output '%s': %d of %d elements differ (exact compare)" % (
                    name, bad, want.size)
            return None
        rtol, atol = TOLERANCES[want.dtype]
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if not np.array_equal(nan_g, nan_w):
        return "output '%s': NaN at %d positions, expected %d (positions differ)" % (
            name, int(nan_g.sum()), int(nan_w.sum()))
    close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.where(nan_w, 0.0, np.abs(g - w))
        err = np.where(np.isinf(w) | np.isinf(g), np.where(g == w, 0.0, np.inf), err)
        rel = err / np.maximum(np.abs(w), np.finfo(np.float64).tiny)
    worst = int(np.argmax(np.where(close, -1.0, err)))
    return ("output '%s': %d of %d elements off, max abs err %.3g, max rel err %.3g "
            "(at %d: got %r, expected %r; rtol %g atol %g)" % (
                name, int((~close).sum()), close.size, float(np.max(err)), float(np.max(rel)),
                worst, g.flat[worst].item(), w.flat[worst].item(), rtol, atol))


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


# --------------------------------------------------------------------------- running

class Tool:
    """Runs plait-compile / plait-run under a per-test deadline, killing the process group."""

    def __init__(self, deadline):
        self.deadline = deadline

    def __call__(self, cmd):
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return None, "timed out"
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        try:
            out, _ = proc.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            return None, "timed out"
        return proc.returncode, out.decode("utf-8", "replace")


def one_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if not lines:
        return "(no message)"
    for l in lines:
        if re.search(r"error|unsupported", l, re.IGNORECASE):
            return l[:300]
    return lines[-1][:300]


def describe_exit(tool_name, rc, text):
    if rc is None:
        return "%s timed out" % tool_name
    if rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = "signal %d" % -rc
        return "%s crashed (%s): %s" % (tool_name, sig, one_line(text))
    return "%s exit %d: %s" % (tool_name, rc, one_line(text))


def const_input_request(text):
    """The graph inputs plait-compile asks to have bound as constants (in its order)."""
    if "compile-time constant" not in text:
        return []
    return list(dict.fromkeys(CONST_INPUT_RE.findall(text)))


def compile_model(tool, args, model_path, plan, const_bindings):
    cmd = [os.path.join(args.bin_dir, "plait-compile"), model_path, "-o", plan]
    for name, path in const_bindings.items():
        cmd += ["--const-input", "%s=%s" % (name, path)]
    cmd += args.compile_arg
    return tool(cmd)


def default_opset(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def upgraded_model_path(test, model, target, workdir):
    """--upgrade-opset: the model converted by onnx.version_converter when it is older."""
    path = os.path.join(test.path, "model.onnx")
    version = default_opset(model)
    if version is None or version >= target:
        return path
    from onnx import version_converter
    converted = version_converter.convert_version(model, target)
    # The converter can emit models that are invalid or mean something else; those are its
    # failures, not plait's (raised here, reported as unsupported).
    onnx.checker.check_model(converted, full_check=True)
    path = os.path.join(workdir, "model-opset%d.onnx" % target)
    onnx.save(converted, path)
    return path


def is_wrapped(value_info):
    """A graph input or output a plan cannot take or return as it is."""
    return value_info.type.WhichOneof("value") in ("sequence_type", "optional_type")


def read_proto(path, proto):
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return proto


class Adapter:
    """A plan takes and returns tensors, so a test whose graph inputs or outputs are sequences
    or optionals runs as a model that takes and returns their tensors. For an input: one graph
    input per tensor of this data set's value, gathered by SequenceConstruct (SequenceEmpty for
    an empty sequence) and wrapped by Optional (an empty optional: Optional with the declared
    type). For an output: OptionalGetElement of an optional that holds a value, then one
    SequenceAt per position of a sequence; an empty optional's output is OptionalHasElement,
    expected false. The model's own nodes are unchanged."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.inputs, self.in_files, self.first, self.outputs, self.out_files, self.last = (
            [], [], [], [], [], [])

    def write(self, name, tensor, prefix=""):
        t = onnx.TensorProto()
        t.CopyFrom(tensor)
        t.name = name
        path = os.path.join(self.workdir, "%s%s.pb" % (prefix, sanitize(name)))
        with open(path, "wb") as f:
            f.write(t.SerializeToString())
        return path

    def feed_tensor(self, name, tensor):
        self.inputs.append(helper.make_tensor_value_info(name, tensor.data_type,
                                                         list(tensor.dims)))
        self.in_files.append(self.write(name, tensor))

    def feed_sequence(self, name, seq, elem_type):
        if len(seq.tensor_values) == 0:
            self.first.append(helper.make_node("SequenceEmpty", [], [name], dtype=elem_type))
            return
        names = ["%s__%d" % (name, k) for k in range(len(seq.tensor_values))]
        for n, t in zip(names, seq.tensor_values):
            self.feed_tensor(n, t)
        self.first.append(helper.make_node("SequenceConstruct", names, [name]))

    def feed(self, vi, pb):
        kind = vi.type.WhichOneof("value")
        if kind == "sequence_type":
            self.feed_sequence(vi.name, read_proto(pb, onnx.SequenceProto()),
                               vi.type.sequence_type.elem_type.tensor_type.elem_type)
        elif kind == "optional_type":
            opt = read_proto(pb, onnx.OptionalProto())
            inner = vi.name + "__value"
            if opt.HasField("tensor_value"):
                self.feed_tensor(inner, opt.tensor_value)
            elif opt.HasField("sequence_value"):
                elem = vi.type.optional_type.elem_type.sequence_type.elem_type
                self.feed_sequence(inner, opt.sequence_value, elem.tensor_type.elem_type)
            else:
                self.first.append(helper.make_node(
                    "Optional", [], [vi.name], type=vi.type.optional_type.elem_type))
                return
            self.first.append(helper.make_node("Optional", [inner], [vi.name]))
        else:
            # The shape of this data set's tensor (the model may name its dimensions).
            t = onnx.load_tensor(pb)
            self.inputs.append(helper.make_tensor_value_info(vi.name, elem_type(vi),
                                                             list(t.dims)))
            self.in_files.append(pb)

    def expect_tensor(self, name, tensor):
        self.outputs.append(helper.make_tensor_value_info(name, tensor.data_type,
                                                          list(tensor.dims)))
        self.out_files.append(self.write(name, tensor, "expected_"))

    def expect_sequence(self, value, seq):
        for k, t in enumerate(seq.tensor_values):
            name, pos = "%s__%d" % (value, k), "%s__pos%d" % (value, k)
            self.last.append(helper.make_node(
                "Constant", [], [pos], value=numpy_helper.from_array(np.array(k, np.int64))))
            self.last.append(helper.make_node("SequenceAt", [value, pos], [name]))
            self.expect_tensor(name, t)

    def expect(self, vi, pb):
        kind = vi.type.WhichOneof("value")
        if kind == "sequence_type":
            self.expect_sequence(vi.name, read_proto(pb, onnx.SequenceProto()))
        elif kind == "optional_type":
            opt = read_proto(pb, onnx.OptionalProto())
            if not opt.HasField("tensor_value") and not opt.HasField("sequence_value"):
                has = vi.name + "__has"
                self.last.append(helper.make_node("OptionalHasElement", [vi.name], [has]))
                self.expect_tensor(has, numpy_helper.from_array(np.array(False)))
                return
            inner = vi.name + "__value"
            self.last.append(helper.make_node("OptionalGetElement", [vi.name], [inner]))
            if opt.HasField("tensor_value"):
                self.expect_tensor(inner, opt.tensor_value)
            else:
                self.expect_sequence(inner, opt.sequence_value)
        else:
            self.outputs.append(vi)
            self.out_files.append(pb)


def sequence_adapter(model, data_set, workdir):
    """The model adapted to take and return tensors (Adapter) for this data set. Returns (model
    path, input .pb files, expected output .pb files), or None when every graph input and
    output is a tensor."""
    inputs, outputs = graph_io(model)
    if not any(is_wrapped(v) for v in list(inputs) + list(outputs)):
        return None
    a = Adapter(workdir)
    for i, vi in enumerate(inputs):
        a.feed(vi, os.path.join(data_set, "input_%d.pb" % i))
    for i, vi in enumerate(outputs):
        a.expect(vi, os.path.join(data_set, "output_%d.pb" % i))
    adapted = onnx.ModelProto()
    adapted.CopyFrom(model)
    g = adapted.graph
    inits = {i.name for i in g.initializer}
    kept = [vi for vi in g.input if vi.name in inits]
    del g.input[:]
    g.input.extend(a.inputs + kept)
    del g.output[:]
    g.output.extend(a.outputs)
    graph_nodes = list(g.node)
    del g.node[:]
    g.node.extend(a.first + graph_nodes + a.last)
    path = os.path.join(workdir, "model-as-tensors.onnx")
    onnx.save(adapted, path)
    return path, a.in_files, a.out_files


def run_data_set(test, args, tool, model, data_set, workdir, compiled):
    """Compiles (binding constants as asked) and runs one data set. Returns (status, reason)."""
    inputs, outputs = graph_io(model)
    in_pbs = [os.path.join(data_set, "input_%d.pb" % i) for i in range(len(inputs))]
    out_pbs = [os.path.join(data_set, "output_%d.pb" % i) for i in range(len(outputs))]
    model_path = compiled.get("model_path") or os.path.join(test.path, "model.onnx")
    adapter = sequence_adapter(model, data_set, workdir)
    if adapter:
        # The adapted model depends on this data set's sequence lengths: compiled for it alone.
        model_path, in_pbs, out_pbs = adapter
        model = onnx.load(model_path)
        inputs, outputs = graph_io(model)
        compiled = {"model_path": model_path}
    by_name = {vi.name: pb for vi, pb in zip(inputs, in_pbs)}

    # A plan compiled without constant bindings serves every data set; one with bindings is
    # specific to the data set whose values it baked in.
    plan = compiled.get("plan")
    const_bindings = {}
    if plan is None or compiled.get("const_names"):
        plan = os.path.join(workdir, "model.plan")
        for _ in range(MAX_CONST_RETRIES):
            rc, text = compile_model(tool, args, model_path, plan, const_bindings)
            if rc == 0:
                break
            wanted = const_input_request(text) if rc == 1 else []
            new = [n for n in wanted if n in by_name and n not in const_bindings]
            if new:
                for n in new:
                    const_bindings[n] = by_name[n]
                continue
            if rc == 1 and UNSUPPORTED_RE.search(text):
                return "unsupported", one_line(text)
            strange = [n for n in wanted if n not in by_name]
            if strange:
                return "failed", "plait-compile asked to bind '%s', not a graph input: %s" % (
                    strange[0], one_line(text))
            return "failed", describe_exit("plait-compile", rc, text)
        else:
            return "failed", "plait-compile still wants constants after binding %s" % (
                ", ".join(const_bindings))
        compiled["plan"] = plan
        compiled["const_names"] = sorted(const_bindings)

    outdir = os.path.join(workdir, "out-" + os.path.basename(data_set))
    cmd = [os.path.join(args.bin_dir, "plait-run"), plan, "--output-dir", outdir]
    for i, (vi, pb) in enumerate(zip(inputs, in_pbs)):
        if vi.name in compiled["const_names"]:
            continue
        cmd += ["--input", "%s=%s" % (vi.name, input_file_for(pb, vi, workdir, i))]
    rc, text = tool(cmd)
    if rc != 0:
        return "failed", describe_exit("plait-run", rc, text)

    for i, vi in enumerate(outputs):
        if elem_type(vi) is None:
            return "failed", "output '%s' is not a tensor (%s), yet plait compiled the model" % (
                vi.name, vi.type.WhichOneof("value"))
        want = read_pb_tensor(out_pbs[i])
        path = os.path.join(outdir, sanitize(vi.name) + ".npy")
        if not os.path.exists(path):
            written = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
            return "failed", "output '%s': plait-run wrote no %s (it wrote: %s)" % (
                vi.name, os.path.basename(path), " ".join(written) or "nothing")
        try:
            got = np.load(path, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - any unreadable file is the runtime's failure
            return "failed", "output '%s': unreadable .npy (%s)" % (vi.name, e)
        why = compare(vi.name, got, want, elem_type(vi))
        if why:
            return "failed", why
    return "passed", ""


def run_test(test, args):
    start = time.monotonic()
    tool = Tool(start + args.timeout)
    workdir = tempfile.mkdtemp(prefix="plait-conf-%s-" % test.name)
    try:
        model = onnx.load(os.path.join(test.path, "model.onnx"))
        compiled = {}
        if args.upgrade_opset:
            try:
                compiled["model_path"] = upgraded_model_path(test, model, args.upgrade_opset,
                                                             workdir)
            except Exception as e:  # noqa: BLE001 - the converter's limits are not plait's
                test.status = "unsupported"
                test.reason = "onnx.version_converter cannot upgrade it: %s" % one_line(str(e))
                return test
        data_sets = sorted(glob.glob(os.path.join(test.path, "test_data_set_*")))
        if not data_sets:
            test.status, test.reason = "failed", "no test_data_set_* folder"
        for ds in data_sets:
            test.status, test.reason = run_data_set(test, args, tool, model, ds, workdir,
                                                    compiled)
            if test.status != "passed":
                if len(data_sets) > 1:
                    test.reason = "%s: %s" % (os.path.basename(ds), test.reason)
                break
    except Exception as e:  # noqa: BLE001 - a runner bug must not hide the other results
        test.status, test.reason = "failed", "runner error: %s: %s" % (type(e).__name__, e)
    finally:
        if args.keep_temp:
            dest = os.path.join(args.keep_temp, test.name)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.move(workdir, dest)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    test.seconds = time.monotonic() - start
    return test


# --------------------------------------------------------------------------- reporting

def summarize(tests):
    by_op = collections.OrderedDict()
    for t in sorted(tests, key=lambda t: t.op):
        row = by_op.setdefault(t.op, {"passed": 0, "failed": 0, "unsupported": 0, "tests": []})
        row[t.status] += 1
        row["tests"].append(t.name)
    totals = collections.Counter(t.status for t in tests)
    return {
        "totals": {k: totals.get(k, 0) for k in ("passed", "failed", "unsupported")},
        "known_failures": sorted(t.name for t in tests if t.status == "failed" and t.known),
        "by_op": by_op,
        "tests": {t.name: {"suite": t.suite, "op": t.op, "ops": t.ops, "status": t.status,
                           "reason": t.reason, "seconds": round(t.seconds, 3)}
                  for t in sorted(tests, key=lambda t: t.name)},
    }


def write_markdown(path, summary):
    with open(path, "w") as f:
        f.write("| op | passed | failed | unsupported |\n|---|---:|---:|---:|\n")
        for op, row in summary["by_op"].items():
            f.write("| %s | %d | %d | %d |\n" % (op, row["passed"], row["failed"],
                                                   row["unsupported"]))


def shown_path(path):
    path = os.path.abspath(path)
    return os.path.relpath(path, REPO) if path.startswith(REPO + os.sep) else path


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="build directory (tools in BUILD/bin)")
    parser.add_argument("--bin-dir", help="where plait-compile and plait-run are "
                                          "(default BUILD/bin)")
    parser.add_argument("--filter", help="regex on the test name (or suite/name)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per test")
    parser.add_argument("--data-root", default=DATA_ROOT)
    parser.add_argument("--suites", default=",".join(DEFAULT_SUITES),
                        help="comma-separated suite folders under --data-root")
    parser.add_argument("--expect-min-pass", type=int, default=0,
                        help="fail unless at least this many tests pass")
    parser.add_argument("--known-failures", default=os.path.join(HERE, "known_failures.txt"))
    parser.add_argument("--summary", help="per-op JSON summary "
                                          "(default BUILD/conformance_summary.json)")
    parser.add_argument("--markdown", help="also write the per-op table as Markdown here")
    parser.add_argument("--compile-arg", action="append", default=[],
                        help="extra argument for plait-compile (repeatable)")
    parser.add_argument("--upgrade-opset", type=int, metavar="N",
                        help="diagnostic: first convert models older than opset N with "
                             "onnx.version_converter (the CTest runs the models as shipped)")
    parser.add_argument("--keep-temp", help="keep each test's plan and outputs under this folder")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also list unsupported tests and progress")
    args = parser.parse_args()
    args.bin_dir = args.bin_dir or os.path.join(args.build, "bin")
    args.summary = args.summary or os.path.join(args.build, "conformance_summary.json")
    if args.keep_temp:
        os.makedirs(args.keep_temp, exist_ok=True)

    for tool_name in ("plait-compile", "plait-run"):
        if not os.access(os.path.join(args.bin_dir, tool_name), os.X_OK):
            print("error: %s not found in %s (build it first)" % (tool_name, args.bin_dir))
            return 2
    if not os.path.isdir(args.data_root):
        print("error: %s missing (apt-get install libonnx-testdata)" % args.data_root)
        return 2

    tests = discover(args.data_root, args.suites.split(","), args.filter)
    if not tests:
        print("error: no test matches --filter %r" % args.filter)
        return 2
    known = load_known_failures(args.known_failures)
    for t in tests:
        t.known = known.get(t.name)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_test, t, args) for t in tests]
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            t = fut.result()
            if args.verbose:
                print("[%d/%d] %s %s %.1fs" % (n, len(tests), t.status, t.name, t.seconds),
                      file=sys.stderr, flush=True)

    tests.sort(key=lambda t: t.name)
    unexpected = 0
    for t in tests:
        if t.status == "failed":
            if t.known:
                print("FAIL (known) %s [%s]: %s  -- known: %s" % (t.name, t.op, t.reason, t.known))
            else:
                unexpected += 1
                print("FAIL %s [%s]: %s" % (t.name, t.op, t.reason))
        elif t.status == "passed" and t.known:
            print("note: %s passes now; remove it from %s" % (
                t.name, shown_path(args.known_failures)))
        elif t.status == "unsupported" and args.verbose:
            print("unsupported %s [%s]: %s" % (t.name, t.op, t.reason))

    summary = summarize(tests)
    os.makedirs(os.path.dirname(os.path.abspath(args.summary)), exist_ok=True)
    with open(args.summary, "w") as f:
        json.dump(summary, f, indent=1)
    if args.markdown:
        write_markdown(args.markdown, summary)

    totals = summary["totals"]
    status = 0
    if unexpected:
        status = 1
    if totals["passed"] < args.expect_min_pass:
        print("error: %d passed, expected at least %d" % (totals["passed"], args.expect_min_pass))
        status = 1
    known_failed = len(summary["known_failures"])
    if known_failed:
        print("(%d of the failures are listed in %s)" % (known_failed,
                                                         shown_path(args.known_failures)))
    print("%d passed, %d failed, %d unsupported" % (
        totals["passed"], totals["failed"], totals["unsupported"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
