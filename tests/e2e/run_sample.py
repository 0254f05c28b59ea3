#!/usr/bin/python3
"""End-to-end forward parity for one sample: plait-compile + plait-run vs PyTorch's outputs.

  /usr/bin/python3 tests/e2e/run_sample.py --build BUILD --model mlp
  /usr/bin/python3 tests/e2e/run_sample.py --reference --model gpt   # NumPy ONNX evaluator, no plait

Reads samples/<model>/<model>.onnx, inputs/<input>.npy and expected/<output>.npy, checks the model
with onnx.checker, compiles it, runs it with every input bound, and compares each graph output
(plait-run writes <sanitized output name>.npy) within --rtol/--atol, printing max abs/rel errors.
Exit 0 when every output matches, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def output_file_name(tensor_name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tensor_name) + ".npy"


def run_tool(cmd, timeout):
    print("+ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout
    text = p.stdout.decode("utf-8", "replace")
    if text.strip():
        print(text.rstrip())
    return p.returncode, text


def plait_outputs(args, model_path, inputs, output_names, workdir):
    bindir = os.path.join(args.build, "bin")
    for tool in ("plait-compile", "plait-run"):
        if not os.access(os.path.join(bindir, tool), os.X_OK):
            sys.exit("FAIL %s: %s not found in %s (build it first)" % (args.model, tool, bindir))
    plan = os.path.join(workdir, args.model + ".plan")
    rc, text = run_tool([os.path.join(bindir, "plait-compile"), model_path, "-o", plan],
                        args.timeout)
    if rc != 0:
        sys.exit("FAIL %s: plait-compile %s" % (args.model, "exit %s" % rc if rc is not None
                                                  else text))
    outdir = os.path.join(workdir, "out")
    cmd = [os.path.join(bindir, "plait-run"), plan, "--output-dir", outdir]
    for name, path in inputs:
        cmd += ["--input", "%s=%s" % (name, path)]
    rc, text = run_tool(cmd, args.timeout)
    if rc != 0:
        sys.exit("FAIL %s: plait-run %s" % (args.model, "exit %s" % rc if rc is not None
                                              else text))
    results = {}
    for name in output_names:
        path = os.path.join(outdir, output_file_name(name))
        results[name] = np.load(path) if os.path.exists(path) else None
    return results


def reference_outputs(model, inputs, output_names):
    sys.path.insert(0, HERE)
    import onnx_numpy_ref
    feeds = {name: np.load(path) for name, path in inputs}
    return dict(zip(output_names, onnx_numpy_ref.run_model(model, feeds)))


def compare(name, got, want, rtol, atol):
    if got is None:
        return "missing output file %s" % output_file_name(name)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return "NaN positions differ"
    abs_err = np.abs(g - w)
    rel_err = abs_err / np.maximum(np.abs(w), np.finfo(np.float64).tiny)
    max_abs = float(np.nanmax(abs_err)) if abs_err.size else 0.0
    max_rel = float(np.nanmax(rel_err)) if rel_err.size else 0.0
    ok = bool(np.all(np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)))
    print("  %-10s %-14s max abs err %.3e  max rel err %.3e  %s" % (
        name, "x".join(map(str, want.shape)) or "scalar", max_abs, max_rel,
        "ok" if ok else "MISMATCH"))
    return None if ok else "max abs err %.3e, max rel err %.3e (rtol %g, atol %g)" % (
        max_abs, max_rel, rtol, atol)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", help="build directory holding bin/plait-compile, bin/plait-run")
    parser.add_argument("--model", required=True, help="sample name (samples/<name>/)")
    parser.add_argument("--samples", default=os.path.join(REPO, "samples"))
    parser.add_argument("--reference", action="store_true",
                        help="evaluate with the NumPy ONNX interpreter instead of plait")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--timeout", type=int, default=100, help="seconds per tool invocation")
    parser.add_argument("--keep", help="keep the plan and outputs in this directory")
    args = parser.parse_args()
    if not args.reference and not args.build:
        parser.error("--build is required unless --reference")

    sample_dir = os.path.join(args.samples, args.model)
    model_path = os.path.join(sample_dir, args.model + ".onnx")
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)

    inits = {i.name for i in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in inits]
    output_names = [o.name for o in model.graph.output]
    inputs = [(n, os.path.join(sample_dir, "inputs", n + ".npy")) for n in input_names]
    expected = {n: np.load(os.path.join(sample_dir, "expected", n + ".npy")) for n in output_names}

    if args.reference:
        got = reference_outputs(model, inputs, output_names)
    elif args.keep:
        os.makedirs(args.keep, exist_ok=True)
        got = plait_outputs(args, model_path, inputs, output_names, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="plait-e2e-") as workdir:
            got = plait_outputs(args, model_path, inputs, output_names, workdir)

    failures = []
    for name in output_names:
        why = compare(name, got[name], expected[name], args.rtol, args.atol)
        if why:
            failures.append("%s: %s" % (name, why))
    for f in failures:
        print("FAIL %s: %s" % (args.model, f))
    if not failures:
        print("PASS %s (%d outputs)" % (args.model, len(output_names)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
