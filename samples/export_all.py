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


def compare_sample(committed, fresh, name):
    problems = []
    a, b = onnx.load(os.path.join(committed, name + ".onnx")), onnx.load(
        os.path.join(fresh, name + ".onnx"))
    # Producer strings may differ between torch builds; the graph itself must not.
    if a.graph.SerializeToString() != b.graph.SerializeToString():
        problems.append("%s: graph differs" % name)
    for sub in ("inputs", "expected"):
        fresh_files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(fresh, sub, "*")))
        committed_files = sorted(os.path.basename(p)
                                 for p in glob.glob(os.path.join(committed, sub, "*")))
        if fresh_files != committed_files:
            problems.append("%s/%s: files %s vs %s" % (name, sub, committed_files, fresh_files))
            continue
        for f in fresh_files:
            x, y = np.load(os.path.join(committed, sub, f)), np.load(os.path.join(fresh, sub, f))
            if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
                problems.append("%s/%s/%s differs" % (name, sub, f))
    return problems


if __name__ == "__main__":
    sys.exit(main())
