"""Regenerates every sample model and its reference inputs/outputs.

Usage: /usr/bin/python3 samples/export_all.py [--out DIR] [NAME...]   (default: this folder)
       /usr/bin/python3 samples/export_all.py --check   (re-export to a temp dir, compare)
Each sample lands in DIR/<name>/: <name>.onnx, inputs/<input>.npy, expected/<output>.npy.
"""
import argparse
import glob
import os
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cnn  # noqa: E402
import gpt  # noqa: E402
import mlp  # noqa: E402

SAMPLES = {"mlp": mlp, "cnn": cnn, "gpt": gpt}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=HERE, help="output root (default: samples/)")
    parser.add_argument("names", nargs="*", help="samples to export (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="re-export into a temporary folder and compare with the committed "
                             "files (graph and arrays must be identical)")
    args = parser.parse_args()
    names = args.names or list(SAMPLES)
    for name in names:
        if name not in SAMPLES:
            sys.exit("unknown sample %r (have: %s)" % (name, ", ".join(SAMPLES)))
    if not args.check:
        for name in names:
            SAMPLES[name].export(args.out)
        return 0
    with tempfile.TemporaryDirectory(prefix="plait-samples-") as tmp:
        problems = []
        for name in names:
            SAMPLES[name].export(tmp)
            problems += compare_sample(os.path.join(HERE, name), os.path.join(tmp, name), name)
    for p in problems:
        print("MISMATCH " + p)
    print("samples %s" % ("differ from a fresh export" if problems else "reproduce exactly"))
    return 1 if problems else 0


def same_values(a, b):
    """Integer arrays (the inputs) exactly; float arrays (the expected logits and losses)
    within 1e-5 relative: PyTorch's CPU kernels round differently on different processors
    (regenerated on an AMD EPYC, the committed logits differ by up to 4.5e-8 in their last
    bits). The graph, weights included, is compared byte for byte."""
    if not np.issubdtype(a.dtype, np.floating):
        return np.array_equal(a, b)
    return np.allclose(a, b, rtol=1e-5, atol=1e-6)


def compare_sample(committed, fresh, name):
    problems = []
    a, b = onnx.load(os.path.join(committed, name + ".onnx")), onnx.load(
        os.path.join(fresh, name + ".onnx"))
    # Producer strings may differ between torch builds; the graph itself must not.
    if a.graph.SerializeToString() != b.graph.SerializeToString():
        problems.append("%s: graph differs" % name)
    def files(root):
        return sorted(os.path.relpath(os.path.join(d, f), root)
                      for d, _, fs in os.walk(root) for f in fs if not f.endswith(".onnx"))
    if files(committed) != files(fresh):
        problems.append("%s: files %s vs %s" % (name, files(committed), files(fresh)))
        return problems
    for f in files(fresh):
        a_path, b_path = os.path.join(committed, f), os.path.join(fresh, f)
        if f.endswith(".npy"):
            x, y = {"": np.load(a_path)}, {"": np.load(b_path)}
        elif f.endswith(".npz"):
            x, y = dict(np.load(a_path)), dict(np.load(b_path))
        else:
            with open(a_path, "rb") as fa, open(b_path, "rb") as fb:
                if fa.read() != fb.read():
                    problems.append("%s/%s differs" % (name, f))
            continue
        if sorted(x) != sorted(y) or any(
                x[k].dtype != y[k].dtype or x[k].shape != y[k].shape
                or not same_values(x[k], y[k]) for k in x):
            problems.append("%s/%s differs" % (name, f))
    return problems


if __name__ == "__main__":
    sys.exit(main())
