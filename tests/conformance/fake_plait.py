#!/usr/bin/python3
"""A stand-in for plait-compile / plait-run, used only by selftest.py to exercise run.py.

`fake_plait.py compile MODEL -o PLAN [--const-input NAME=FILE]...` accepts the ops that
tests/e2e/onnx_numpy_ref.py knows (else exit 1, "unsupported op"), asks for Reshape shapes
that come from graph inputs to be bound with --const-input (exit 1, plait's message), and writes
a JSON "plan". `fake_plait.py run PLAN [--input NAME=FILE]... --output-dir DIR` evaluates it
with NumPy and writes one .npy per output. PLAIT_FAKE_BREAK=OP perturbs float outputs of
graphs containing OP, so the self-test can see a wrong result reported.
"""
import argparse
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
import onnx_numpy_ref  # noqa: E402

SUPPORTED = {"Constant", "Add", "Sub", "Mul", "Div", "Pow", "Equal", "Relu", "Erf", "Sqrt",
             "Identity", "Gemm", "MatMul", "Transpose", "Softmax", "ReduceMean", "Shape",
             "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape", "Cast", "Range",
             "ConstantOfShape", "Where", "Neg", "SoftmaxCrossEntropyLoss"}


def load_value(path):
    if path.endswith(".npy"):
        return np.load(path, allow_pickle=False)
    return numpy_helper.to_array(onnx.load_tensor(path))


def compile_main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("-o", dest="out", required=True)
    p.add_argument("--const-input", action="append", default=[])
    a = p.parse_args(argv)
    model = onnx.load(a.model)
    consts = dict(b.split("=", 1) for b in a.const_input)
    graph_inputs = {i.name for i in model.graph.input}
    for node in model.graph.node:
        if node.op_type not in SUPPORTED:
            print("error: %s: node '%s': unsupported op '%s'" % (a.model, node.name, node.op_type))
            return 1
        if node.op_type == "Reshape" and node.input[1] in graph_inputs \
                and node.input[1] not in consts:
            print("error: %s: node '%s': input '%s' must be a compile-time constant; bind it "
                  "with --const-input %s=FILE" % (a.model, node.name, node.input[1],
                                                  node.input[1]))
            return 1
    with open(a.out, "w") as f:
        json.dump({"model": os.path.abspath(a.model), "consts": consts}, f)
    return 0


def run_main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("plan")
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--output-dir", required=True)
    a = p.parse_args(argv)
    with open(a.plan) as f:
        plan = json.load(f)
    model = onnx.load(plan["model"])
    feeds = {n: load_value(v) for n, v in plan["consts"].items()}
    for binding in a.input:
        name, path = binding.split("=", 1)
        feeds[name] = load_value(path)
    outputs = onnx_numpy_ref.run_model(model, feeds)
    broken = os.environ.get("PLAIT_FAKE_BREAK")
    os.makedirs(a.output_dir, exist_ok=True)
    for vi, value in zip(model.graph.output, outputs):
        value = np.asarray(value)
        if broken and any(n.op_type == broken for n in model.graph.node) \
                and value.dtype.kind == "f":
            value = value + value.dtype.type(0.01)
        np.save(os.path.join(a.output_dir, re.sub(r"[^A-Za-z0-9_.-]", "_", vi.name) + ".npy"),
                value)
    return 0


if __name__ == "__main__":
    mode = sys.argv[1]
    sys.exit({"compile": compile_main, "run": run_main}[mode](sys.argv[2:]))
